//===- ActivityAnalysis.h - which values carry derivatives ------*- C++ -*-===//
//
// A value is active when it depends on a differentiated argument (varied)
// and some float result of the function depends on it (useful). Only active
// ops are differentiated; only values their rules read are taped.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_ACTIVITYANALYSIS_H
#define AD_TRANSFORMS_ACTIVITYANALYSIS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::ad {

/// Activity of the values of one function for one set of differentiated
/// arguments. Values of any type propagate variedness (an integer computed
/// from a float can flow back into a float), but only values of
/// differentiable type are active.
class ActivityAnalysis {
public:
  ActivityAnalysis(func::FuncOp function, ArrayRef<int64_t> wrt);

  /// Whether `value` is varied, useful and of differentiable type.
  bool isActive(Value value) const;
  /// Whether any result of `op` is active.
  bool isActive(Operation *op) const;
  /// Whether `value` depends on a differentiated argument.
  bool isVaried(Value value) const { return varied.contains(value); }

private:
  void propagateVaried(func::FuncOp function, ArrayRef<int64_t> wrt);
  void propagateUseful(func::FuncOp function);

  llvm::DenseSet<Value> varied;
  llvm::DenseSet<Value> useful;
};

} // namespace mlir::ad

#endif // AD_TRANSFORMS_ACTIVITYANALYSIS_H
