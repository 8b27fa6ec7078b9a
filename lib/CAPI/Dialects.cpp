//===- Dialects.cpp - C API of the ad dialect, passes and rules -----------===//

#include "ad-c/Dialects.h"

#include "ad/IR/ADDialect.h"
#include "ad/Rules/Rules.h"
#include "ad/Runtime/Runtime.h"
#include "ad/Transforms/Passes.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Registration.h"

#include <mutex>

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(AD, ad, mlir::ad::ADDialect)

void mlirADRegisterPasses(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::ad::registerADPasses();
    mlir::ad::registerADPipelines();
  });
}

void mlirADRegisterReverseRules(MlirDialectRegistry registry) {
  mlir::ad::registerReverseRules(*unwrap(registry));
}

void mlirADRegisterAllDialectsAndRules(MlirDialectRegistry registry) {
  mlir::ad::runtime::registerRuntimeDialects(*unwrap(registry));
}

void mlirADAddDifferentiatePipeline(MlirOpPassManager passManager) {
  mlir::ad::buildDifferentiatePipeline(*unwrap(passManager));
}

void mlirADAddLowerToLLVMPipeline(MlirOpPassManager passManager) {
  mlir::ad::buildLowerToLLVMPipeline(*unwrap(passManager));
}
