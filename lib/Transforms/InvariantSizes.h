//===- InvariantSizes.h - sizes of loop values known at loop entry -*- C++ -*-//
//
// A per-iteration buffer is allocated before its loop nest starts, so a
// dynamically shaped tensor defined in the nest can be kept only if each of
// its dynamic sizes is the same in every iteration and computable before the
// nest. InvariantSizes proves that and builds the sizes there.
//
// The proof follows the sizes backwards with upstream's value bounds
// (ValueBoundsConstraintSet and the models of arith, tensor, linalg, scf and
// affine ops, registered with the derivative rules), down to values defined
// before the nest, and adds what upstream does not follow:
//  - a call's result: its size is that of the value the callee returns,
//    expressed in the callee's arguments, then in the call's operands;
//  - an scf.for iter_arg or result whose size upstream cannot relate to the
//    loop's init: assumed to be the init's size, which holds when the value
//    the body yields then has that same size (an induction over iterations);
//  - an scf.if result: the size its branches yield, the same in both;
//  - elementwise ops on tensors (math.sin on a tensor): their operands'.
// Two sizes computed before the nest that upstream can neither prove equal
// nor different (an RNN's state sized by its initial value, then by a
// weight matrix) are checked there at run time (cf.assert: an error of the
// call from Python), unless the size a loop body yields was found from the
// size it assumed (a tensor growing by some amount per iteration): that is
// a compile-time failure.
// Anything else (a size read from memory, a size changing per iteration) is
// a failure, reported by the caller.
//
// Private to lib/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_TRANSFORMS_INVARIANTSIZES_H
#define AD_LIB_TRANSFORMS_INVARIANTSIZES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace mlir::ad::sweeps {

class InvariantSizes {
public:
  /// Sizes are built at `builder`, whose insertion point is in the function's
  /// entry block before the loop nest; values defined there before that
  /// point (and the block's arguments) are what sizes are built from.
  explicit InvariantSizes(OpBuilder &builder);

  /// The dynamic sizes of `shaped` (a ranked tensor defined in the nest), in
  /// the order of its dynamic dimensions, or failure when one of them cannot
  /// be shown to be the same in every iteration.
  FailureOr<SmallVector<Value>> dynamicSizes(Value shaped);
  /// Index `value` (defined in the nest) built before the nest, or failure
  /// when it cannot be shown to be the same in every iteration.
  FailureOr<Value> invariantIndex(Value value);

private:
  /// Runs `compute`; on failure, erases what it built.
  template <typename T>
  FailureOr<T> attempt(llvm::function_ref<FailureOr<T>()> compute);
  /// The index `value` (dim unset) or size `dim` of shaped `value`, built at
  /// the builder, where `calls` are the calls whose callees are being
  /// followed (innermost last).
  FailureOr<Value> size(Value value, std::optional<int64_t> dim,
                        SmallVectorImpl<func::CallOp> &calls);
  FailureOr<Value> sizeOfCallResult(OpResult result,
                                    std::optional<int64_t> dim,
                                    SmallVectorImpl<func::CallOp> &calls);
  FailureOr<Value> sizeOfLoopValue(Value value, std::optional<int64_t> dim,
                                   SmallVectorImpl<func::CallOp> &calls);
  FailureOr<Value> sizeOfBranchResult(OpResult result,
                                      std::optional<int64_t> dim,
                                      SmallVectorImpl<func::CallOp> &calls);
  /// Succeeds when sizes `expected` and `actual` (built before the nest)
  /// are equal: proven, or not disproven and then asserted at run time
  /// with `message` at `loc`.
  LogicalResult checkSame(Value expected, Value actual, Location loc,
                          StringRef message, bool checkAtRunTime = true);
  FailureOr<Value> sizeByValueBounds(Value value, std::optional<int64_t> dim,
                                     SmallVectorImpl<func::CallOp> &calls);
  /// Whether `value` is defined before the insertion point in the entry
  /// block (so usable there).
  bool availableAtEntry(Value value) const;
  /// Whether the size walk of upstream stops at `value` (and this class
  /// continues): values available at entry, arguments of the innermost
  /// followed callee, call results and scf.for iter_args and results.
  bool isLeaf(Value value, ArrayRef<func::CallOp> calls) const;

  /// The size assumed for `value` (dim, or -1) while its loop is checked,
  /// when followed through `calls`, if any.
  Value assumed(Value value, int64_t dim, ArrayRef<func::CallOp> calls);

  OpBuilder &builder;
  Block *entry;
  /// Sizes found in the caller's own function (no callee followed): a value
  /// of a callee has a size per call site.
  DenseMap<std::pair<Value, int64_t>, Value> known;
  /// The loops being checked: an iter_arg's assumed size, valid only when
  /// reached through the same calls.
  struct Assumption {
    Value value;
    int64_t dim;
    SmallVector<func::CallOp> calls;
    Value size;
    /// Whether the size of what the body yields was found from it.
    bool used = false;
  };
  SmallVector<Assumption> assumptions;
};

} // namespace mlir::ad::sweeps

#endif // AD_LIB_TRANSFORMS_INVARIANTSIZES_H
