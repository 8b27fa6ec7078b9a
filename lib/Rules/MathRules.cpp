//===- MathRules.cpp - reverse rules for the math dialect -------*- C++ -*-===//
//
// Floating-point math ops. Each partial is written in terms of the primal
// operand x and, where cheaper, the primal result y. Rounding ops have a
// zero derivative (they are piecewise constant).
//
//===----------------------------------------------------------------------===//

#include "ad/Rules/ElementwiseRule.h"
#include "ad/Rules/Rules.h"

#include "mlir/IR/DialectRegistry.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ad;

namespace {
using Ctx = ElementwiseContext;

constexpr double kLn2 = 0.693147180559945309417232121458176568;
constexpr double kLn10 = 2.30258509299404568401799145468436421;
constexpr double kTwoOverSqrtPi = 1.12837916709551257389615890312154517;

Value exp(Ctx &c, unsigned) { return c.b.mul(c.cotangent, c.y()); }
Value exp2(Ctx &c, unsigned) {
  return c.b.mul(c.cotangent, c.b.mul(c.y(), kLn2));
}
Value expm1(Ctx &c, unsigned) {
  return c.b.mul(c.cotangent, c.b.add(c.y(), 1.0));
}
Value log(Ctx &c, unsigned) { return c.b.div(c.cotangent, c.x()); }
Value log2(Ctx &c, unsigned) {
  return c.b.div(c.cotangent, c.b.mul(c.x(), kLn2));
}
Value log10(Ctx &c, unsigned) {
  return c.b.div(c.cotangent, c.b.mul(c.x(), kLn10));
}
Value log1p(Ctx &c, unsigned) {
  return c.b.div(c.cotangent, c.b.add(c.x(), 1.0));
}
// d sqrt(x) = 1 / (2 sqrt(x))
Value sqrt(Ctx &c, unsigned) {
  return c.b.div(c.b.mul(c.cotangent, 0.5), c.y());
}
// d x^(-1/2) = -x^(-1/2) / (2x)
Value rsqrt(Ctx &c, unsigned) {
  return c.b.mul(c.cotangent, c.b.div(c.b.mul(c.y(), -0.5), c.x()));
}
// d x^(1/3) = 1 / (3 y^2)
Value cbrt(Ctx &c, unsigned) {
  return c.b.div(c.cotangent, c.b.mul(c.b.square(c.y()), 3.0));
}
// sin and cos in forward mode (SinCosRule below is their reverse rule).
Value sin(Ctx &c, unsigned) {
  return c.b.mul(c.cotangent, c.b.create<math::CosOp>(c.x()));
}
Value cos(Ctx &c, unsigned) {
  return c.b.neg(c.b.mul(c.cotangent, c.b.create<math::SinOp>(c.x())));
}
Value tan(Ctx &c, unsigned) {
  return c.b.mul(c.cotangent, c.b.add(c.b.square(c.y()), 1.0));
}
/// 1 / sqrt(1 - x^2), shared by asin and acos.
Value inverseSqrtOneMinusSquare(Ctx &c) {
  return c.b.create<math::RsqrtOp>(c.b.rsub(1.0, c.b.square(c.x())));
}
Value asin(Ctx &c, unsigned) {
  return c.b.mul(c.cotangent, inverseSqrtOneMinusSquare(c));
}
Value acos(Ctx &c, unsigned) {
  return c.b.neg(c.b.mul(c.cotangent, inverseSqrtOneMinusSquare(c)));
}
Value atan(Ctx &c, unsigned) {
  return c.b.div(c.cotangent, c.b.add(c.b.square(c.x()), 1.0));
}
// atan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)
Value atan2(Ctx &c, unsigned index) {
  Value a = c.x(0), b = c.x(1);
  Value scaled =
      c.b.div(c.cotangent, c.b.add(c.b.square(a), c.b.square(b)));
  return index == 0 ? c.b.mul(scaled, b) : c.b.neg(c.b.mul(scaled, a));
}
Value sinh(Ctx &c, unsigned) {
  return c.b.mul(c.cotangent, c.b.create<math::CoshOp>(c.x()));
}
Value cosh(Ctx &c, unsigned) {
  return c.b.mul(c.cotangent, c.b.create<math::SinhOp>(c.x()));
}
Value tanh(Ctx &c, unsigned) {
  return c.b.mul(c.cotangent, c.b.rsub(1.0, c.b.square(c.y())));
}
Value asinh(Ctx &c, unsigned) {
  return c.b.mul(c.cotangent, c.b.create<math::RsqrtOp>(
                                  c.b.add(c.b.square(c.x()), 1.0)));
}
Value acosh(Ctx &c, unsigned) {
  return c.b.mul(c.cotangent, c.b.create<math::RsqrtOp>(
                                  c.b.add(c.b.square(c.x()), -1.0)));
}
Value atanh(Ctx &c, unsigned) {
  return c.b.div(c.cotangent, c.b.rsub(1.0, c.b.square(c.x())));
}
/// 2/sqrt(pi) * exp(-x^2), the derivative of erf.
Value erfDerivative(Ctx &c) {
  Value x = c.x();
  Value gaussian = c.b.create<math::ExpOp>(c.b.neg(c.b.square(x)));
  return c.b.mul(gaussian, kTwoOverSqrtPi);
}
Value erf(Ctx &c, unsigned) { return c.b.mul(c.cotangent, erfDerivative(c)); }
Value erfc(Ctx &c, unsigned) {
  return c.b.neg(c.b.mul(c.cotangent, erfDerivative(c)));
}
// powf(a, b): d/da = b a^(b-1) (finite at a = 0), d/db = y log(a), taken
// as 0 at a = 0 where y is 0 for b > 0.
Value powf(Ctx &c, unsigned index) {
  Value a = c.x(0), b = c.x(1);
  if (index == 0) {
    Value lowered = c.b.create<math::PowFOp>(a, c.b.add(b, -1.0));
    return c.b.mul(c.cotangent, c.b.mul(b, lowered));
  }
  Value safeBase = c.b.select(c.b.equal(a, c.b.constant(0.0, a)),
                              c.b.constant(1.0, a), a);
  Value logBase = c.b.create<math::LogOp>(safeBase);
  return c.b.mul(c.cotangent, c.b.mul(c.y(), logBase));
}
// fpowi(a, n) with integer n: d/da = n a^(n-1); n gets no cotangent.
Value fpowi(Ctx &c, unsigned index) {
  if (index != 0)
    return nullptr;
  Value a = c.x(0), n = c.x(1);
  Value one = createFilledLike(c.b.getBuilder(), c.b.getLoc(), n, 1.0);
  Value lowered =
      c.b.create<math::FPowIOp>(a, c.b.create<arith::SubIOp>(n, one));
  Value exponent = c.b.create<arith::SIToFPOp>(a.getType(), n);
  return c.b.mul(c.cotangent, c.b.mul(exponent, lowered));
}
Value absf(Ctx &c, unsigned) { return c.b.mul(c.cotangent, c.b.signOf(c.x())); }
// copysign(a, b) = |a| sign(b): d/da = sign(a) sign(b); b only sets a sign.
Value copysign(Ctx &c, unsigned index) {
  if (index != 0)
    return nullptr;
  Value signs = c.b.mul(c.b.signOf(c.x(0)), c.b.signOf(c.x(1)));
  return c.b.mul(c.cotangent, signs);
}
// fma(a, b, c) = a*b + c
Value fma(Ctx &c, unsigned index) {
  if (index == 2)
    return c.cotangent;
  return c.b.mul(c.cotangent, c.x(1 - index));
}

/// The reverse rule of sin (`Companion` cos) and of cos (`Companion` sin,
/// `Negate`d): the derivative of each is the other. For a scalar operand
/// defined below the entry block (in a loop, a branch, a recursion's
/// invocation) the forward function computes the companion next to the
/// operand and keeps it for the pullback in place of the operand, so that
/// LLVM computes both with one sincos call and the pullback calls neither (the pullback
/// of a recursion evaluated cos(x) again per invocation after the forward's
/// sin(x), which cost as much as the rest of its work). A tensor operand
/// is kept as it is and the pullback computes the companion (keeping both
/// would double the tape, and libmvec has no sincos variant we call).
template <typename OpT, typename Companion, bool Negate>
struct SinCosRule
    : ReverseRuleOpInterface::ExternalModel<SinCosRule<OpT, Companion, Negate>,
                                            OpT> {
  static bool keepsCompanion(Operation *op) {
    return isa<FloatType>(op->getOperand(0).getType());
  }
  static Value createCompanion(OpBuilder &b, Operation *op, Value x) {
    // The same attributes as the op (its fast-math flags).
    OperationState state(op->getLoc(), Companion::getOperationName(), {x},
                         {x.getType()}, op->getAttrs());
    return b.create(state)->getResult(0);
  }
  LogicalResult emitForward(Operation *op, ForwardEmitter &emitter) const {
    if (failed(emitter.cloneOp(op)))
      return failure();
    if (!keepsCompanion(op))
      return success();
    // An operand of the function's entry block is kept once (a caller keeps
    // the callee's argument as the call's operand; an invariant stays out
    // of loops): the pullback computes the companion from it, as for a
    // tensor. Elsewhere the companion is computed right after the operand,
    // so that it is kept exactly where the operand would have been (once
    // per iteration of the loop defining it, not of a loop around the op).
    // Generated functions have a single block.
    Value x = emitter.lookup(op->getOperand(0));
    if (isa<FunctionOpInterface>(x.getParentBlock()->getParentOp()))
      return success();
    OpBuilder at(op->getContext());
    at.setInsertionPointAfterValue(x);
    emitter.setResiduals(op, createCompanion(at, op, x));
    return success();
  }
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    Value x = op->getOperand(0);
    if (!emitter.isActive(x))
      return success();
    RuleBuilder b(emitter.getBuilder(), op->getLoc());
    // No residual in the body of a linalg op (whose emitter differentiates
    // the scalar ops of the body without a forward sweep).
    SmallVector<Value> residuals;
    if (keepsCompanion(op))
      residuals = emitter.getResiduals(op);
    Value derivative =
        residuals.empty()
            ? createCompanion(b.getBuilder(), op, emitter.getPrimal(x))
            : residuals.front();
    Value contribution =
        b.mul(emitter.getCotangent(op->getResult(0)), derivative);
    emitter.addCotangent(x, Negate ? b.neg(contribution) : contribution);
    return success();
  }
};

} // namespace

void mlir::ad::registerMathReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, math::MathDialect *) {
    attachElementwiseRule<math::ExpOp, exp>(context);
    attachElementwiseRule<math::Exp2Op, exp2>(context);
    attachElementwiseRule<math::ExpM1Op, expm1>(context);
    attachElementwiseRule<math::LogOp, log>(context);
    attachElementwiseRule<math::Log2Op, log2>(context);
    attachElementwiseRule<math::Log10Op, log10>(context);
    attachElementwiseRule<math::Log1pOp, log1p>(context);
    attachElementwiseRule<math::SqrtOp, sqrt>(context);
    attachElementwiseRule<math::RsqrtOp, rsqrt>(context);
    attachElementwiseRule<math::CbrtOp, cbrt>(context);
    math::SinOp::attachInterface<SinCosRule<math::SinOp, math::CosOp, false>,
                                 ElementwiseTangentRule<math::SinOp, sin>>(
        *context);
    math::CosOp::attachInterface<SinCosRule<math::CosOp, math::SinOp, true>,
                                 ElementwiseTangentRule<math::CosOp, cos>>(
        *context);
    attachElementwiseRule<math::TanOp, tan>(context);
    attachElementwiseRule<math::AsinOp, asin>(context);
    attachElementwiseRule<math::AcosOp, acos>(context);
    attachElementwiseRule<math::AtanOp, atan>(context);
    attachElementwiseRule<math::Atan2Op, atan2>(context);
    attachElementwiseRule<math::SinhOp, sinh>(context);
    attachElementwiseRule<math::CoshOp, cosh>(context);
    attachElementwiseRule<math::TanhOp, tanh>(context);
    attachElementwiseRule<math::AsinhOp, asinh>(context);
    attachElementwiseRule<math::AcoshOp, acosh>(context);
    attachElementwiseRule<math::AtanhOp, atanh>(context);
    attachElementwiseRule<math::ErfOp, erf>(context);
    attachElementwiseRule<math::ErfcOp, erfc>(context);
    attachElementwiseRule<math::PowFOp, powf>(context);
    attachElementwiseRule<math::FPowIOp, fpowi>(context);
    attachElementwiseRule<math::AbsFOp, absf>(context);
    attachElementwiseRule<math::CopySignOp, copysign>(context);
    attachElementwiseRule<math::FmaOp, fma>(context);
    attachZeroDerivativeRules<math::FloorOp, math::CeilOp, math::RoundOp, math::RoundEvenOp,
               math::TruncOp>(context);
  });
}
