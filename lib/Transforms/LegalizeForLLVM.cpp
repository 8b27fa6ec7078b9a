//===- LegalizeForLLVM.cpp - workarounds for upstream lowerings -*- C++ -*-===//
//
// ad-legalize-for-bufferization and ad-legalize-for-llvm: rewrite what the
// upstream lowerings of LLVM 22 cannot handle (a crash, or IR the LLVM
// dialect cannot read back) into equivalent IR they can.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADLEGALIZEFORBUFFERIZATIONPASS
#define GEN_PASS_DEF_ADLEGALIZEFORLLVMPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;

namespace {
/// Whether some reassociation group of `expand` has two dynamic sizes.
static bool hasGroupWithTwoDynamicSizes(tensor::ExpandShapeOp expand) {
  RankedTensorType type = expand.getResultType();
  return llvm::any_of(expand.getReassociationIndices(),
                      [&](const ReassociationIndices &group) {
                        return llvm::count_if(group, [&](int64_t dim) {
                                 return type.isDynamicDim(dim);
                               }) > 1;
                      });
}

struct ADLegalizeForBufferizationPass
    : mlir::ad::impl::ADLegalizeForBufferizationPassBase<
          ADLegalizeForBufferizationPass> {
  void runOnOperation() override {
    SmallVector<tensor::ExpandShapeOp> expands;
    getOperation()->walk([&](tensor::ExpandShapeOp expand) {
      if (hasGroupWithTwoDynamicSizes(expand))
        expands.push_back(expand);
    });
    for (tensor::ExpandShapeOp expand : expands) {
      OpBuilder b(expand);
      Location loc = expand.getLoc();
      SmallVector<Value> sizes;
      for (OpFoldResult size : expand.getMixedOutputShape())
        sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, size));
      Value shape = tensor::FromElementsOp::create(b, loc, sizes);
      Value reshaped = tensor::ReshapeOp::create(
          b, loc, expand.getResultType(), expand.getSrc(), shape);
      expand.replaceAllUsesWith(reshaped);
      expand.erase();
    }
  }
};

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
