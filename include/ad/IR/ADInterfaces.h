//===- ADInterfaces.h - rule and cotangent interfaces -----------*- C++ -*-===//
//
// The interfaces derivative rules are written against: the emitters through
// which a rule reads primal values and cotangents, the generated
// ReverseRuleOpInterface and CotangentTypeInterface, and helpers over them.
//
//===----------------------------------------------------------------------===//

#ifndef AD_IR_ADINTERFACES_H
#define AD_IR_ADINTERFACES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Types.h"

namespace mlir::ad {

/// Marks a `func.call` whose callee the forward sweep runs as it is (its
/// primal, keeping only the call's operands) and the reverse sweep runs
/// again, through the callee's forward function, just before its pullback:
/// the callee's tape then lives only while its pullback runs (see
/// DerivativeGenerator::setCheckpointLevels; only the calls of the copies
/// it makes are checkpointed, DifferentiationEmitter::isCheckpointed).
inline constexpr const char kCheckpointAttrName[] = "ad.checkpoint";

/// The pair of functions generated for one differentiated (callee, wrt).
struct DerivativeFunctions {
  /// Callee arguments -> (callee results..., tape values...).
  func::FuncOp forward;
  /// (tape values..., one cotangent per float result) -> gradients.
  func::FuncOp pullback;
  /// Differentiated argument positions, strictly increasing.
  SmallVector<int64_t> wrt;
  /// Number of tape values the forward function returns after the results.
  unsigned numTapeValues = 0;
  /// For a function that can call itself (directly or not): the versions
  /// calls from inside its recursion use. They share one growable tape:
  /// (args..., tape, next row) -> (results..., tape, next row), and
  /// (tape, row, invariants..., accumulators..., cotangents...) ->
  /// gradients. Null otherwise.
  func::FuncOp recursiveForward, recursivePullback;
  /// Whether the recursion can be run again at will (it only computes, see
  /// DerivativeGenerator::isRecomputableRecursion) and its recursive
  /// forward is the restartable kind: (args..., tape, next row) ->
  /// (results..., next row). It never reallocates the tape it is given: a
  /// row past the tape's end is written to the tape's last row instead,
  /// and a caller whose tape then holds fewer rows than the next row
  /// returned plus one reallocates it and makes the call again (see
  /// rerunIfOverflowed), which writes the same rows. Passing the buffer
  /// down but not back saves every invocation the buffer's return and its
  /// reallocation check.
  bool restartable = false;
  /// The positions of the arguments (ranked tensors, scalars) for which
  /// every call within the recursion passes one of its caller's such
  /// arguments (see DerivativeGenerator::invariantArguments), which the
  /// recursive pullback takes after the tape and the row, in this order,
  /// instead of keeping them in every invocation's row.
  SmallVector<unsigned> invariants;
  /// The indices into `wrt` of the tensor arguments whose gradients the
  /// recursive pullback threads: it takes the cotangent accumulated so far
  /// for each (the accumulators above, in this order) and returns it with
  /// the invocation's contributions added, so that an invocation that
  /// reads a few elements of a large tensor costs those elements, not a
  /// whole tensor. The entry pullback starts them at zero.
  SmallVector<unsigned> threaded;
  /// The argument positions the entry forward returns after the tape and
  /// the row, in this order, and the entry pullback takes there: the
  /// invariants and the dynamically shaped threaded arguments (which give
  /// their accumulators' sizes).
  SmallVector<unsigned> passed;
};

/// What both sweeps offer a rule.
class DifferentiationEmitter {
public:
  virtual ~DifferentiationEmitter() = default;
  /// The builder positioned where the rule emits code.
  virtual OpBuilder &getBuilder() = 0;
  /// Whether `original` (a value of the function being differentiated)
  /// depends on a differentiated argument and reaches a float result.
  virtual bool isActive(Value original) const = 0;
  /// Whether `original` depends on a differentiated argument (of any type:
  /// an integer may hold a float's bits).
  virtual bool isVaried(Value original) const = 0;
  /// The derivative functions of `callee` with respect to `wrt`, generated
  /// on first request. `wrt` may also name integer arguments that vary
  /// (see DerivativeGenerator::getOrCreate); only the float ones get
  /// gradients (DerivativeFunctions::wrt). Emits a diagnostic at `requester` and fails when the
  /// callee cannot be differentiated.
  virtual FailureOr<DerivativeFunctions>
  getDerivativeFunctions(func::FuncOp callee, ArrayRef<int64_t> wrt,
                         Operation *requester) = 0;
  /// The callee of `call` (null if the module has no such function).
  virtual func::FuncOp lookupCallee(func::CallOp call) = 0;
  /// Whether the function being differentiated and `callee` call each other
  /// (a call between them uses the recursive versions and the shared tape).
  virtual bool isSameRecursion(func::FuncOp callee) = 0;
  /// Whether the function being differentiated is recursive: then every
  /// loop keeps its tape in rows of the recursion's shared tape.
  virtual bool inRecursion() = 0;
  /// Whether `call`, a call of a recursive function outside the recursion
  /// of the function being differentiated, threads a growable tape whose
  /// rows the callee's recursion fills: in a recursive function (its
  /// recursion's tape), or inside a loop (a tape of the call's own, since a
  /// loop iteration cannot keep the buffer a fresh tape would be).
  virtual bool usesSharedTape(func::CallOp call) = 0;
  /// Whether `call` is checkpointed (kCheckpointAttrName, in a copy the
  /// generator made of a level of a tree recursion; the attribute
  /// elsewhere means nothing): the forward sweep runs the callee itself,
  /// keeping the call's operands, and the reverse sweep runs the callee's
  /// forward function again on them before its pullback.
  virtual bool isCheckpointed(func::CallOp call) = 0;
};

/// The forward sweep: emits the augmented forward function.
class ForwardEmitter : public DifferentiationEmitter {
public:
  /// The forward-function value standing for `original`.
  virtual Value lookup(Value original) = 0;
  /// Clones `original` with mapped operands and maps its results.
  virtual LogicalResult cloneOp(Operation *original) = 0;
  /// Records that `forwardValues` stand for the results of `original`.
  virtual void mapResults(Operation *original, ValueRange forwardValues) = 0;
  /// Records that `forwardValues` stand for `originals` (block arguments of
  /// regions the rule emits itself).
  virtual void mapValues(ValueRange originals, ValueRange forwardValues) = 0;
  /// Records forward-function values the reverse rule of `original` reads
  /// through ReverseEmitter::getResiduals.
  virtual void setResiduals(Operation *original, ValueRange forwardValues) = 0;

  /// Emits the ops of `original`, a block of an active region op, at the
  /// builder's insertion point (the terminator too if `withTerminator`).
  virtual LogicalResult emitOps(Block &original, bool withTerminator) = 0;
  /// Declares `forwardBranch`, a region op the rule emitted whose regions
  /// each hold one block and run at most once (scf.if, scf.index_switch),
  /// able to carry out the scalars and ranked tensors defined directly in
  /// its blocks: once the adjoint is complete, the op is rebuilt with one
  /// more result per such value the adjoint reads (the other regions yield
  /// a placeholder), and nothing else is carried out.
  virtual void carryOutOnDemand(Operation *forwardBranch) = 0;
  /// A builder before the outermost loop enclosing the insertion point (at
  /// the insertion point outside loops), where per-iteration tapes are
  /// allocated. Fails with a diagnostic at `op` when one of `values` is not
  /// available there; constants are cloned there.
  virtual FailureOr<OpBuilder> getLoopEntryBuilder(Operation *op,
                                                   SmallVectorImpl<Value> &values) = 0;
  /// Declares `forwardBody` the body of a forward loop: values defined in it
  /// that the adjoint reads are stored per iteration. `iteration` is the
  /// iteration's number, `tripCount` (from getLoopEntryBuilder's point) the
  /// number of iterations.
  virtual void beginLoop(Block *forwardBody, Value iteration,
                         Value tripCount) = 0;

  /// The growable tapes of the scf.while loops nested in `original` (or
  /// `original` itself), as forward values at the insertion point: a region
  /// op carries them through (iter_args, results) and reports their new
  /// values with setCarriedTapes. Tapes are created on first request.
  virtual SmallVector<Value> getCarriedTapes(Operation *original) = 0;
  /// Replaces the current values of what getCarriedTapes(original) returned.
  virtual void setCarriedTapes(Operation *original, ValueRange values) = 0;
  /// The number of tape slots one iteration of `originalWhile` fills (an
  /// index known once the adjoint is complete).
  virtual Value getRowWidth(Operation *originalWhile) = 0;
  /// Whether the growable tape `original` (a loop, a call) fills rows of is
  /// a restartable recursion's (see DerivativeFunctions::restartable): it
  /// is never reallocated while the recursion runs (rows past its end go
  /// to its last row), and the recursion's caller runs it again when it
  /// did not fit.
  virtual bool fillsRestartableRows(Operation *original) = 0;
  /// Declares that values of `forwardBlock` the adjoint reads are stored in
  /// row `row` of `tape`, the growable tape of `originalWhile`.
  virtual void beginRows(Block *forwardBlock, Operation *originalWhile,
                         Value row, Value tape) = 0;
  /// For `originalCall`, a call of the recursive function `callee` from
  /// outside its recursion that threads a growable tape (see
  /// usesSharedTape): makes that tape's rows as wide as the rows of
  /// `callee`'s recursion, which fills them.
  virtual void shareTapeWith(Operation *originalCall, func::FuncOp callee) = 0;
};

/// The reverse sweep: emits the pullback function.
class ReverseEmitter : public DifferentiationEmitter {
public:
  /// The value of `original` from the forward run, usable in the pullback.
  /// Reading a value is what puts it on the tape (constants are rebuilt).
  virtual Value getPrimal(Value original) = 0;
  /// For rules that need only the shape of tensor `original` (a zero
  /// cotangent, the bounds of a slice): a pullback tensor of its type and
  /// sizes. Its primal value when the pullback has it without a tape, else
  /// an empty tensor of its sizes, which are kept instead of the tensor (a
  /// while loop's tape rows hold scalars, not tensors whose size varies).
  virtual Value getPrimalShape(Value original) = 0;
  /// getPrimal, or null without reporting an error when the value cannot
  /// be kept (a rule then tries with its shape: getPrimalShape).
  virtual Value tryGetPrimal(Value original) = 0;
  /// The residuals the forward sweep registered for `original`, usable in
  /// the pullback.
  virtual SmallVector<Value> getResiduals(Operation *original) = 0;
  /// The cotangent accumulated so far for a result of the op being reversed,
  /// or a zero of its type.
  virtual Value getCotangent(Value originalResult) = 0;
  /// Adds `contribution` to the cotangent of `originalOperand`; ignored when
  /// the operand is not active.
  virtual void addCotangent(Value originalOperand, Value contribution) = 0;

  /// The cotangent accumulated so far for `original`, or null.
  virtual Value lookupCotangent(Value original) = 0;
  /// Replaces the cotangent of `original` (region ops carry cotangents of
  /// values from outside through their results).
  virtual void setCotangent(Value original, Value cotangent) = 0;
  /// Emits the adjoints of the ops of `original`, a block of an active
  /// region op, in reverse order at the builder's insertion point.
  virtual LogicalResult emitReverseOps(Block &original) = 0;
  /// Makes `pullbackValue` the primal value of `original` (an induction
  /// variable rebuilt in the reverse loop) until the end of the loop.
  virtual void mapPrimal(Value original, Value pullbackValue) = 0;
  /// Starts reversing one iteration of the loop whose body is
  /// `originalBody`; `iteration` is the number of the forward iteration
  /// being reversed, `tripCount` the pullback value of the trip count.
  virtual void beginLoop(Block *originalBody, Value iteration,
                         Value tripCount) = 0;
  /// Ends what beginLoop started.
  virtual void endLoop(Block *originalBody) = 0;
  /// Starts reversing `originalBlock` of `originalWhile` for the iteration
  /// stored in row `row` of its tape.
  virtual void beginRows(Block *originalBlock, Operation *originalWhile,
                         Value row) = 0;
  /// Ends what beginRows started.
  virtual void endRows(Block *originalBlock) = 0;
  /// Forgets the cotangents of the values defined in `original`, before its
  /// adjoint is emitted once more (a block reversed several times).
  virtual void resetCotangents(Block &original) = 0;
  /// In the pullback of a recursive function: the shared tape.
  virtual Value getRecursionTape() = 0;
  /// The final buffer of the growable tape of `original` (a loop, or a call
  /// that threads one), usable in the pullback.
  virtual Value getGrowableTape(Operation *original) = 0;
};

/// What forward mode offers a tangent rule: the primal values of the
/// tangent function being emitted and the tangents computed so far.
class TangentEmitter {
public:
  virtual ~TangentEmitter() = default;
  /// The builder positioned where the rule emits code.
  virtual OpBuilder &getBuilder() = 0;
  /// Whether `original` depends on a differentiated argument and reaches a
  /// float result (only active values have tangents).
  virtual bool isActive(Value original) const = 0;
  /// Whether `original` depends on a differentiated argument (of any type:
  /// an integer may hold a float's bits).
  virtual bool isVaried(Value original) const = 0;
  /// The tangent-function value standing for `original`.
  virtual Value lookup(Value original) = 0;
  /// Clones `original` with mapped operands and maps its results.
  virtual LogicalResult cloneOp(Operation *original) = 0;
  /// Records that `values` stand for the results of `original`.
  virtual void mapResults(Operation *original, ValueRange values) = 0;
  /// Records that `values` stand for `originals` (block arguments of
  /// regions the rule emits itself).
  virtual void mapValues(ValueRange originals, ValueRange values) = 0;
  /// The tangent of `original`: the one set for it, or a zero of its type
  /// (shaped like its primal value) when it is not active. `original` must
  /// have a differentiable type.
  virtual Value getTangent(Value original) = 0;
  /// The tangent set for `original`, or null: then its tangent is zero
  /// (every active value gets a tangent when the op or region defining it
  /// is emitted; block arguments of a rebuilt region for which the rule
  /// carries no tangent have none).
  virtual Value lookupTangent(Value original) = 0;
  /// Makes `tangent` the tangent of `original`.
  virtual void setTangent(Value original, Value tangent) = 0;
  /// Emits the ops of `original` (a block of a region op the rule rebuilds)
  /// and their tangents at the builder's insertion point, the terminator
  /// excepted.
  virtual LogicalResult emitOps(Block &original) = 0;
  /// The tangent function of `callee` for the argument positions `wrt`
  /// (integer positions among them only vary, see
  /// DerivativeGenerator::getOrCreate): (arguments..., tangents of the
  /// float wrt arguments...) -> (results...,
  /// tangents of the float results...), generated on first request. Emits a
  /// diagnostic at `requester` and fails when the callee cannot be
  /// differentiated.
  virtual FailureOr<func::FuncOp> getTangentFunction(func::FuncOp callee,
                                                     ArrayRef<int64_t> wrt,
                                                     Operation *requester) = 0;
  /// The callee of `call` (null if the module has no such function).
  virtual func::FuncOp lookupCallee(func::CallOp call) = 0;
  /// Emits an error at `op` with notes naming the calls being
  /// differentiated on the way to it.
  virtual InFlightDiagnostic emitError(Operation *op, const Twine &message) = 0;
};

/// Whether values of `type` carry gradients (float scalars, ranked tensors
/// of floats).
bool isDifferentiableType(Type type);

/// Whether values of `type` have tangents in forward mode: differentiable
/// types and ranked memrefs of floats, whose tangent is a shadow buffer of
/// the same type (zero where nothing differentiable was written).
bool hasTangentType(Type type);

/// A constant of differentiable `type` filled with `value`; null when the
/// type cannot be filled without shape operands.
Value createFilledConstant(OpBuilder &builder, Location loc, Type type,
                           double value);

/// A value shaped like `like` (a float or integer scalar, or a ranked tensor
/// of them, dynamic sizes included) with every element `value`: an
/// arith.constant, or for a dynamically shaped tensor a linalg.fill of a
/// tensor.empty sized with tensor.dim (a pass calling it outside the ad
/// passes declares arith, tensor and linalg as dependent dialects).
Value createFilledLike(OpBuilder &builder, Location loc, Value like,
                       double value);

/// A zero of differentiable `type`; `like`, a value of that type, gives the
/// dynamic sizes of a tensor (it may be null for static types).
Value createZerosLike(OpBuilder &builder, Location loc, Type type, Value like);

/// `lhs + rhs` for cotangents of differentiable type.
Value createCotangentAdd(OpBuilder &builder, Location loc, Value lhs,
                         Value rhs);

/// The cotangents accumulated so far in one reverse sweep, keyed by the
/// original values. Shared by the function-level sweep and the sweep over
/// a linalg.generic body.
class CotangentMap {
public:
  /// The cotangent of `original`, or null.
  Value lookup(Value original) const { return cotangents.lookup(original); }
  bool contains(Value original) const { return cotangents.contains(original); }
  void set(Value original, Value cotangent) { cotangents[original] = cotangent; }
  void erase(Value original) { cotangents.erase(original); }
  /// Adds `contribution` to the cotangent of `original` (a value used
  /// several times gets the sum of its uses' contributions).
  void add(OpBuilder &builder, Value original, Value contribution) {
    Value &slot = cotangents[original];
    slot = slot ? createCotangentAdd(builder, contribution.getLoc(), slot,
                                     contribution)
                : contribution;
  }

private:
  DenseMap<Value, Value> cotangents;
};

} // namespace mlir::ad

#include "ad/IR/ADOpInterfaces.h.inc"
#include "ad/IR/ADTypeInterfaces.h.inc"

#endif // AD_IR_ADINTERFACES_H
