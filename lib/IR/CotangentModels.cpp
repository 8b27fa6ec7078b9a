//===- CotangentModels.cpp - cotangents of builtin types --------*- C++ -*-===//
//
// CotangentTypeInterface models for builtin float types and ranked tensors,
// and the helpers the rest of the project reaches them through.
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADInterfaces.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::ad;

#include "ad/IR/ADOpInterfaces.cpp.inc"
#include "ad/IR/ADTypeInterfaces.cpp.inc"

namespace {
/// A float scalar is its own cotangent space.
template <typename FloatT>
struct FloatCotangentModel
    : CotangentTypeInterface::ExternalModel<FloatCotangentModel<FloatT>,
                                            FloatT> {
  bool isDifferentiable(Type) const { return true; }

  Value createConstant(Type type, OpBuilder &builder, Location loc,
                       double value) const {
    return arith::ConstantOp::create(
        builder, loc, builder.getFloatAttr(type, value));
  }

  Value createZerosLike(Type type, OpBuilder &builder, Location loc,
                        Value) const {
    return createConstant(type, builder, loc, 0.0);
  }

  Value createAdd(Type, OpBuilder &builder, Location loc, Value lhs,
                  Value rhs) const {
    return arith::AddFOp::create(builder, loc, lhs, rhs);
  }
};

/// A ranked tensor of floats adds elementwise; constants are splats.
struct RankedTensorCotangentModel
    : CotangentTypeInterface::ExternalModel<RankedTensorCotangentModel,
                                            RankedTensorType> {
  bool isDifferentiable(Type type) const {
    return isa<FloatType>(cast<RankedTensorType>(type).getElementType());
  }

  Value createConstant(Type type, OpBuilder &builder, Location loc,
                       double value) const {
    auto tensorType = cast<RankedTensorType>(type);
    if (!tensorType.hasStaticShape())
      return nullptr;
    auto element = builder.getFloatAttr(tensorType.getElementType(), value);
    return arith::ConstantOp::create(
        builder, loc, DenseElementsAttr::get(tensorType, element.getValue()));
  }

  /// tensor.empty + linalg.fill: bufferizes into one zero-filled buffer
  /// that accumulation can then update in place.
  Value createZerosLike(Type type, OpBuilder &builder, Location loc,
                        Value like) const {
    auto tensorType = cast<RankedTensorType>(type);
    SmallVector<Value> dynamicSizes;
    for (auto [index, size] : llvm::enumerate(tensorType.getShape()))
      if (ShapedType::isDynamic(size))
        dynamicSizes.push_back(tensor::DimOp::create(builder, loc, like, index));
    Value empty = tensor::EmptyOp::create(builder, loc, tensorType, dynamicSizes);
    Value zero = arith::ConstantOp::create(
        builder, loc,
        cast<TypedAttr>(builder.getZeroAttr(tensorType.getElementType())));
    return linalg::FillOp::create(builder, loc, ValueRange{zero},
                                  ValueRange{empty})
        .getResult(0);
  }

  Value createAdd(Type, OpBuilder &builder, Location loc, Value lhs,
                  Value rhs) const {
    return arith::AddFOp::create(builder, loc, lhs, rhs);
  }
};
} // namespace

namespace mlir::ad {
/// Called from ADDialect::initialize.
void attachBuiltinCotangentModels(MLIRContext *context) {
  BFloat16Type::attachInterface<FloatCotangentModel<BFloat16Type>>(*context);
  Float16Type::attachInterface<FloatCotangentModel<Float16Type>>(*context);
  Float32Type::attachInterface<FloatCotangentModel<Float32Type>>(*context);
  Float64Type::attachInterface<FloatCotangentModel<Float64Type>>(*context);
  RankedTensorType::attachInterface<RankedTensorCotangentModel>(*context);
}
} // namespace mlir::ad

bool mlir::ad::isDifferentiableType(Type type) {
  auto cotangent = dyn_cast<CotangentTypeInterface>(type);
  return cotangent && cotangent.isDifferentiable();
}

bool mlir::ad::hasTangentType(Type type) {
  if (auto memref = dyn_cast<MemRefType>(type))
    return isa<FloatType>(memref.getElementType());
  return isDifferentiableType(type);
}

Value mlir::ad::createFilledConstant(OpBuilder &builder, Location loc,
                                     Type type, double value) {
  return cast<CotangentTypeInterface>(type).createConstant(builder, loc, value);
}

Value mlir::ad::createFilledLike(OpBuilder &builder, Location loc, Value like,
                                 double value) {
  Type type = like.getType();
  Type element = getElementTypeOrSelf(type);
  TypedAttr scalar =
      isa<FloatType>(element)
          ? TypedAttr(builder.getFloatAttr(element, value))
          : TypedAttr(builder.getIntegerAttr(element, int64_t(value)));
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return arith::ConstantOp::create(builder, loc, scalar);
  if (tensorType.hasStaticShape())
    return arith::ConstantOp::create(
        builder, loc, SplatElementsAttr::get(tensorType, scalar));
  Value empty = tensor::EmptyOp::create(
      builder, loc, tensor::getMixedSizes(builder, loc, like), element);
  Value filler = arith::ConstantOp::create(builder, loc, scalar);
  return linalg::FillOp::create(builder, loc, ValueRange{filler},
                                ValueRange{empty})
      .getResult(0);
}

Value mlir::ad::createZerosLike(OpBuilder &builder, Location loc, Type type,
                                Value like) {
  return cast<CotangentTypeInterface>(type).createZerosLike(builder, loc, like);
}

Value mlir::ad::createCotangentAdd(OpBuilder &builder, Location loc, Value lhs,
                                   Value rhs) {
  return cast<CotangentTypeInterface>(lhs.getType())
      .createAdd(builder, loc, lhs, rhs);
}
