//===- LegalizeForLLVM.cpp - the ad-legalize-for-llvm pass ------*- C++ -*-===//
//
// Prepares arith for the upstream LLVM conversion where that conversion
// produces IR the LLVM dialect cannot read back.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADLEGALIZEFORLLVMPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;

namespace {
struct ADLegalizeForLLVMPass
    : mlir::ad::impl::ADLegalizeForLLVMPassBase<ADLegalizeForLLVMPass> {
  void runOnOperation() override {
    getOperation()->walk([](Operation *op) {
      if (isa<arith::ExtFOp, arith::TruncFOp>(op))
        op->removeAttr("fastmath");
    });
  }
};
} // namespace
