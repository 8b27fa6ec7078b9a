//===- MemRefTangentRules.cpp - forward mode through buffers ---*- C++ -*-===//
//
// Forward mode follows values through memory with shadow buffers: a buffer
// of floats that may hold a differentiable value (ActivityAnalysis with
// followsMemory) has a shadow of the same type, allocated and zeroed with
// it, and every op on the buffer does the same on the shadow. Loads,
// stores, copies and views are linear in (value, buffer) taken together,
// so their tangent is the op itself on the tangents and shadows. This is
// what lets forward mode run over a generated pullback, whose tapes are
// buffers: forward over reverse.
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADInterfaces.h"
#include "ad/IR/TapeUtils.h"
#include "ad/Rules/ElementwiseRule.h"
#include "ad/Rules/Rules.h"
#include "ad/Rules/ShadowBuffers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::ad;

/// Fills `buffer` with zeros.
static void fillWithZeros(OpBuilder &b, Location loc, Value buffer) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
  linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{buffer});
}

/// `type` with the identity layout.
static MemRefType withIdentityLayout(MemRefType type) {
  return MemRefType::get(type.getShape(), type.getElementType(),
                         MemRefLayoutAttrInterface(), type.getMemorySpace());
}

bool mlir::ad::canCreateZeroShadow(MemRefType type) {
  return type.getLayout().isIdentity() ||
         memref::CastOp::areCastCompatible(withIdentityLayout(type), type);
}

Value mlir::ad::createZeroShadow(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  assert(canCreateZeroShadow(type) && "no allocation reaches this layout");
  SmallVector<Value> sizes;
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    if (type.isDynamicDim(dim))
      sizes.push_back(memref::DimOp::create(b, loc, buffer, dim));
  Value shadow =
      memref::AllocOp::create(b, loc, withIdentityLayout(type), sizes);
  fillWithZeros(b, loc, shadow);
  if (shadow.getType() != type)
    shadow = memref::CastOp::create(b, loc, type, shadow);
  return shadow;
}

namespace {

/// memref.alloc and memref.alloca: a second allocation of the same kind and
/// size, zeroed (what is read before anything differentiable was written
/// has a zero tangent).
template <typename OpT>
struct AllocTangentRule
    : TangentRuleOpInterface::ExternalModel<AllocTangentRule<OpT>, OpT> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    if (failed(emitter.cloneOp(op)))
      return failure();
    OpBuilder &b = emitter.getBuilder();
    IRMapping operands;
    for (Value operand : op->getOperands())
      operands.map(operand, emitter.lookup(operand));
    Value shadow = b.clone(*op, operands)->getResult(0);
    fillWithZeros(b, op->getLoc(), shadow);
    emitter.setTangent(op->getResult(0), shadow);
    return success();
  }
};

/// memref.realloc: the shadow is reallocated to the same size, and the
/// elements it gains are zeroed.
struct ReallocTangentRule
    : TangentRuleOpInterface::ExternalModel<ReallocTangentRule,
                                            memref::ReallocOp> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    auto realloc = cast<memref::ReallocOp>(op);
    OpBuilder &b = emitter.getBuilder();
    Location loc = realloc.getLoc();
    Value source = emitter.getTangent(realloc.getSource());
    // Read before either reallocation invalidates the source.
    Value oldSize = memref::DimOp::create(b, loc, source, 0);
    if (failed(emitter.cloneOp(op)))
      return failure();
    IRMapping operands;
    operands.map(realloc.getSource(), source);
    if (Value size = realloc.getDynamicResultSize())
      operands.map(size, emitter.lookup(size));
    Value shadow = b.clone(*op, operands)->getResult(0);
    Value newSize = memref::DimOp::create(b, loc, shadow, 0);
    Value kept = arith::MinUIOp::create(b, loc, oldSize, newSize);
    Value gained = arith::SubIOp::create(b, loc, newSize, kept);
    Value tail = memref::SubViewOp::create(
        b, loc, shadow, ArrayRef<OpFoldResult>{kept},
        ArrayRef<OpFoldResult>{gained}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    fillWithZeros(b, loc, tail);
    emitter.setTangent(realloc.getResult(), shadow);
    return success();
  }
};

/// memref.copy into a buffer with a shadow: the source's shadow is copied,
/// or zeros when the source has none (holds nothing differentiable).
struct CopyTangentRule
    : TangentRuleOpInterface::ExternalModel<CopyTangentRule, memref::CopyOp> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    auto copy = cast<memref::CopyOp>(op);
    if (failed(emitter.cloneOp(op)))
      return failure();
    OpBuilder &b = emitter.getBuilder();
    Value target = emitter.getTangent(copy.getTarget());
    if (emitter.isActive(copy.getSource()))
      memref::CopyOp::create(b, copy.getLoc(),
                             emitter.getTangent(copy.getSource()), target);
    else
      fillWithZeros(b, copy.getLoc(), target);
    return success();
  }
};

/// memref.load: the load of the shadow; from a buffer without one (nothing
/// differentiable was written to it; the value varies only through the
/// index: a table lookup), zero.
struct LoadTangentRule
    : TangentRuleOpInterface::ExternalModel<LoadTangentRule, memref::LoadOp> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    auto load = cast<memref::LoadOp>(op);
    if (emitter.isActive(load.getMemRef())) {
      if (failed(emitter.cloneOp(op)))
        return failure();
      return emitLinearTangent(op, emitter);
    }
    if (failed(emitter.cloneOp(op)))
      return failure();
    emitter.setTangent(load.getResult(),
                       createFilledLike(emitter.getBuilder(), load.getLoc(),
                                        emitter.lookup(load.getResult()), 0.0));
    return success();
  }
};

/// Reverse mode does not follow buffers: a load whose value varies only
/// through its index (a table lookup) has no derivative; from a buffer
/// holding a varied value it is an error (reverse mode reports the writes
/// of such values, so only a buffer made from a varied tensor gets here).
struct LoadReverseRule
    : ReverseRuleOpInterface::ExternalModel<LoadReverseRule, memref::LoadOp> {
  LogicalResult emitForward(Operation *op, ForwardEmitter &emitter) const {
    auto load = cast<memref::LoadOp>(op);
    if (emitter.isVaried(load.getMemRef()))
      return op->emitError("cannot differentiate a load from a buffer that "
                           "holds a value depending on a differentiated "
                           "argument in reverse mode (differentiate before "
                           "bufferization)");
    return emitter.cloneOp(op);
  }
  LogicalResult emitReverse(Operation *, ReverseEmitter &) const {
    return success();
  }
};

/// The arith.bitcast of an integer into an f64 tape slot (marked with
/// kTapeSlotAttrName): the slot is only decoded back into the integer, so
/// its tangent is zero. Any other bitcast into a float has no rule: the
/// integer may hold a float's bits, whose derivative this does not follow.
struct BitcastTangentRule
    : TangentRuleOpInterface::ExternalModel<BitcastTangentRule,
                                            arith::BitcastOp> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    if (!op->hasAttr(kTapeSlotAttrName))
      return emitter.emitError(op, "no tangent rule for 'arith.bitcast', "
                                   "whose result depends on a "
                                   "differentiated argument");
    if (failed(emitter.cloneOp(op)))
      return failure();
    emitter.setTangent(op->getResult(0),
                       createFilledLike(emitter.getBuilder(), op->getLoc(),
                                        emitter.lookup(op->getResult(0)),
                                        0.0));
    return success();
  }
};

/// An atomic update of a buffer of integers (the row count a growable
/// tape's creator remembers in a global, see createGrowableTape) carries
/// no derivative: it runs as is. One of floats would need its shadow
/// updated atomically too, which forward mode does not do.
struct AtomicRMWTangentRule
    : TangentRuleOpInterface::ExternalModel<AtomicRMWTangentRule,
                                            memref::AtomicRMWOp> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    auto atomic = cast<memref::AtomicRMWOp>(op);
    if (!atomic.getValue().getType().isIntOrIndex())
      return emitter.emitError(op, "no tangent rule for 'memref.atomic_rmw' "
                                   "of floats, whose buffer holds a value "
                                   "that depends on a differentiated "
                                   "argument");
    return emitter.cloneOp(op);
  }
};

} // namespace

void mlir::ad::registerMemRefTangentRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, memref::MemRefDialect *) {
    memref::AllocOp::attachInterface<AllocTangentRule<memref::AllocOp>>(
        *context);
    memref::AllocaOp::attachInterface<AllocTangentRule<memref::AllocaOp>>(
        *context);
    memref::ReallocOp::attachInterface<ReallocTangentRule>(*context);
    memref::AtomicRMWOp::attachInterface<AtomicRMWTangentRule>(*context);
    memref::CopyOp::attachInterface<CopyTangentRule>(*context);
    memref::LoadOp::attachInterface<LoadTangentRule, LoadReverseRule>(
        *context);
    attachLinearTangentRules<
        memref::StoreOp, memref::DeallocOp, memref::SubViewOp,
        memref::CastOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
        memref::ReinterpretCastOp, memref::TransposeOp>(context);
  });
  registry.addExtension(
      +[](MLIRContext *context, bufferization::BufferizationDialect *) {
        attachLinearTangentRules<bufferization::ToTensorOp,
                                 bufferization::MaterializeInDestinationOp>(
            context);
      });
  registry.addExtension(+[](MLIRContext *context, arith::ArithDialect *) {
    arith::BitcastOp::attachInterface<BitcastTangentRule>(*context);
  });
}
