//===- Sweep.h - what both sweeps share -------------------------*- C++ -*-===//
//
// The base of the forward and reverse sweeps that DerivativeGenerator runs
// over one function, and the helpers both use to store values on the tape:
// per iteration in buffers sized at loop entry, or in rows of a growable
// tape (while loops, recursion). Private to lib/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_TRANSFORMS_SWEEP_H
#define AD_LIB_TRANSFORMS_SWEEP_H

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

#include <numeric>

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

protected:
  DerivativeGenerator &generator;
  const ActivityAnalysis &activity;
  /// The original function being differentiated.
  func::FuncOp function;
  OpBuilder builder;
};

/// A forward loop body whose values may be stored per iteration.
struct ForwardLoopScope {
  /// Position of the current iteration among all iterations of the loop nest
  /// (defined at the start of the body).
  Value linearIndex;
  /// Number of iterations of the whole nest, defined in the forward entry
  /// block before the op that contains the loop.
  Value capacity;
};

/// The growable tape of one loop whose trip count is unknown at entry: rows
/// of `width` f64 slots, one row per iteration, doubled when full.
struct GrowableTape {
  /// Current forward values of the buffer and of the next free row.
  Value buffer, nextRow;
  /// Placeholders for the row width, set once the adjoint is complete.
  Operation *forwardWidth = nullptr, *pullbackWidth = nullptr;
  /// Slot of each forward value stored per row.
  llvm::MapVector<Value, unsigned> slots;
  /// Slots per row so far (a tensor takes one per element).
  unsigned width = 0;
  /// The pullback's value of the final buffer when it is an argument.
  Value pullbackBuffer;
  /// Every forward value the buffer took, in program order: a store goes to
  /// the buffer current where it is inserted (a call may have reallocated
  /// the one the row started with).
  SmallVector<Value> bufferHistory;
  /// Whether the rows are those of a recursive callee (a call's tape), whose
  /// width the generator sets.
  bool filledByRecursion = false;
};

/// A forward block whose values the adjoint reads from a row of a growable
/// tape.
struct ForwardRowScope {
  Operation *originalLoop = nullptr;
  Value row, buffer;
};

/// A builder right after both `value` and `anchor`, two values of one block
/// where `anchor` is defined at the block's start (an iteration index, a
/// tape): where a store of `value` can go.
static OpBuilder builderAfterBoth(Value value, Value anchor) {
  OpBuilder builder(value.getContext());
  Operation *def = value.getDefiningOp();
  Operation *anchorDef = anchor.getDefiningOp();
  if (!def || (anchorDef && anchorDef->getBlock() == def->getBlock() &&
               def->isBeforeInBlock(anchorDef)))
    builder.setInsertionPointAfterValue(anchor);
  else
    builder.setInsertionPointAfter(def);
  return builder;
}

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

/// How many f64 slots of a growable tape's row a value of `type` takes: one
/// for an index or a scalar of at most 64 bits (its bits, or its value
/// extended to f64), one per element for a statically shaped tensor of such
/// floats or of integers of at most 32 bits (exact in f64), none (it cannot
/// be stored there) otherwise.
static unsigned slotsFor(Type type) {
  if (type.isIndex() ||
      (type.isIntOrFloat() && type.getIntOrFloatBitWidth() <= 64))
    return 1;
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType || !tensorType.hasStaticShape())
    return 0;
  Type element = tensorType.getElementType();
  if ((isa<FloatType>(element) && element.getIntOrFloatBitWidth() <= 64) ||
      (element.isInteger() && element.getIntOrFloatBitWidth() <= 32))
    return tensorType.getNumElements();
  return 0;
}

/// The consecutive slots of growable tape `buffer` from `index` on, viewed
/// with `shape` (a tensor stored in a row).
static Value rowSlots(OpBuilder &b, Location loc, Value buffer, Value index,
                      ArrayRef<int64_t> shape) {
  int64_t count = ShapedType::getNumElements(shape);
  Value flat = memref::SubViewOp::create(
      b, loc, buffer, ArrayRef<OpFoldResult>{index},
      ArrayRef<OpFoldResult>{b.getIndexAttr(count)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  if (shape.size() == 1)
    return flat;
  if (shape.empty())
    return memref::CollapseShapeOp::create(b, loc, flat,
                                           ArrayRef<ReassociationIndices>{});
  ReassociationIndices all(shape.size());
  std::iota(all.begin(), all.end(), 0);
  return memref::ExpandShapeOp::create(b, loc, shape, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

/// The slice of per-iteration buffer `buffer` (a leading iteration
/// dimension, then a tensor's shape) that holds iteration `index`.
static Value iterationSlice(OpBuilder &b, Location loc, Value buffer,
                            Value index) {
  auto type = cast<MemRefType>(buffer.getType());
  ArrayRef<int64_t> shape = type.getShape().drop_front();
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  offsets[0] = index;
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)};
  for (int64_t size : shape)
    sizes.push_back(b.getIndexAttr(size));
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  MemRefType sliceType = memref::SubViewOp::inferRankReducedResultType(
      shape, type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, sliceType, buffer, offsets, sizes,
                                   strides);
}

} // namespace mlir::ad::sweeps

#endif // AD_LIB_TRANSFORMS_SWEEP_H
