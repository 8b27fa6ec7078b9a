//===- Sweep.h - what both sweeps share -------------------------*- C++ -*-===//
//
// The base of the forward and reverse sweeps that DerivativeGenerator runs
// over one function, and what a branch op carries out for the pullback. The
// tape storage strategies are in TapeStorage.h. Private to lib/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_TRANSFORMS_SWEEP_H
#define AD_LIB_TRANSFORMS_SWEEP_H

#include "TapeStorage.h"

#include "ad/IR/ADDialect.h"
#include "ad/IR/TapeUtils.h"
#include "ad/Transforms/ActivityAnalysis.h"
#include "ad/Transforms/DerivativeGenerator.h"
#include "ad/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::ad::sweeps {

/// What both sweeps answer the same way: a builder appending to the body of
/// the function being emitted, activity, and derivatives of callees.
template <typename EmitterT>
class Sweep : public EmitterT {
public:
  Sweep(DerivativeGenerator &generator, const ActivityAnalysis &activity,
        func::FuncOp function, Block *body)
      : generator(generator), activity(activity), function(function),
        builder(OpBuilder::atBlockEnd(body)) {}

  OpBuilder &getBuilder() override { return builder; }
  bool isActive(Value original) const override {
    return activity.isActive(original);
  }
  bool isVaried(Value original) const override {
    return activity.isVaried(original);
  }
  FailureOr<DerivativeFunctions>
  getDerivativeFunctions(func::FuncOp callee, ArrayRef<int64_t> wrt,
                         Operation *requester) override {
    return generator.getOrCreate(callee, wrt, requester);
  }
  bool isSameRecursion(func::FuncOp callee) override {
    return generator.inSameRecursion(function, callee);
  }
  func::FuncOp lookupCallee(func::CallOp call) override {
    return generator.lookupFunction(call.getCalleeAttr());
  }
  bool isCheckpointed(func::CallOp call) override {
    return call->hasAttr(kCheckpointAttrName) &&
           generator.isCheckpointedLevel(function);
  }

protected:
  DerivativeGenerator &generator;
  const ActivityAnalysis &activity;
  /// The original function being differentiated.
  func::FuncOp function;
  OpBuilder builder;
};

/// Whether a branch op can carry a value of `type` out: scalars, ranked
/// tensors, and buffers with the identity layout (the tape of a recursive
/// callee).
static bool canCarryOut(Type type) {
  auto memrefType = dyn_cast<MemRefType>(type);
  return type.isIntOrIndexOrFloat() || isa<RankedTensorType>(type) ||
         (memrefType && memrefType.getLayout().isIdentity());
}

/// What a branch not taken yields for a value another branch carries out
/// (never read: the reverse sweep replays the branch taken): zero, or an
/// empty tensor or buffer (dynamic sizes zero).
static Value placeholderOf(OpBuilder &b, Location loc, Type type) {
  auto shapedType = dyn_cast<ShapedType>(type);
  if (!shapedType)
    return arith::ConstantOp::create(b, loc,
                                     cast<TypedAttr>(b.getZeroAttr(type)));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> sizes(shapedType.getNumDynamicDims(), zero);
  if (auto memrefType = dyn_cast<MemRefType>(type))
    return memref::AllocOp::create(b, loc, memrefType, sizes);
  return tensor::EmptyOp::create(b, loc, cast<RankedTensorType>(type), sizes);
}

} // namespace mlir::ad::sweeps

#endif // AD_LIB_TRANSFORMS_SWEEP_H
