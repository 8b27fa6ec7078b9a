//===- RegisterRules.cpp - every derivative rule ----------------*- C++ -*-===//
//
// One entry point that registers the rules of all supported upstream
// dialects.
//
//===----------------------------------------------------------------------===//

#include "ad/Rules/Rules.h"
#include "ad/IR/ADDialect.h"
#include "ad/Rules/ElementwiseRule.h"

#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::ad::registerReverseRules(DialectRegistry &registry) {
  registerArithReverseRules(registry);
  registerFuncReverseRules(registry);
  registerLinalgReverseRules(registry);
  registerTensorRules(registry);
  registerMathReverseRules(registry);
  registerSCFReverseRules(registry);
  // Activity analysis stops at ad.stop_gradient; where a rule still meets
  // one (inside a linalg.generic body, whose ops are all differentiated),
  // its derivative is zero.
  registry.addExtension(+[](MLIRContext *context, ADDialect *) {
    attachZeroDerivativeRules<StopGradientOp>(context);
  });
  registerSCFTangentRules(registry);
  registerLinalgTangentRules(registry);
  registerMemRefTangentRules(registry);
  // The derivative generator proves that a tensor kept per loop iteration
  // has the same sizes in every iteration with upstream's value bounds,
  // which need these ops' models.
  affine::registerValueBoundsOpInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  linalg::registerValueBoundsOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerValueBoundsOpInterfaceExternalModels(registry);
}
