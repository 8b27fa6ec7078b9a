//===- FuncRules.cpp - the derivative rules of func.call --------*- C++ -*-===//
//
// A call is differentiated through the callee's own derivative functions:
// the forward sweep calls the callee's forward function (so the callee runs
// once) and keeps its tape as the call's residuals; the reverse sweep passes
// that tape and the result cotangents to the callee's pullback.
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADDialect.h"
#include "ad/IR/ADInterfaces.h"
#include "ad/IR/TapeUtils.h"
#include "ad/Rules/Rules.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::ad;

namespace {

/// The operand positions of `call` the callee is differentiated with
/// respect to: the active float operands and the varied integer ones. An
/// integer computed from a float is usually piecewise constant, but it may
/// hold the float's bits (arith.bitcast), and then the callee carries the
/// derivative through it; its activity must start there, as it would if
/// the call were inlined.
template <typename EmitterT>
static SmallVector<int64_t> getVariedPositions(func::CallOp call,
                                               const EmitterT &emitter) {
  SmallVector<int64_t> positions;
  for (auto [index, operand] : llvm::enumerate(call.getOperands()))
    if (emitter.isActive(operand) ||
        (!isDifferentiableType(operand.getType()) &&
         emitter.isVaried(operand)))
      positions.push_back(index);
  return positions;
}

/// The derivative functions of the callee of `call` with respect to its
/// varied operands, or failure (with a diagnostic).
static FailureOr<DerivativeFunctions>
lookupCalleeDerivative(func::CallOp call, DifferentiationEmitter &emitter) {
  // The verifier of func.call guarantees the callee exists.
  func::FuncOp callee = emitter.lookupCallee(call);
  return emitter.getDerivativeFunctions(
      callee, getVariedPositions(call, emitter), call);
}

/// Whether `call` stays within the recursion of the function containing it.
static bool isRecursive(func::CallOp call, const DerivativeFunctions &functions,
                        DifferentiationEmitter &emitter) {
  return functions.recursiveForward &&
         emitter.isSameRecursion(emitter.lookupCallee(call));
}

/// Whether `call` is checkpointed (DifferentiationEmitter::isCheckpointed):
/// its callee runs as it is in the forward sweep and again, through its
/// entry points (with a fresh tape, for a recursive callee), in the
/// reverse. (Checkpointed calls are made by copies of the levels of a
/// recursion, which are not recursive themselves.)
static bool isCheckpointed(func::CallOp call,
                           const DerivativeFunctions &functions,
                           DifferentiationEmitter &emitter) {
  return emitter.isCheckpointed(call) && !isRecursive(call, functions, emitter);
}

/// The reverse of a checkpointed call: the callee's forward function on
/// the operands kept, then its pullback on that tape (a fresh one, which
/// lives only while the pullback runs).
static LogicalResult
emitCheckpointedReverse(func::CallOp call, const DerivativeFunctions &functions,
                        ReverseEmitter &emitter) {
  OpBuilder &builder = emitter.getBuilder();
  auto forwardCall = func::CallOp::create(builder, call.getLoc(),
                                          functions.forward,
                                          emitter.getResiduals(call));
  SmallVector<Value> operands(
      forwardCall.getResults().drop_front(call.getNumResults()));
  for (Value result : call.getResults())
    if (isDifferentiableType(result.getType()))
      operands.push_back(emitter.getCotangent(result));
  auto pullbackCall = func::CallOp::create(builder, call.getLoc(),
                                           functions.pullback, operands);
  for (auto [position, gradient] :
       llvm::zip(functions.wrt, pullbackCall.getResults()))
    emitter.addCotangent(call.getOperand(position), gradient);
  return success();
}

struct CallRule
    : ReverseRuleOpInterface::ExternalModel<CallRule, func::CallOp> {
  LogicalResult emitForward(Operation *op, ForwardEmitter &emitter) const {
    auto call = cast<func::CallOp>(op);
    FailureOr<DerivativeFunctions> functions =
        lookupCalleeDerivative(call, emitter);
    if (failed(functions))
      return failure();
    SmallVector<Value> operands;
    for (Value operand : call.getOperands())
      operands.push_back(emitter.lookup(operand));
    unsigned numResults = call.getNumResults();
    if (isCheckpointed(call, *functions, emitter)) {
      // The callee as it is; the reverse sweep runs it again.
      auto primalCall =
          func::CallOp::create(emitter.getBuilder(), call.getLoc(),
                               emitter.lookupCallee(call), operands);
      emitter.mapResults(call, primalCall.getResults());
      emitter.setResiduals(call, operands);
      return success();
    }
    bool recursive = isRecursive(call, *functions, emitter);
    if (recursive ||
        (functions->recursiveForward && emitter.usesSharedTape(call))) {
      // Within the recursion, or a recursive callee from outside it in a
      // loop or another recursion (a fresh tape per call would be a buffer,
      // which neither a loop iteration nor a row can keep): thread the
      // tape; the callee's rows start at the next free one.
      if (!recursive)
        emitter.shareTapeWith(call, emitter.lookupCallee(call));
      SmallVector<Value> tape = emitter.getCarriedTapes(call);
      OpBuilder &b = emitter.getBuilder();
      Location loc = call.getLoc();
      // The outermost restartable call: the tape's last row, which takes
      // the rows that do not fit, must be one the call fills (rewritten
      // when it runs again), not one filled before it: the first row the
      // call fills must fit.
      bool outermostRestartable =
          functions->restartable && !emitter.fillsRestartableRows(call);
      if (outermostRestartable) {
        tape[0] = growTapeIfFull(b, loc, tape[0], tape[1],
                                 emitter.getRowWidth(call));
        // Values defined from here on are stored in the grown buffer.
        emitter.setCarriedTapes(call, tape);
      }
      operands.append({tape[0], tape[1]});
      auto forwardCall = func::CallOp::create(
          b, loc, functions->recursiveForward, operands);
      emitter.mapResults(call, forwardCall.getResults().take_front(numResults));
      ValueRange filled = forwardCall.getResults().drop_front(numResults);
      Value buffer, nextRow;
      if (functions->restartable) {
        // The callee passes the buffer on unchanged: the caller of the
        // outermost restartable call runs it again on a larger one if its
        // rows did not fit.
        buffer = tape[0];
        nextRow = filled[0];
        if (outermostRestartable)
          buffer = rerunIfOverflowed(
              b, loc, buffer, nextRow, emitter.getRowWidth(call),
              [&](OpBuilder &inner, Value larger) {
                operands[operands.size() - 2] = larger;
                func::CallOp::create(inner, loc, functions->recursiveForward,
                                     operands);
              });
      } else {
        buffer = filled[0];
        nextRow = filled[1];
      }
      emitter.setCarriedTapes(call, {buffer, nextRow});
      // The callee's pullback starts at its invocation's row.
      emitter.setResiduals(call, {lastRowFilled(b, loc, nextRow)});
      return success();
    }
    auto forwardCall = func::CallOp::create(
        emitter.getBuilder(), call.getLoc(), functions->forward, operands);
    emitter.mapResults(call, forwardCall.getResults().take_front(numResults));
    // A residual that is one of the callee's own arguments is the call's
    // operand: the caller keeps that (often an argument of its own, or
    // invariant in its loops) rather than the result.
    SmallVector<Value> residuals(forwardCall.getResults().drop_front(numResults));
    Region &body = functions->forward.getBody();
    auto returnOp = body.hasOneBlock() && !body.front().empty()
                        ? dyn_cast<func::ReturnOp>(body.front().back())
                        : func::ReturnOp();
    if (returnOp && returnOp.getNumOperands() == forwardCall.getNumResults())
      for (auto [residual, returned] : llvm::zip(
               residuals, returnOp.getOperands().drop_front(numResults))) {
        auto argument = dyn_cast<BlockArgument>(returned);
        if (argument && argument.getOwner() == &body.front())
          residual = operands[argument.getArgNumber()];
      }
    emitter.setResiduals(call, residuals);
    return success();
  }

  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto call = cast<func::CallOp>(op);
    FailureOr<DerivativeFunctions> functions =
        lookupCalleeDerivative(call, emitter);
    if (failed(functions))
      return failure();
    if (isCheckpointed(call, *functions, emitter))
      return emitCheckpointedReverse(call, *functions, emitter);
    bool recursive = isRecursive(call, *functions, emitter);
    bool shared = !recursive && functions->recursiveForward &&
                  emitter.usesSharedTape(call);
    SmallVector<Value> operands;
    if (recursive || (shared && emitter.inRecursion()))
      operands.push_back(emitter.getRecursionTape());
    else if (shared)
      operands.push_back(emitter.getGrowableTape(call));
    llvm::append_range(operands, emitter.getResiduals(call));
    // The recursive pullback adds its tensor gradients to the cotangents
    // accumulated so far, which it takes. An operand passed at two threaded
    // positions has its cotangent threaded through the first; the others
    // start at zero and are added.
    llvm::SmallBitVector isThreaded(functions->wrt.size());
    if (recursive || shared) {
      for (unsigned position : functions->invariants)
        operands.push_back(emitter.getPrimal(call.getOperand(position)));
      DenseSet<Value> seen;
      for (unsigned index : functions->threaded) {
        Value operand = call.getOperand(functions->wrt[index]);
        if (seen.insert(operand).second) {
          isThreaded.set(index);
          operands.push_back(emitter.getCotangent(operand));
        } else {
          auto type = cast<RankedTensorType>(operand.getType());
          operands.push_back(createZerosLike(
              emitter.getBuilder(), call.getLoc(), type,
              type.hasStaticShape() ? Value() : emitter.getPrimalShape(operand)));
        }
      }
    }
    for (Value result : call.getResults())
      if (isDifferentiableType(result.getType()))
        operands.push_back(emitter.getCotangent(result));
    auto pullbackCall = func::CallOp::create(
        emitter.getBuilder(), call.getLoc(),
        recursive || shared ? functions->recursivePullback
                            : functions->pullback,
        operands);
    for (auto [index, position, gradient] : llvm::enumerate(
             functions->wrt, pullbackCall.getResults())) {
      Value operand = call.getOperand(position);
      if (isThreaded.test(index))
        emitter.setCotangent(operand, gradient);
      else
        emitter.addCotangent(operand, gradient);
    }
    return success();
  }
};

/// Forward mode: the callee's tangent function with respect to the active
/// operands, called with their tangents; it returns the results and a
/// tangent per float result. Recursion needs nothing more: the tangent
/// function of a recursive callee calls itself.
struct CallTangentRule
    : TangentRuleOpInterface::ExternalModel<CallTangentRule, func::CallOp> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    auto call = cast<func::CallOp>(op);
    func::FuncOp callee = emitter.lookupCallee(call);
    if (!callee)
      return emitter.emitError(op, "cannot differentiate this call: its "
                                   "callee is not a func.func of the module");
    SmallVector<int64_t> varied = getVariedPositions(call, emitter);
    OpBuilder &builder = emitter.getBuilder();
    // A buffer the call returns, to which a differentiable value is written
    // later, gets its shadow from the callee's tangent function even when
    // no argument varies: the callee knows what it returns (a fresh buffer
    // gets a fresh shadow; a global, which other calls return too, is an
    // error there).
    bool returnsShadowed = llvm::any_of(call.getResults(), [&](Value result) {
      return isa<MemRefType>(result.getType()) && emitter.isActive(result);
    });
    if (varied.empty() && !returnsShadowed) {
      // Varied only through values that cannot carry a derivative (the
      // memory-write check reports those that could): zero tangents.
      if (failed(emitter.cloneOp(op)))
        return failure();
      for (Value result : call.getResults())
        if (emitter.isActive(result))
          emitter.setTangent(result,
                             createFilledLike(builder, call.getLoc(),
                                              emitter.lookup(result), 0.0));
      return success();
    }
    FailureOr<func::FuncOp> tangentFunction =
        emitter.getTangentFunction(callee, varied, call);
    if (failed(tangentFunction))
      return failure();
    SmallVector<Value> operands;
    for (Value operand : call.getOperands())
      operands.push_back(emitter.lookup(operand));
    for (int64_t position : getTangentPositions(callee, varied))
      operands.push_back(emitter.getTangent(call.getOperand(position)));
    auto tangentCall = func::CallOp::create(builder, call.getLoc(),
                                            *tangentFunction, operands);
    unsigned numResults = call.getNumResults();
    emitter.mapResults(call, tangentCall.getResults().take_front(numResults));
    unsigned next = numResults;
    for (Value result : call.getResults()) {
      if (!hasTangentType(result.getType()))
        continue;
      Value tangent = tangentCall.getResult(next++);
      if (emitter.isActive(result))
        emitter.setTangent(result, tangent);
    }
    return success();
  }
};

} // namespace

void mlir::ad::registerFuncReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, func::FuncDialect *) {
    func::CallOp::attachInterface<CallRule, CallTangentRule>(*context);
  });
}
