/*===-- ad-c/Runtime.h - C API of the MLIR-AD JIT runtime ---------*- C -*-===*\
|*                                                                            *|
|* Parse a module holding `ad` ops, build an entry point (a call, gradient,   *|
|* value and gradient or vector-Jacobian product of one of its functions),    *|
|* JIT-compile it at -O3 and call it on scalars and buffers.                  *|
|*                                                                            *|
|* Objects are opaque handles; each Create/Parse/Get that returns a handle    *|
|* is paired with a Destroy, in any order: a program keeps what it needs of   *|
|* its runtime, an entry point what it needs of its program. Failing calls    *|
|* return a null handle and, when `error` is not NULL, store an error the     *|
|* caller destroys.                                                           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef AD_C_RUNTIME_H
#define AD_C_RUNTIME_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DEFINE_AD_C_API_STRUCT(name)                                           \
  typedef struct name {                                                        \
    void *ptr;                                                                 \
  } name
DEFINE_AD_C_API_STRUCT(MlirADRuntime);
DEFINE_AD_C_API_STRUCT(MlirADProgram);
DEFINE_AD_C_API_STRUCT(MlirADEntryPoint);
DEFINE_AD_C_API_STRUCT(MlirADResults);
DEFINE_AD_C_API_STRUCT(MlirADError);
#undef DEFINE_AD_C_API_STRUCT

/// What went wrong: MLIR diagnostics (parse, verification, differentiation,
/// lowering), an argument of the wrong type or number, or a wrong value
/// (shape, function name, differentiated position).
typedef enum MlirADErrorKind {
  MlirADErrorCompile = 0,
  MlirADErrorType = 1,
  MlirADErrorValue = 2,
} MlirADErrorKind;

typedef enum MlirADElementKind {
  MlirADElementF16 = 0,
  MlirADElementBF16,
  MlirADElementF32,
  MlirADElementF64,
  MlirADElementI1,
  MlirADElementI8,
  MlirADElementI16,
  MlirADElementI32,
  MlirADElementI64,
  MlirADElementIndex,
} MlirADElementKind;

/// What an entry point computes from a function f (see ad.grad & co).
typedef enum MlirADEntryKind {
  /// f's results.
  MlirADEntryCall = 0,
  /// One gradient per differentiated argument (f has one float result).
  MlirADEntryGrad,
  /// f's result, then the gradients.
  MlirADEntryValueAndGrad,
  /// Takes f's arguments and one cotangent per float result of f; returns
  /// the gradients.
  MlirADEntryVjp,
  /// Takes f's arguments and one tangent per differentiated argument;
  /// returns f's results, then one tangent per float result of f.
  MlirADEntryJvp,
  /// Takes f's arguments and one tangent per differentiated argument;
  /// returns the Hessian-vector products (f has one float result).
  MlirADEntryHvp,
} MlirADEntryKind;

/// An argument or a result. `rank` < 0 is a scalar held in `scalar` (f16 and
/// bf16 as bits, i1 as 0/1 in i8). Otherwise `data` points to the first
/// element of a buffer with `sizes` (and, for results, `strides` in
/// elements); argument buffers are borrowed and must be contiguous in
/// row-major order (`strides` is ignored).
typedef struct MlirADValue {
  MlirADElementKind element;
  int64_t rank;
  union {
    double f64;
    float f32;
    uint16_t bits16;
    int64_t i64;
    int32_t i32;
    int16_t i16;
    int8_t i8;
  } scalar;
  void *data;
  const int64_t *sizes;
  const int64_t *strides;
} MlirADValue;

/// Runtime with its own MLIRContext and cache of compiled entry points.
MLIR_CAPI_EXPORTED MlirADRuntime mlirADRuntimeCreate(void);
/// Destroys the handle; programs still alive keep the context they need.
MLIR_CAPI_EXPORTED void mlirADRuntimeDestroy(MlirADRuntime runtime);
/// Number of entry points compiled so far (cache misses).
MLIR_CAPI_EXPORTED intptr_t
mlirADRuntimeGetNumCompilations(MlirADRuntime runtime);

/// Parses and verifies `source`; `name` names the buffer in locations.
MLIR_CAPI_EXPORTED MlirADProgram mlirADRuntimeParse(MlirADRuntime runtime,
                                                    MlirStringRef source,
                                                    MlirStringRef name,
                                                    MlirADError *error);
/// Copies `module` (from any context) into the runtime.
MLIR_CAPI_EXPORTED MlirADProgram mlirADRuntimeFromModule(MlirADRuntime runtime,
                                                         MlirModule module,
                                                         MlirADError *error);
/// Destroys the handle; entry points built from it stay valid.
MLIR_CAPI_EXPORTED void mlirADProgramDestroy(MlirADProgram program);
MLIR_CAPI_EXPORTED intptr_t mlirADProgramGetNumFunctions(MlirADProgram program);
/// The name of function `pos`; valid while the program lives.
MLIR_CAPI_EXPORTED MlirStringRef
mlirADProgramGetFunctionName(MlirADProgram program, intptr_t pos);

/// Builds (or takes from the cache) an entry point; `wrt` lists the
/// differentiated argument positions (all float ones when `numWrt` is 0).
MLIR_CAPI_EXPORTED MlirADEntryPoint mlirADProgramGetEntryPoint(
    MlirADProgram program, MlirADEntryKind kind, MlirStringRef function,
    const int64_t *wrt, intptr_t numWrt, MlirADError *error);
/// Destroys the handle (the compiled code stays cached in its runtime).
MLIR_CAPI_EXPORTED void mlirADEntryPointDestroy(MlirADEntryPoint entry);
MLIR_CAPI_EXPORTED intptr_t mlirADEntryPointGetNumInputs(MlirADEntryPoint entry);
MLIR_CAPI_EXPORTED intptr_t
mlirADEntryPointGetNumResults(MlirADEntryPoint entry);

/// Calls the entry point. Arguments are checked against its signature.
MLIR_CAPI_EXPORTED MlirADResults mlirADEntryPointCall(MlirADEntryPoint entry,
                                                      const MlirADValue *args,
                                                      intptr_t numArgs,
                                                      MlirADError *error);
MLIR_CAPI_EXPORTED intptr_t mlirADResultsGetNum(MlirADResults results);
/// Result `pos`; its sizes/strides live as long as `results`.
MLIR_CAPI_EXPORTED MlirADValue mlirADResultsGet(MlirADResults results,
                                                intptr_t pos);
/// Hands the buffer of result `pos` to the caller, who releases it with
/// free(); NULL for scalars or a buffer already taken.
MLIR_CAPI_EXPORTED void *mlirADResultsTakeBuffer(MlirADResults results,
                                                 intptr_t pos);
/// Frees the results and every buffer not taken.
MLIR_CAPI_EXPORTED void mlirADResultsDestroy(MlirADResults results);

MLIR_CAPI_EXPORTED MlirADErrorKind mlirADErrorGetKind(MlirADError error);
/// The message, with every MLIR diagnostic and its location.
MLIR_CAPI_EXPORTED MlirStringRef mlirADErrorGetMessage(MlirADError error);
/// Frees the error and its message.
MLIR_CAPI_EXPORTED void mlirADErrorDestroy(MlirADError error);

#ifdef __cplusplus
}
#endif

#endif /* AD_C_RUNTIME_H */
