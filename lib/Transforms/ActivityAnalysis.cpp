//===- ActivityAnalysis.cpp - which values carry derivatives ----*- C++ -*-===//
//
// Two worklist propagations over use-def chains: forward from the
// differentiated arguments, backward from the returned values. A use inside
// a nested region counts as a use by the op of the function body that holds
// the region, so region ops are as active as anything they contain.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/ActivityAnalysis.h"
#include "ad/IR/ADInterfaces.h"

#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::ad;

/// The op of `body` that is or contains `op`.
static Operation *ancestorIn(Block *body, Operation *op) {
  return body->findAncestorOpInBlock(*op);
}

ActivityAnalysis::ActivityAnalysis(func::FuncOp function,
                                   ArrayRef<int64_t> wrt) {
  propagateVaried(function, wrt);
  propagateUseful(function);
}

void ActivityAnalysis::propagateVaried(func::FuncOp function,
                                       ArrayRef<int64_t> wrt) {
  Block *body = &function.getBody().front();
  SmallVector<Value> worklist;
  for (int64_t position : wrt)
    worklist.push_back(function.getArgument(position));
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!varied.insert(value).second)
      continue;
    for (Operation *user : value.getUsers()) {
      Operation *op = ancestorIn(body, user);
      if (!op)
        continue;
      for (Value result : op->getResults())
        if (!varied.contains(result))
          worklist.push_back(result);
    }
  }
}

void ActivityAnalysis::propagateUseful(func::FuncOp function) {
  Block *body = &function.getBody().front();
  SmallVector<Value> worklist;
  for (Value returned : body->getTerminator()->getOperands())
    if (isDifferentiableType(returned.getType()))
      worklist.push_back(returned);
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!useful.insert(value).second)
      continue;
    Operation *def = value.getDefiningOp();
    if (!def)
      continue;
    for (Value operand : def->getOperands())
      worklist.push_back(operand);
    // Values a nested region reads from above are operands in all but name.
    llvm::SetVector<Value> capturedValues;
    for (Region &region : def->getRegions())
      getUsedValuesDefinedAbove(region, capturedValues);
    for (Value captured : capturedValues)
      worklist.push_back(captured);
  }
}

bool ActivityAnalysis::isActive(Value value) const {
  return varied.contains(value) && useful.contains(value) &&
         isDifferentiableType(value.getType());
}

bool ActivityAnalysis::isActive(Operation *op) const {
  return llvm::any_of(op->getResults(),
                      [&](Value result) { return isActive(result); });
}
