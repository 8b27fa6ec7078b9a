//===- ViewRoots.h - the buffer a view is of --------------------*- C++ -*-===//
//
// ad-vectorize (which buffers may overlap) and ad-parallelize (which stack
// buffers a loop shares) both ask what buffer a memref value views.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_VIEWROOTS_H
#define AD_TRANSFORMS_VIEWROOTS_H

#include "mlir/IR/Value.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::ad {
/// The buffer `value` is a view of (through subviews, casts, reshapes), or
/// `value` itself.
inline Value rootBuffer(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}
} // namespace mlir::ad

#endif // AD_TRANSFORMS_VIEWROOTS_H
