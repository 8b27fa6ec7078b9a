/*===-- ad-c/Dialects.h - C API of the ad dialect and its passes --*- C -*-===*\
|*                                                                            *|
|* Registers the `ad` dialect, its passes and pipelines and the reverse rules *|
|* of upstream ops (external models of ReverseRuleOpInterface) with the       *|
|* upstream MLIR C API objects.                                               *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef AD_C_DIALECTS_H
#define AD_C_DIALECTS_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The `ad` dialect: mlirGetDialectHandle__ad__().
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(AD, ad);

/// Registers the ad passes (`ad-generate-derivatives`, ...) and the named
/// pipelines `ad-differentiate` and `ad-lower-to-llvm` with the global pass
/// registry, so textual pipelines can name them. Idempotent.
MLIR_CAPI_EXPORTED void mlirADRegisterPasses(void);

/// Adds the derivative rules of arith, math, func, scf, tensor and linalg
/// ops to `registry`.
MLIR_CAPI_EXPORTED void mlirADRegisterReverseRules(MlirDialectRegistry registry);

/// Adds everything a module for MLIR-AD may use: every upstream dialect and
/// extension, the LLVM IR translations, the `ad` dialect and the rules.
MLIR_CAPI_EXPORTED void
mlirADRegisterAllDialectsAndRules(MlirDialectRegistry registry);

/// Appends `ad-differentiate` (derivative generation, closure lowering) to
/// `passManager`, which must run on builtin.module.
MLIR_CAPI_EXPORTED void
mlirADAddDifferentiatePipeline(MlirOpPassManager passManager);

/// Appends `ad-lower-to-llvm` (differentiation, bufferization, lowering to
/// the LLVM dialect) to `passManager`, which must run on builtin.module.
MLIR_CAPI_EXPORTED void
mlirADAddLowerToLLVMPipeline(MlirOpPassManager passManager);

#ifdef __cplusplus
}
#endif

#endif /* AD_C_DIALECTS_H */
