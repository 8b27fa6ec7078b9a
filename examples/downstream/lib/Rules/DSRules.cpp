//===- DSRules.cpp - the external-model rule of ds.softplus -----*- C++ -*-===//
//
// A derivative rule given from outside the op, the way MLIR-AD gives the
// rules of upstream ops: a DialectRegistry extension attaches an
// ElementwiseRule to ds.softplus when the ds dialect is loaded.
//
//===----------------------------------------------------------------------===//

#include "ds/DSRules.h"
#include "ds/DSDialect.h"

#include "ad/Rules/ElementwiseRule.h"

#include "mlir/IR/DialectRegistry.h"

using namespace mlir;

namespace {

/// d softplus(x) = sigmoid(x) dx = dx / (1 + exp(-x)); exp(-x) overflowing
/// to +inf for very negative x gives the right limit, 0.
Value softplusContribution(ad::ElementwiseContext &c, unsigned) {
  Value expOfMinusX = c.b.create<math::ExpOp>(c.b.neg(c.x()));
  return c.b.div(c.cotangent, c.b.add(expOfMinusX, 1.0));
}

} // namespace

void ds::registerDSReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, DSDialect *) {
    ad::attachElementwiseRule<SoftplusOp, softplusContribution>(context);
  });
}
