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
// weight matrix; two branches sized by different arguments) are taken to be
// equal, and each store of the value checks at run time that it has its
// buffer's sizes (cf.assert: an error of the call from Python), in the
// iterations that run only; unless the size a loop body yields is computed
// from the size it assumed without being equal to it (a tensor growing per
// iteration): that is a compile-time failure.
// Anything else (a size read from memory, a size changing per iteration) is
// a failure, reported by the caller.
//
// Private to lib/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_TRANSFORMS_INVARIANTSIZES_H
#define AD_LIB_TRANSFORMS_INVARIANTSIZES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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
  /// be shown to be the same in every iteration. `check` is set when the
  /// proof assumed that two sizes computed before the nest are equal: the
  /// stores must then check the value's sizes at run time.
  FailureOr<SmallVector<Value>> dynamicSizes(Value shaped, bool &check);
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
  FailureOr<Value> sizeOfElementwise(Operation *op, int64_t dim,
                                     SmallVectorImpl<func::CallOp> &calls);
  FailureOr<Value> sizeOfConcat(tensor::ConcatOp concat, int64_t dim,
                                SmallVectorImpl<func::CallOp> &calls);
  FailureOr<Value> sizeOfBranchResult(OpResult result,
                                      std::optional<int64_t> dim,
                                      SmallVectorImpl<func::CallOp> &calls);
  /// Succeeds when sizes `expected` and `actual` (built before the nest)
  /// are equal: proven, or (when `allowCheck` and the entry point allows
  /// it) not disproven, which the stores then check at run time.
  LogicalResult checkSame(Value expected, Value actual,
                          bool allowCheck = true);
  bool dependsOn(Value value, Value source);
  FailureOr<Value> sizeByValueBounds(Value value, std::optional<int64_t> dim,
                                     SmallVectorImpl<func::CallOp> &calls);
  /// Whether `value` is defined before the insertion point in the entry
  /// block (so usable there).
  bool availableAtEntry(Value value) const;
  /// Whether the size walk of upstream stops at `value` (and this class
  /// continues): values available at entry, arguments of the innermost
  /// followed callee, and what size() follows itself.
  bool isLeaf(Value value, ArrayRef<func::CallOp> calls) const;

  /// The size assumed for `value` (dim, or -1) while its loop is checked,
  /// when followed through `calls`, if any.
  Value assumed(Value value, int64_t dim, ArrayRef<func::CallOp> calls) const;

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
  };
  SmallVector<Assumption> assumptions;
  /// Whether sizes not proven equal may be checked by the stores, and
  /// whether the current proof needs that.
  bool runTimeChecks = false, needsCheck = false;
};

} // namespace mlir::ad::sweeps

#endif // AD_LIB_TRANSFORMS_INVARIANTSIZES_H
