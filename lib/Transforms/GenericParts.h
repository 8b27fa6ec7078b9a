//===- GenericParts.h - generics computing part of another ------*- C++ -*-===//
//
// A linalg.generic that computes some of another generic's outputs: the
// body ops those outputs need, cloned, and their yields. ad-fuse-elementwise
// splits a generic whose outputs reduce over different loops into such
// parts; the removal of dead results keeps the part of the outputs read.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_GENERICPARTS_H
#define AD_TRANSFORMS_GENERICPARTS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::ad {
/// The ops of `body` that `roots` depend on, through the operands of the
/// ops and of everything nested in them; with `withEffects`, also every op
/// with a memory effect and what it depends on.
llvm::SetVector<Operation *> bodySlice(Block *body, ArrayRef<Value> roots,
                                       bool withEffects = false);

/// A generic, built at `builder`'s insertion point, with `op`'s inputs, the
/// outputs `inits` of `op` (in that order) and `iterators`, whose body is
/// the ops of `slice` (in body order) yielding what `op` yields for those
/// outputs, or the values of `op`'s body `yields` when given (one per
/// init). `slice` must hold what those yields depend on. On buffers, the
/// part has no results.
linalg::GenericOp buildGenericPart(OpBuilder &builder, linalg::GenericOp op,
                                   ArrayRef<OpOperand *> inits,
                                   ArrayRef<utils::IteratorType> iterators,
                                   const llvm::SetVector<Operation *> &slice,
                                   ArrayRef<Value> yields = {});
} // namespace mlir::ad

#endif // AD_TRANSFORMS_GENERICPARTS_H
