//===- DSDialect.cpp - the ds dialect and the rule of ds.cube ---*- C++ -*-===//
//
// Registers the ds ops. ds.cube implements ReverseRuleOpInterface in ODS; its
// emitReverse is written here with MLIR-AD's public rule helpers.
//
//===----------------------------------------------------------------------===//

#include "ds/DSDialect.h"

#include "ad/Rules/ElementwiseRule.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace ds;

#include "ds/DSOpsDialect.cpp.inc"

void DSDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ds/DSOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "ds/DSOps.cpp.inc"

// d(x^3) = 3 x^2 dx. The forward sweep clones the op (the interface's
// default emitForward).
LogicalResult CubeOp::emitReverse(ad::ReverseEmitter &emitter) {
  ad::RuleBuilder b(emitter.getBuilder(), getLoc());
  Value x = emitter.getPrimal(getInput());
  Value slope = b.mul(b.square(x), 3.0);
  emitter.addCotangent(getInput(),
                       b.mul(emitter.getCotangent(getResult()), slope));
  return success();
}
