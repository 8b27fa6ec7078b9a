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
#include "llvm/ADT/EquivalenceClasses.h"

namespace mlir::ad {

/// Activity of the values of one function for one set of differentiated
/// arguments. A value of differentiable type is varied along the paths a
/// derivative takes (not through comparisons or sizes; through a linalg op
/// or an scf.for, each output or iteration argument by what it is computed
/// from); any other value (an integer can hold a float's bits and flow
/// back into a float) along every path. Only values of differentiable type
/// are active.
///
/// With `followsMemory` (forward mode, which gives buffers shadow buffers),
/// buffers of floats carry derivatives too: a buffer is varied when an op
/// with a varied operand may write it or any buffer that may alias it
/// (flow-insensitively: the analysis does not order reads and writes), a
/// value read from a varied buffer is varied, and every operand of a write
/// into a varied buffer is useful; a returned buffer of floats is varied (a
/// caller may write to it). Without it (reverse mode) buffers carry
/// nothing, and a write of a varied value to memory is an error reported
/// by MemoryWriteCheck.
class ActivityAnalysis {
public:
  ActivityAnalysis(func::FuncOp function, ArrayRef<int64_t> wrt,
                   bool followsMemory = false);

  /// Whether `value` is varied, useful and of differentiable type.
  bool isActive(Value value) const;
  /// Whether any result of `op` is active.
  bool isActive(Operation *op) const;
  /// Whether `value` depends on a differentiated argument: for a value of
  /// differentiable type, along the paths a derivative takes; for any
  /// other (an integer, a boolean, a buffer), along every path, since it
  /// may hold a float's bits (through comparisons, sizes and trip counts
  /// too, and every result of a region op), which calls, stores and
  /// bitcasts back to floats are checked for.
  bool isVaried(Value value) const;

private:
  /// Forward propagation from the `wrt` arguments and `seeds` into
  /// `varied`; `precise` follows linalg bodies and scf.for and stops at
  /// booleans and sizes, otherwise every path counts.
  void propagateVaried(func::FuncOp function, ArrayRef<int64_t> wrt,
                       bool precise, llvm::DenseSet<Value> &varied,
                       ArrayRef<Value> seeds);
  void propagateUseful(func::FuncOp function);
  /// Groups the buffers of `function` that may alias (followsMemory).
  void groupBuffers(func::FuncOp function);

  bool followsMemory;
  llvm::DenseSet<Value> varied;
  llvm::DenseSet<Value> mayHoldBits;
  llvm::DenseSet<Value> useful;
  /// The buffers that may alias: one class per group (followsMemory).
  llvm::EquivalenceClasses<Value> buffers;
};

/// An arith.bitcast in `function` turning an integer that depends on the
/// arguments at `positions` into a float (the integer may hold a float's
/// bits), or null. A user-written rule sees integers as constants, so such
/// a function cannot have its derivative from a rule.
Operation *findBitsBecomingFloats(func::FuncOp function,
                                  ArrayRef<int64_t> positions);

/// The buffers `op` may write: the memref operands its memory effects name
/// as written (or freed: a shadow is freed with its buffer), or all of them
/// when it declares no effects (a call).
SmallVector<Value> getWrittenBuffers(Operation *op);

} // namespace mlir::ad

#endif // AD_TRANSFORMS_ACTIVITYANALYSIS_H
