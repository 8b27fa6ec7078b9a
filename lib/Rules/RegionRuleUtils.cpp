//===- RegionRuleUtils.cpp - helpers for rules of region ops ----*- C++ -*-===//
//
// Implements the helpers of ad/Rules/RegionRuleUtils.h.
//
//===----------------------------------------------------------------------===//

#include "ad/Rules/RegionRuleUtils.h"

#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::ad;

SmallVector<Value>
mlir::ad::activeValuesFromAbove(MutableArrayRef<Region> regions,
                                const DifferentiationEmitter &emitter) {
  llvm::SetVector<Value> used;
  getUsedValuesDefinedAbove(regions, used);
  SmallVector<Value> active;
  for (Value value : used)
    if (emitter.isActive(value))
      active.push_back(value);
  return active;
}

SmallVector<Value> mlir::ad::currentCotangents(ArrayRef<Value> values,
                                               ReverseEmitter &emitter) {
  SmallVector<Value> cotangents;
  for (Value value : values) {
    Value cotangent = emitter.lookupCotangent(value);
    cotangents.push_back(cotangent ? cotangent : emitter.getCotangent(value));
  }
  return cotangents;
}

Operation *mlir::ad::createEmptyLike(OpBuilder &builder, Operation *original,
                                     ValueRange operands, TypeRange types) {
  OperationState state(original->getLoc(), original->getName(), operands,
                       types,
                       original->getDiscardableAttrDictionary().getValue());
  state.propertiesAttr = original->getPropertiesAsAttribute();
  for (unsigned i = 0; i < original->getNumRegions(); ++i)
    state.addRegion();
  return builder.create(state);
}

SmallVector<unsigned> mlir::ad::differentiablePositions(ValueRange values) {
  SmallVector<unsigned> positions;
  for (auto [index, value] : llvm::enumerate(values))
    if (isDifferentiableType(value.getType()))
      positions.push_back(index);
  return positions;
}
