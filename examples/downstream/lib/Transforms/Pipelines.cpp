//===- Pipelines.cpp - ds-lower-to-llvm -------------------------*- C++ -*-===//
//
// The downstream's pipeline reuses MLIR-AD's: differentiate while the ds ops
// (and their rules) are there, lower them, then lower everything to LLVM.
//
//===----------------------------------------------------------------------===//

#include "ds/DSPasses.h"

#include "ad/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void ds::buildDSLowerToLLVMPipeline(OpPassManager &pm) {
  ad::buildDifferentiatePipeline(pm);
  pm.addPass(createConvertDSToArithPass());
  ad::buildLowerToLLVMPipeline(pm);
}

void ds::registerDSPipelines() {
  PassPipelineRegistration<>(
      "ds-lower-to-llvm",
      "Differentiate, lower ds ops to arith/math, then lower to LLVM",
      buildDSLowerToLLVMPipeline);
}
