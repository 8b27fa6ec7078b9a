//===- ArithRules.cpp - reverse rules for the arith dialect -----*- C++ -*-===//
//
// Floating-point arith ops. Comparisons, integer and index ops have no rule:
// their results are never active, so no gradient flows through them.
// Constants are never active either.
//
//===----------------------------------------------------------------------===//

#include "ad/Rules/ElementwiseRule.h"
#include "ad/Rules/Rules.h"

#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::ad;

namespace {
using Ctx = ElementwiseContext;

Value addF(Ctx &c, unsigned) { return c.cotangent; }

Value subF(Ctx &c, unsigned index) {
  return index == 0 ? c.cotangent : c.b.neg(c.cotangent);
}

Value mulF(Ctx &c, unsigned index) {
  return c.b.mul(c.cotangent, c.x(1 - index));
}

// d(a/b) = da/b - (a/b) db/b
Value divF(Ctx &c, unsigned index) {
  if (index == 0)
    return c.b.div(c.cotangent, c.x(1));
  return c.b.neg(c.b.div(c.b.mul(c.cotangent, c.y()), c.x(1)));
}

Value negF(Ctx &c, unsigned) { return c.b.neg(c.cotangent); }

// remf(a, b) = a - b * trunc(a / b), with trunc piecewise constant.
Value remF(Ctx &c, unsigned index) {
  if (index == 0)
    return c.cotangent;
  Value quotient = c.b.create<math::TruncOp>(c.b.div(c.x(0), c.x(1)));
  return c.b.neg(c.b.mul(c.cotangent, quotient));
}

// max/min: the operand the result equals gets the cotangent; on ties (and
// whenever the result equals the first operand) it is the first one.
Value pickOperand(Ctx &c, unsigned index) {
  Value first = c.b.equal(c.y(), c.x(0));
  return index == 0 ? c.b.keepIf(first, c.cotangent)
                    : c.b.keepUnless(first, c.cotangent);
}

Value selectF(Ctx &c, unsigned index) {
  Value condition = c.x(0);
  return index == 1 ? c.b.keepIf(condition, c.cotangent)
                    : c.b.keepUnless(condition, c.cotangent);
}

Value extF(Ctx &c, unsigned) {
  return c.b.create<arith::TruncFOp>(c.op->getOperand(0).getType(),
                                     c.cotangent);
}

Value truncF(Ctx &c, unsigned) {
  return c.b.create<arith::ExtFOp>(c.op->getOperand(0).getType(), c.cotangent);
}

/// arith.select: elementwise on floats and tensors; on buffers (forward
/// mode) the select of the two shadows.
struct SelectTangentRule
    : TangentRuleOpInterface::ExternalModel<SelectTangentRule,
                                            arith::SelectOp> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    if (!isa<MemRefType>(op->getResult(0).getType()))
      return ElementwiseTangentRule<arith::SelectOp, selectF>().emitTangent(
          op, emitter);
    if (failed(emitter.cloneOp(op)))
      return failure();
    return emitLinearTangent(op, emitter);
  }
};

} // namespace

void mlir::ad::registerArithReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, arith::ArithDialect *) {
    attachElementwiseRule<arith::AddFOp, addF>(context);
    attachElementwiseRule<arith::SubFOp, subF>(context);
    attachElementwiseRule<arith::MulFOp, mulF>(context);
    attachElementwiseRule<arith::DivFOp, divF>(context);
    attachElementwiseRule<arith::NegFOp, negF>(context);
    attachElementwiseRule<arith::RemFOp, remF>(context);
    attachElementwiseRule<arith::MaximumFOp, pickOperand>(context);
    attachElementwiseRule<arith::MinimumFOp, pickOperand>(context);
    attachElementwiseRule<arith::MaxNumFOp, pickOperand>(context);
    attachElementwiseRule<arith::MinNumFOp, pickOperand>(context);
    arith::SelectOp::attachInterface<ElementwiseRule<arith::SelectOp, selectF>,
                                     SelectTangentRule>(*context);
    // Conversions change the type: their tangent is the conversion itself.
    arith::ExtFOp::attachInterface<ElementwiseRule<arith::ExtFOp, extF>,
                                   LinearTangentRule<arith::ExtFOp>>(*context);
    arith::TruncFOp::attachInterface<ElementwiseRule<arith::TruncFOp, truncF>,
                                     LinearTangentRule<arith::TruncFOp>>(
        *context);
    attachZeroDerivativeRules<arith::SIToFPOp, arith::UIToFPOp>(context);
  });
}
