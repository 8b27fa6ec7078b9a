//===- DSPasses.h - passes and pipelines of the ds dialect ------*- C++ -*-===//
//
// convert-ds-to-arith, its patterns, and the pipeline ds-lower-to-llvm that
// puts it between MLIR-AD's differentiation and lowering.
//
//===----------------------------------------------------------------------===//

#ifndef DS_DSPASSES_H
#define DS_DSPASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace ds {

#define GEN_PASS_DECL
#include "ds/DSPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "ds/DSPasses.h.inc"

/// Adds the rewrites of ds ops into arith and math (see
/// convert-ds-to-arith) to `patterns`.
void populateDSToArithPatterns(mlir::RewritePatternSet &patterns);

/// Adds MLIR-AD's ad-differentiate, then convert-ds-to-arith, then
/// MLIR-AD's ad-lower-to-llvm: a module with ad and ds ops to the LLVM
/// dialect.
void buildDSLowerToLLVMPipeline(mlir::OpPassManager &pm);

/// Registers ds-lower-to-llvm as a named pipeline.
void registerDSPipelines();

} // namespace ds

#endif // DS_DSPASSES_H
