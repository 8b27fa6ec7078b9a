//===- ElementwiseRule.h - scaffolding for elementwise rules ----*- C++ -*-===//
//
// Most rules say: the cotangent of operand i is the result's cotangent times
// a partial derivative. ElementwiseRule turns one such function per op into
// a ReverseRuleOpInterface model; RuleBuilder keeps the arithmetic short and
// type-generic (scalars now, tensors elementwise later).
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_RULES_ELEMENTWISERULE_H
#define AD_LIB_RULES_ELEMENTWISERULE_H

#include "ad/IR/ADInterfaces.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::ad {

/// Emits arithmetic on cotangents at one location.
class RuleBuilder {
public:
  RuleBuilder(OpBuilder &builder, Location loc) : builder(builder), loc(loc) {}

  /// A constant shaped like `like` with every element `value`.
  Value constant(double value, Value like) {
    return createFilledLike(builder, loc, like, value);
  }
  Value add(Value lhs, Value rhs) {
    return arith::AddFOp::create(builder, loc, lhs, rhs);
  }
  Value sub(Value lhs, Value rhs) {
    return arith::SubFOp::create(builder, loc, lhs, rhs);
  }
  Value mul(Value lhs, Value rhs) {
    return arith::MulFOp::create(builder, loc, lhs, rhs);
  }
  Value div(Value lhs, Value rhs) {
    return arith::DivFOp::create(builder, loc, lhs, rhs);
  }
  Value neg(Value value) { return arith::NegFOp::create(builder, loc, value); }
  Value mul(Value value, double factor) {
    return mul(value, constant(factor, value));
  }
  Value add(Value value, double term) {
    return add(value, constant(term, value));
  }
  /// `term - value`.
  Value rsub(double term, Value value) {
    return sub(constant(term, value), value);
  }
  Value square(Value value) { return mul(value, value); }
  Value equal(Value lhs, Value rhs) {
    return arith::CmpFOp::create(builder, loc, arith::CmpFPredicate::OEQ, lhs,
                                 rhs);
  }
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
  template <typename OpT, typename... Args>
  Value create(Args &&...args) {
    return OpT::create(builder, loc, std::forward<Args>(args)...);
  }

  OpBuilder &getBuilder() { return builder; }
  Location getLoc() { return loc; }

private:
  OpBuilder &builder;
  Location loc;
};

/// What a partial-derivative function may read: primal operands and the
/// result (each read puts the value on the tape) and the result cotangent.
struct ElementwiseContext {
  RuleBuilder &b;
  ReverseEmitter &emitter;
  Operation *op;
  Value cotangent;

  /// Primal value of operand `index`.
  Value x(unsigned index = 0) { return emitter.getPrimal(op->getOperand(index)); }
  /// Primal value of the (single) result.
  Value y() { return emitter.getPrimal(op->getResult(0)); }
};

/// Returns the contribution to operand `index`'s cotangent, or null for none.
using ContributionFn = Value (*)(ElementwiseContext &, unsigned index);

/// The model of a single-result op whose operands' cotangents are given by
/// `Contribution`, called once per active operand.
template <typename OpT, ContributionFn Contribution>
struct ElementwiseRule
    : ReverseRuleOpInterface::ExternalModel<ElementwiseRule<OpT, Contribution>,
                                            OpT> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    RuleBuilder b(emitter.getBuilder(), op->getLoc());
    ElementwiseContext context{b, emitter, op,
                               emitter.getCotangent(op->getResult(0))};
    for (OpOperand &operand : op->getOpOperands()) {
      if (!emitter.isActive(operand.get()))
        continue;
      if (Value contribution = Contribution(context, operand.getOperandNumber()))
        emitter.addCotangent(operand.get(), contribution);
    }
    return success();
  }
};

/// The model of an op whose derivative is zero wherever it exists
/// (floor, ceil, integer-to-float conversion): no cotangent flows back.
template <typename OpT>
struct ZeroDerivativeRule
    : ReverseRuleOpInterface::ExternalModel<ZeroDerivativeRule<OpT>, OpT> {
  LogicalResult emitReverse(Operation *, ReverseEmitter &) const {
    return success();
  }
};

/// Attaches ElementwiseRule<OpT, Fn> to OpT.
template <typename OpT, ContributionFn Fn>
void attachElementwiseRule(MLIRContext *context) {
  OpT::template attachInterface<ElementwiseRule<OpT, Fn>>(*context);
}

/// Attaches ZeroDerivativeRule to each of OpTs.
template <typename... OpTs>
void attachZeroDerivativeRules(MLIRContext *context) {
  (OpTs::template attachInterface<ZeroDerivativeRule<OpTs>>(*context), ...);
}

} // namespace mlir::ad

#endif // AD_LIB_RULES_ELEMENTWISERULE_H
