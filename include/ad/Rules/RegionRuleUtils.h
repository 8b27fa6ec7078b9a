//===- RegionRuleUtils.h - helpers for rules of region ops ------*- C++ -*-===//
//
// Public API for writing reverse rules of ops with regions (loops,
// branches): a region reads values from above, whose cotangents the rule
// carries through the adjoint region op it emits. The scf rules are
// written with these helpers.
//
//===----------------------------------------------------------------------===//

#ifndef AD_RULES_REGIONRULEUTILS_H
#define AD_RULES_REGIONRULEUTILS_H

#include "ad/IR/ADInterfaces.h"

namespace mlir::ad {

/// The active values defined outside `regions` and read inside them, in a
/// deterministic order (first use first). Their cotangents are what an
/// adjoint region op carries besides those of the op's own results.
SmallVector<Value> activeValuesFromAbove(MutableArrayRef<Region> regions,
                                         const DifferentiationEmitter &emitter);

/// The cotangent accumulated so far for each of `values`, or a zero of its
/// type: the initial values an adjoint region op carries.
SmallVector<Value> currentCotangents(ArrayRef<Value> values,
                                     ReverseEmitter &emitter);

/// The positions of the values of differentiable type among `values` (the
/// results or block arguments that carry a cotangent).
SmallVector<unsigned> differentiablePositions(ValueRange values);

/// A new op of `original`'s name, attributes and properties, with
/// `operands`, result `types` and as many regions as `original`, all empty,
/// at the builder's insertion point: how a rule rebuilds a region op with
/// more results (tangents) or other operands.
Operation *createEmptyLike(OpBuilder &builder, Operation *original,
                           ValueRange operands, TypeRange types);

} // namespace mlir::ad

#endif // AD_RULES_REGIONRULEUTILS_H
