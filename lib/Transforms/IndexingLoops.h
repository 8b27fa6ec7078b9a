//===- IndexingLoops.h - the loops an indexing map reads --------*- C++ -*-===//
//
// Which loops of a linalg op an operand's indexing map reads, as a bit set:
// ad-fuse-elementwise groups outputs by it, ad-vectorize compares what
// outputs reduce over.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_INDEXINGLOOPS_H
#define AD_TRANSFORMS_INDEXINGLOOPS_H

#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir::ad {
/// The loops `map` reads (its results that are loop dimensions).
inline llvm::SmallBitVector loopsOf(AffineMap map) {
  llvm::SmallBitVector loops(map.getNumDims());
  for (AffineExpr expr : map.getResults())
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      loops.set(dim.getPosition());
  return loops;
}
} // namespace mlir::ad

#endif // AD_TRANSFORMS_INDEXINGLOOPS_H
