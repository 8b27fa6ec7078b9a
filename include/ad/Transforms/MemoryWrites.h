//===- MemoryWrites.h - values that must not go through memory --*- C++ -*-===//
//
// Differentiation follows SSA values only: a value that depends on a
// differentiated argument and is written to memory, then read back, would
// silently lose its derivative. This check finds every op that may do so,
// nested in regions and in the functions it calls included, and treats ops
// that declare no memory effects as possible writers.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_MEMORYWRITES_H
#define AD_TRANSFORMS_MEMORYWRITES_H

#include "ad/IR/ADDialect.h"
#include "ad/IR/ADInterfaces.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <memory>
#include <vector>

namespace mlir::ad {

/// Checks ops for writes to memory of values that depend on differentiated
/// arguments. One instance serves a whole module: what it learns of a
/// function called with some varied arguments is kept.
class MemoryWriteCheck {
public:
  /// Whether a value depends on a differentiated argument.
  using VariedFn = function_ref<bool(Value)>;

  /// With `followsMemory` (forward mode), writes to buffers by an op with a
  /// tangent rule are not reported: ActivityAnalysis follows them (a buffer
  /// of floats has a shadow; a value read from a varied buffer is varied, so
  /// a float's bits stored as an integer and read back meet an integer to
  /// float bitcast, which has no rule), and callees are analysed following
  /// memory too.
  explicit MemoryWriteCheck(bool followsMemory = false)
      : followsMemory(followsMemory) {}

  /// The op that may write a varied value (of any type) to memory,
  /// among `op` and the ops nested in it (ops in `skip` and their nested
  /// ops excepted; every op looked at is added to `skip`), or, for a call,
  /// the op in its callee; null when there is none. `via` receives the
  /// calls on the way, outermost first.
  Operation *findWrite(Operation *op, VariedFn isVaried,
                       llvm::DenseSet<Operation *> &skip,
                       SmallVectorImpl<Operation *> &via);

  /// findWrite, reporting the writer (with a note per call on the way)
  /// through `emitError`; fails when there is one.
  LogicalResult
  check(Operation *op, VariedFn isVaried, llvm::DenseSet<Operation *> &skip,
        function_ref<InFlightDiagnostic(Operation *, const Twine &)> emitError);

  /// Forgets what was learnt of functions and symbols: call after adding
  /// functions, or calls, to functions already checked.
  void invalidate() {
    callees.clear();
    escaping.clear();
    strictCheck.reset();
    symbolTables = std::make_unique<SymbolTableCollection>();
  }

private:
  /// Whether `op` itself may write a varied value (calls excepted).
  bool writesVaried(Operation *op, VariedFn isVaried);
  /// For `callee`, which has a user-written rule: a write of a varied value
  /// (called with varied arguments at `positions`) to memory its caller
  /// may read (a buffer argument, a global, anything a callee of it
  /// writes), or null. Its own scratch buffers may hold anything.
  Operation *findEscapingWrite(func::FuncOp callee,
                               ArrayRef<int64_t> positions,
                               SmallVectorImpl<Operation *> &via);
  /// The writer in `callee` when called with varied arguments at
  /// `positions`, or null.
  Operation *findWriteInCallee(Operation *callee, ArrayRef<int64_t> positions,
                               SmallVectorImpl<Operation *> &via);

  /// Per (callee, varied argument positions): the writer found, with the
  /// calls leading to it, or nothing. An entry under computation is empty,
  /// which ends a recursion: the callee's own walk still sees its writes.
  struct CalleeResult {
    Operation *writer = nullptr;
    SmallVector<Operation *> via;
  };
  std::map<std::pair<Operation *, std::vector<int64_t>>, CalleeResult>
      callees;
  /// The same for findEscapingWrite (a recursion through functions with
  /// user-written rules ends at an entry under computation too).
  std::map<std::pair<Operation *, std::vector<int64_t>>, CalleeResult>
      escaping;
  /// The check of calls in a function with a user-written rule, which
  /// follows values only (this one when it does; made once otherwise, so
  /// that what it learns ends recursions through such functions).
  std::unique_ptr<MemoryWriteCheck> strictCheck;
  std::unique_ptr<SymbolTableCollection> symbolTables =
      std::make_unique<SymbolTableCollection>();
  bool followsMemory;
  CustomRuleIndex customRules;
};

/// Marks the derivative functions while they are in the scratch module
/// where differentiation happens (removed when they move to the user's).
inline constexpr const char kGeneratedAttrName[] = "ad.generated";

/// The error at a derivative request left in a function being
/// differentiated: requests are rewritten innermost first, so one remains
/// only when it asks for the derivative of a function being differentiated
/// (its own, or one of its recursion's).
inline constexpr const char kOwnDerivativeMessage[] =
    "cannot differentiate a function that takes the derivative of itself "
    "(or of a function of its recursion)";

/// Why `writer`, an op MemoryWriteCheck::findWrite returned, stops
/// differentiation: the message of the error reported at it.
std::string describeWrite(Operation *writer);

/// An operand of `op` that depends on a differentiated argument (per
/// `isVaried`) but has a type that cannot carry a derivative (an unranked
/// tensor, a vector, a memref), or null. Differentiating `op` would drop
/// that operand's derivative.
/// `carries` says which types carry one (forward mode: hasTangentType).
Value findUncarriedOperand(Operation *op, MemoryWriteCheck::VariedFn isVaried,
                           function_ref<bool(Type)> carries =
                               isDifferentiableType);

/// The error at `op` when findUncarriedOperand found `operand`.
std::string describeUncarriedOperand(Operation *op, Value operand);

/// Emits an error at `op` with a note "while differentiating this call of
/// @callee" at each of `requesters` (the calls or ad ops being
/// differentiated on the way to `op`, outermost first), innermost first.
InFlightDiagnostic emitErrorWithCallChain(Operation *op, const Twine &message,
                                          ArrayRef<Operation *> requesters);

} // namespace mlir::ad

#endif // AD_TRANSFORMS_MEMORYWRITES_H
