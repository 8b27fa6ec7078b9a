//===- TangentRuleUtils.cpp - helpers for tangent rules ---------*- C++ -*-===//
//
// Implements the forward-mode helpers declared in ad/Rules/ElementwiseRule.h.
//
//===----------------------------------------------------------------------===//

#include "ad/Rules/ElementwiseRule.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::ad;

LogicalResult mlir::ad::emitLinearTangent(Operation *op,
                                          TangentEmitter &emitter) {
  assert(op->getNumRegions() == 0 && "a linear tangent clones no regions");
  IRMapping operands;
  for (Value operand : op->getOperands())
    operands.map(operand, hasTangentType(operand.getType())
                              ? emitter.getTangent(operand)
                              : emitter.lookup(operand));
  Operation *copy = emitter.getBuilder().clone(*op, operands);
  for (auto [result, tangent] :
       llvm::zip(op->getResults(), copy->getResults()))
    if (emitter.isActive(result))
      emitter.setTangent(result, tangent);
  return success();
}
