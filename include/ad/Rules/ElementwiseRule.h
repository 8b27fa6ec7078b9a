//===- ElementwiseRule.h - building blocks for derivative rules -*- C++ -*-===//
//
// Public API for writing reverse rules (ReverseRuleOpInterface models) of
// ops whose operands' cotangents are the result's cotangent times a partial
// derivative: the rules of arith and math are written with it, and so can
// the rules of a downstream dialect's ops. ElementwiseRule turns one
// function per op into a model; RuleBuilder keeps the arithmetic short and
// type-generic (float scalars and ranked tensors of floats alike).
//
//===----------------------------------------------------------------------===//

#ifndef AD_RULES_ELEMENTWISERULE_H
#define AD_RULES_ELEMENTWISERULE_H

#include "ad/IR/ADInterfaces.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::ad {

/// Emits arithmetic on cotangents and primal values at one location. Every
/// operation accepts float scalars and ranked tensors of floats (arith and
/// math ops on tensors are elementwise); constants take their shape from a
/// value, so dynamically shaped tensors work too.
class RuleBuilder {
public:
  /// Emits with `builder` (at its insertion point), locating ops at `loc`.
  RuleBuilder(OpBuilder &builder, Location loc) : builder(builder), loc(loc) {}

  /// A constant shaped like `like` with every element `value`.
  Value constant(double value, Value like) {
    return createFilledLike(builder, loc, like, value);
  }
  /// `lhs + rhs` (arith.addf).
  Value add(Value lhs, Value rhs) {
    return arith::AddFOp::create(builder, loc, lhs, rhs);
  }
  /// `lhs - rhs` (arith.subf).
  Value sub(Value lhs, Value rhs) {
    return arith::SubFOp::create(builder, loc, lhs, rhs);
  }
  /// `lhs * rhs` (arith.mulf).
  Value mul(Value lhs, Value rhs) {
    return arith::MulFOp::create(builder, loc, lhs, rhs);
  }
  /// `lhs / rhs` (arith.divf).
  Value div(Value lhs, Value rhs) {
    return arith::DivFOp::create(builder, loc, lhs, rhs);
  }
  /// `-value` (arith.negf).
  Value neg(Value value) { return arith::NegFOp::create(builder, loc, value); }
  /// `value * factor`, the constant shaped like `value`.
  Value mul(Value value, double factor) {
    return mul(value, constant(factor, value));
  }
  /// `value + term`, the constant shaped like `value`.
  Value add(Value value, double term) {
    return add(value, constant(term, value));
  }
  /// `term - value`.
  Value rsub(double term, Value value) {
    return sub(constant(term, value), value);
  }
  /// `value * value`.
  Value square(Value value) { return mul(value, value); }
  /// `lhs == rhs` as an i1 (or a tensor of i1), false when either is NaN.
  Value equal(Value lhs, Value rhs) {
    return arith::CmpFOp::create(builder, loc, arith::CmpFPredicate::OEQ, lhs,
                                 rhs);
  }
  /// `condition ? onTrue : onFalse` (arith.select, elementwise on tensors).
  Value select(Value condition, Value onTrue, Value onFalse) {
    return arith::SelectOp::create(builder, loc, condition, onTrue, onFalse);
  }
  /// `value` where `condition` holds, zero elsewhere.
  Value keepIf(Value condition, Value value) {
    return select(condition, value, constant(0.0, value));
  }
  /// `value` where `condition` fails, zero elsewhere.
  Value keepUnless(Value condition, Value value) {
    return select(condition, constant(0.0, value), value);
  }
  /// +1 or -1 with the sign bit of `value` (so -0.0 gives -1).
  Value signOf(Value value) {
    return math::CopySignOp::create(builder, loc, constant(1.0, value), value);
  }
  /// Any other op: `OpT::create(builder, loc, args...)`, returning its
  /// single result (for example `create<math::ExpOp>(x)`).
  template <typename OpT, typename... Args>
  Value create(Args &&...args) {
    return OpT::create(builder, loc, std::forward<Args>(args)...);
  }

  /// The underlying builder, for ops with several results or regions.
  OpBuilder &getBuilder() { return builder; }
  /// The location every op is created at.
  Location getLoc() { return loc; }

private:
  OpBuilder &builder;
  Location loc;
};

/// What a partial-derivative function may read: primal operands and the
/// result (in reverse mode each read puts the value on the tape) and the
/// value to multiply by the partial derivative.
///
/// One function serves both modes. In reverse mode `cotangent` is the
/// cotangent of the result and the function returns operand `index`'s
/// contribution, `cotangent * dy/dx_index`; in forward mode `cotangent` is
/// the tangent of operand `index` and the same expression is that operand's
/// term of the result's tangent. This holds because the op is elementwise
/// and its operands and result have one type (dy/dx_index is a number per
/// element, so multiplying by it is its own transpose). Ops that change the
/// type (arith.extf) get rules of their own.
struct ElementwiseContext {
  /// Emits the contribution (into the pullback or the tangent function).
  RuleBuilder &b;
  /// The original op being differentiated.
  Operation *op;
  /// The cotangent of the op's (single) result in reverse mode, the tangent
  /// of operand `index` in forward mode.
  Value cotangent;
  /// The value standing for an original value where the rule emits.
  function_ref<Value(Value)> primal;

  /// Primal value of operand `index`.
  Value x(unsigned index = 0) { return primal(op->getOperand(index)); }
  /// Primal value of the (single) result.
  Value y() { return primal(op->getResult(0)); }
};

/// Returns the contribution for operand `index`, or null for none.
using ContributionFn = Value (*)(ElementwiseContext &, unsigned index);

/// The reverse model of a single-result op whose operands' cotangents are
/// given by `Contribution`, called once per active operand. The forward
/// sweep clones the op (the interface's default).
template <typename OpT, ContributionFn Contribution>
struct ElementwiseRule
    : ReverseRuleOpInterface::ExternalModel<ElementwiseRule<OpT, Contribution>,
                                            OpT> {
  /// Adds `Contribution(context, i)` to the cotangent of each active
  /// operand i.
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    RuleBuilder b(emitter.getBuilder(), op->getLoc());
    auto primal = [&](Value value) { return emitter.getPrimal(value); };
    ElementwiseContext context{b, op, emitter.getCotangent(op->getResult(0)),
                               primal};
    for (OpOperand &operand : op->getOpOperands()) {
      if (!emitter.isActive(operand.get()))
        continue;
      if (Value contribution = Contribution(context, operand.getOperandNumber()))
        emitter.addCotangent(operand.get(), contribution);
    }
    return success();
  }
};

/// The forward model of the same op: the result's tangent is the sum of
/// `Contribution(context, i)` over the active operands i, with the
/// context's `cotangent` set to operand i's tangent.
template <typename OpT, ContributionFn Contribution>
struct ElementwiseTangentRule
    : TangentRuleOpInterface::ExternalModel<
          ElementwiseTangentRule<OpT, Contribution>, OpT> {
  /// Clones the op, then sums the terms of its active operands.
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    if (failed(emitter.cloneOp(op)))
      return failure();
    RuleBuilder b(emitter.getBuilder(), op->getLoc());
    auto primal = [&](Value value) { return emitter.lookup(value); };
    Value tangent;
    for (OpOperand &operand : op->getOpOperands()) {
      // An operand without a tangent (inactive, or a block argument of a
      // rebuilt region that carries none) contributes nothing.
      Value operandTangent = emitter.lookupTangent(operand.get());
      if (!operandTangent)
        continue;
      ElementwiseContext context{b, op, operandTangent, primal};
      Value term = Contribution(context, operand.getOperandNumber());
      if (term)
        tangent = tangent ? b.add(tangent, term) : term;
    }
    if (!tangent)
      tangent = b.constant(0.0, emitter.lookup(op->getResult(0)));
    emitter.setTangent(op->getResult(0), tangent);
    return success();
  }
};

/// The model of an op whose derivative is zero wherever it exists
/// (floor, ceil, integer-to-float conversion): no cotangent flows back, and
/// the result's tangent is zero.
template <typename OpT>
struct ZeroDerivativeRule
    : ReverseRuleOpInterface::ExternalModel<ZeroDerivativeRule<OpT>, OpT> {
  /// Emits nothing: the operands receive no contribution.
  LogicalResult emitReverse(Operation *, ReverseEmitter &) const {
    return success();
  }
};

/// Forward half of ZeroDerivativeRule: clones the op, zero tangents.
template <typename OpT>
struct ZeroTangentRule
    : TangentRuleOpInterface::ExternalModel<ZeroTangentRule<OpT>, OpT> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    if (failed(emitter.cloneOp(op)))
      return failure();
    for (Value result : op->getResults())
      if (emitter.isActive(result))
        emitter.setTangent(result,
                           createFilledLike(emitter.getBuilder(), op->getLoc(),
                                            emitter.lookup(result), 0.0));
    return success();
  }
};

/// Emits `op` once more with each operand that has a tangent (hasTangentType:
/// a buffer's is its shadow) replaced by its tangent (others by their primal
/// values) and makes the copy's results the tangents of `op`'s active
/// results. Right for an op that is linear in those operands taken together
/// (tensor.insert, tensor.extract_slice, arith.extf, memref.load and
/// memref.store, views of buffers): its derivative is the op itself.
/// `op` must have no regions; its primal must have been emitted.
LogicalResult emitLinearTangent(Operation *op, TangentEmitter &emitter);

/// The forward model of an op linear in its differentiable operands (see
/// emitLinearTangent).
template <typename OpT>
struct LinearTangentRule
    : TangentRuleOpInterface::ExternalModel<LinearTangentRule<OpT>, OpT> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    if (failed(emitter.cloneOp(op)))
      return failure();
    return emitLinearTangent(op, emitter);
  }
};

/// Attaches LinearTangentRule to each of OpTs.
template <typename... OpTs>
void attachLinearTangentRules(MLIRContext *context) {
  (OpTs::template attachInterface<LinearTangentRule<OpTs>>(*context), ...);
}

/// Attaches ElementwiseRule<OpT, Fn> and ElementwiseTangentRule<OpT, Fn>
/// to OpT: reverse and forward mode from one function. Call it from a
/// DialectRegistry extension of OpT's dialect (the dialect must be loaded).
template <typename OpT, ContributionFn Fn>
void attachElementwiseRule(MLIRContext *context) {
  OpT::template attachInterface<ElementwiseRule<OpT, Fn>,
                                ElementwiseTangentRule<OpT, Fn>>(*context);
}

/// Attaches ZeroDerivativeRule and ZeroTangentRule to each of OpTs (same
/// requirement as attachElementwiseRule).
template <typename... OpTs>
void attachZeroDerivativeRules(MLIRContext *context) {
  (OpTs::template attachInterface<ZeroDerivativeRule<OpTs>,
                                  ZeroTangentRule<OpTs>>(*context),
   ...);
}

} // namespace mlir::ad

#endif // AD_RULES_ELEMENTWISERULE_H
