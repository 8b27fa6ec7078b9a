//===- IndexingLoops.h - the loops an indexing map reads --------*- C++ -*-===//
//
// Which loops of a linalg op an operand's indexing map reads, as a bit set:
// ad-fuse-elementwise groups outputs by it, ad-vectorize compares what
// outputs reduce over; and the iterator types the outputs imply.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_INDEXINGLOOPS_H
#define AD_TRANSFORMS_INDEXINGLOOPS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
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

/// The iterator types of a loop nest of `numLoops` loops writing outputs
/// indexed by `outputMaps`: a loop that indexes every output is parallel
/// (each iteration writes its own elements), the others are reductions.
inline llvm::SmallVector<utils::IteratorType>
iteratorTypesOfOutputs(unsigned numLoops, llvm::ArrayRef<AffineMap> outputMaps) {
  llvm::SmallBitVector everyOutput(numLoops, true);
  for (AffineMap map : outputMaps)
    everyOutput &= loopsOf(map);
  llvm::SmallVector<utils::IteratorType> iterators;
  for (unsigned loop = 0; loop < numLoops; ++loop)
    iterators.push_back(everyOutput.test(loop) ? utils::IteratorType::parallel
                                               : utils::IteratorType::reduction);
  return iterators;
}
} // namespace mlir::ad

#endif // AD_TRANSFORMS_INDEXINGLOOPS_H
