//===- RegisterRules.cpp - every derivative rule ----------------*- C++ -*-===//
//
// One entry point that registers the rules of all supported upstream
// dialects.
//
//===----------------------------------------------------------------------===//

#include "ad/Rules/Rules.h"

void mlir::ad::registerReverseRules(DialectRegistry &registry) {
  registerArithReverseRules(registry);
  registerFuncReverseRules(registry);
  registerLinalgReverseRules(registry);
  registerMathReverseRules(registry);
  registerSCFReverseRules(registry);
  registerSCFTangentRules(registry);
  registerLinalgTangentRules(registry);
}
