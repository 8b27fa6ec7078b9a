//===- TensorRules.cpp - reverse rules of the tensor ops --------*- C++ -*-===//
//
// Both modes' rules of the tensor ops. Reverse: cotangents move the way
// the op moves values: extract/insert and their slice forms, splat (sum),
// from_elements, generate, reshapes, cast, concat, pad; element regions
// (tensor.generate, the padding of tensor.pad) are differentiated by
// BodyReverseEmitter, like a linalg.generic body. Forward: ops that only
// move elements are linear; element regions get a tangent region.
//
//===----------------------------------------------------------------------===//

#include "BodyReverseEmitter.h"
#include "ad/Rules/ElementwiseRule.h"
#include "ad/Rules/RegionRuleUtils.h"
#include "ad/Rules/Rules.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::ad;

namespace {

/// tensor.extract: the element's cotangent goes to its position.
struct ExtractRule
    : ReverseRuleOpInterface::ExternalModel<ExtractRule, tensor::ExtractOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto extract = cast<tensor::ExtractOp>(op);
    if (!emitter.isActive(extract.getTensor()))
      return success();
    OpBuilder &b = emitter.getBuilder();
    Location loc = extract.getLoc();
    SmallVector<Value> indices;
    for (Value index : extract.getIndices())
      indices.push_back(emitter.getPrimal(index));
    Value element = emitter.getCotangent(extract.getResult());
    // An existing cotangent is updated in one element, not added to.
    if (Value existing = emitter.lookupCotangent(extract.getTensor())) {
      Value old = tensor::ExtractOp::create(b, loc, existing, indices);
      Value sum = arith::AddFOp::create(b, loc, old, element);
      emitter.setCotangent(extract.getTensor(), tensor::InsertOp::create(
                                                    b, loc, sum, existing,
                                                    indices));
      return success();
    }
    // The source is read (and taped) only for its dynamic sizes.
    auto type = cast<RankedTensorType>(extract.getTensor().getType());
    Value source = type.hasStaticShape()
                       ? Value()
                       : emitter.getPrimalShape(extract.getTensor());
    Value zeros = createZerosLike(b, loc, type, source);
    emitter.addCotangent(extract.getTensor(),
                         tensor::InsertOp::create(b, loc, element, zeros,
                                                  indices));
    return success();
  }
};

/// tensor.insert: the inserted scalar gets the element's cotangent, the
/// destination all the others.
struct InsertRule
    : ReverseRuleOpInterface::ExternalModel<InsertRule, tensor::InsertOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto insert = cast<tensor::InsertOp>(op);
    OpBuilder &b = emitter.getBuilder();
    Location loc = insert.getLoc();
    Value cotangent = emitter.getCotangent(insert.getResult());
    SmallVector<Value> indices;
    for (Value index : insert.getIndices())
      indices.push_back(emitter.getPrimal(index));
    if (emitter.isActive(insert.getScalar()))
      emitter.addCotangent(
          insert.getScalar(),
          tensor::ExtractOp::create(b, loc, cotangent, indices));
    if (emitter.isActive(insert.getDest())) {
      Value zero = arith::ConstantOp::create(
          b, loc, cast<TypedAttr>(b.getZeroAttr(insert.getScalar().getType())));
      emitter.addCotangent(insert.getDest(), tensor::InsertOp::create(
                                                 b, loc, zero, cotangent,
                                                 indices));
    }
    return success();
  }
};

/// `values` with each Value mapped to its primal in the pullback.
static SmallVector<OpFoldResult> primalsOf(ArrayRef<OpFoldResult> values,
                                           ReverseEmitter &emitter) {
  SmallVector<OpFoldResult> mapped;
  for (OpFoldResult value : values) {
    if (auto dynamic = dyn_cast<Value>(value))
      mapped.push_back(emitter.getPrimal(dynamic));
    else
      mapped.push_back(value);
  }
  return mapped;
}

/// The sum of all elements of `tensor`, as a scalar.
static Value sumAll(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Type element = type.getElementType();
  auto scalarType = RankedTensorType::get({}, element);
  Value init = createZerosLike(b, loc, scalarType, Value());
  MLIRContext *context = b.getContext();
  unsigned rank = type.getRank();
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, context),
                                 AffineMap::get(rank, 0, {}, context)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  auto sum = linalg::GenericOp::create(
      b, loc, TypeRange{scalarType}, ValueRange{tensor}, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value added = arith::AddFOp::create(nested, nestedLoc, args[1], args[0]);
        linalg::YieldOp::create(nested, nestedLoc, added);
      });
  return tensor::ExtractOp::create(b, loc, sum.getResult(0), ValueRange());
}

/// tensor.extract_slice: the slice's cotangent goes back where it came from.
struct ExtractSliceRule
    : ReverseRuleOpInterface::ExternalModel<ExtractSliceRule,
                                            tensor::ExtractSliceOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    OpBuilder &b = emitter.getBuilder();
    Location loc = slice.getLoc();
    Value source = emitter.getPrimalShape(slice.getSource());
    Value zeros = createZerosLike(b, loc, slice.getSourceType(), source);
    Value placed = tensor::InsertSliceOp::create(
        b, loc, emitter.getCotangent(slice.getResult()), zeros,
        primalsOf(slice.getMixedOffsets(), emitter),
        primalsOf(slice.getMixedSizes(), emitter),
        primalsOf(slice.getMixedStrides(), emitter));
    emitter.addCotangent(slice.getSource(), placed);
    return success();
  }
};

/// tensor.insert_slice: the slice's part of the cotangent goes to the
/// source, the rest to the destination.
struct InsertSliceRule
    : ReverseRuleOpInterface::ExternalModel<InsertSliceRule,
                                            tensor::InsertSliceOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    OpBuilder &b = emitter.getBuilder();
    Location loc = insert.getLoc();
    Value cotangent = emitter.getCotangent(insert.getResult());
    SmallVector<OpFoldResult> offsets =
        primalsOf(insert.getMixedOffsets(), emitter);
    SmallVector<OpFoldResult> sizes = primalsOf(insert.getMixedSizes(), emitter);
    SmallVector<OpFoldResult> strides =
        primalsOf(insert.getMixedStrides(), emitter);
    if (emitter.isActive(insert.getSource()))
      emitter.addCotangent(
          insert.getSource(),
          tensor::ExtractSliceOp::create(b, loc, insert.getSourceType(),
                                         cotangent, offsets, sizes, strides));
    if (emitter.isActive(insert.getDest())) {
      Value source = emitter.getPrimalShape(insert.getSource());
      Value zeros = createZerosLike(b, loc, insert.getSourceType(), source);
      emitter.addCotangent(insert.getDest(),
                           tensor::InsertSliceOp::create(b, loc, zeros,
                                                         cotangent, offsets,
                                                         sizes, strides));
    }
    return success();
  }
};

/// tensor.splat: the scalar gets the sum of the cotangent.
struct SplatRule
    : ReverseRuleOpInterface::ExternalModel<SplatRule, tensor::SplatOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto splat = cast<tensor::SplatOp>(op);
    emitter.addCotangent(splat.getInput(),
                         sumAll(emitter.getBuilder(), splat.getLoc(),
                                emitter.getCotangent(splat.getResult())));
    return success();
  }
};

/// tensor.from_elements: each scalar gets its element's cotangent.
struct FromElementsRule
    : ReverseRuleOpInterface::ExternalModel<FromElementsRule,
                                            tensor::FromElementsOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto fromElements = cast<tensor::FromElementsOp>(op);
    OpBuilder &b = emitter.getBuilder();
    Location loc = fromElements.getLoc();
    Value cotangent = emitter.getCotangent(fromElements.getResult());
    ArrayRef<int64_t> shape = fromElements.getType().getShape();
    for (auto [linear, element] :
         llvm::enumerate(fromElements.getElements())) {
      if (!emitter.isActive(element))
        continue;
      SmallVector<Value> indices(shape.size());
      int64_t rest = linear;
      for (int dim = shape.size() - 1; dim >= 0; --dim) {
        indices[dim] = arith::ConstantIndexOp::create(b, loc, rest % shape[dim]);
        rest /= shape[dim];
      }
      emitter.addCotangent(element,
                           tensor::ExtractOp::create(b, loc, cotangent, indices));
    }
    return success();
  }
};

/// tensor.expand_shape and tensor.collapse_shape: reshape the cotangent back.
struct ExpandShapeRule
    : ReverseRuleOpInterface::ExternalModel<ExpandShapeRule,
                                            tensor::ExpandShapeOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto expand = cast<tensor::ExpandShapeOp>(op);
    emitter.addCotangent(
        expand.getSrc(),
        tensor::CollapseShapeOp::create(
            emitter.getBuilder(), expand.getLoc(), expand.getSrcType(),
            emitter.getCotangent(expand.getResult()),
            expand.getReassociationIndices()));
    return success();
  }
};

struct CollapseShapeRule
    : ReverseRuleOpInterface::ExternalModel<CollapseShapeRule,
                                            tensor::CollapseShapeOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto collapse = cast<tensor::CollapseShapeOp>(op);
    OpBuilder &b = emitter.getBuilder();
    Location loc = collapse.getLoc();
    RankedTensorType sourceType = collapse.getSrcType();
    Value cotangent = emitter.getCotangent(collapse.getResult());
    SmallVector<ReassociationIndices> groups =
        collapse.getReassociationIndices();
    // With at most one dynamic size per group the sizes follow from the
    // cotangent's; otherwise they are read from the source. (Lowering an
    // expand_shape with two dynamic sizes in a group needs
    // ad-legalize-for-bufferization with LLVM 22.)
    bool inferable = llvm::all_of(groups, [&](const ReassociationIndices &g) {
      return llvm::count_if(g, [&](int64_t dim) {
               return sourceType.isDynamicDim(dim);
             }) <= 1;
    });
    Value expanded =
        inferable
            ? tensor::ExpandShapeOp::create(b, loc, sourceType, cotangent,
                                            groups)
            : tensor::ExpandShapeOp::create(
                  b, loc, sourceType, cotangent, groups,
                  tensor::getMixedSizes(b, loc,
                                        emitter.getPrimalShape(collapse.getSrc())));
    emitter.addCotangent(collapse.getSrc(), expanded);
    return success();
  }
};

/// tensor.concat: each input gets its slice of the cotangent.
struct ConcatRule
    : ReverseRuleOpInterface::ExternalModel<ConcatRule, tensor::ConcatOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto concat = cast<tensor::ConcatOp>(op);
    OpBuilder &b = emitter.getBuilder();
    Location loc = concat.getLoc();
    Value cotangent = emitter.getCotangent(concat.getResult());
    unsigned dim = concat.getDim();
    unsigned rank = concat.getResultType().getRank();
    OpFoldResult offset = b.getIndexAttr(0);
    for (Value input : concat.getInputs()) {
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(b, loc, emitter.getPrimalShape(input));
      SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
      offsets[dim] = offset;
      SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
      if (emitter.isActive(input))
        emitter.addCotangent(input, tensor::ExtractSliceOp::create(
                                        b, loc,
                                        cast<RankedTensorType>(input.getType()),
                                        cotangent, offsets, sizes, strides));
      Value size = getValueOrCreateConstantIndexOp(b, loc, sizes[dim]);
      offset = arith::AddIOp::create(
                   b, loc, getValueOrCreateConstantIndexOp(b, loc, offset), size)
                   .getResult();
    }
    return success();
  }
};

/// For a region that computes one element per position from its indices
/// (tensor.generate, the padding of tensor.pad): each active scalar the
/// region reads from outside gets, summed over the positions, the element's
/// derivative times the element's cotangent (one reduction generic per
/// scalar, recomputing the region). `computes`, when given, builds an i1
/// telling whether the region computes the element at a position (the
/// padding, not the source); other positions contribute exactly nothing.
static LogicalResult reverseElementRegion(
    Operation *op, Region &region, Value cotangent, ReverseEmitter &emitter,
    function_ref<Value(OpBuilder &, Location, ValueRange)> computes) {
  OpBuilder &b = emitter.getBuilder();
  Location loc = op->getLoc();
  MLIRContext *context = op->getContext();
  Block &body = region.front();
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(region, captured);
  SmallVector<Value> primals;
  for (Value value : captured)
    primals.push_back(emitter.getPrimal(value));
  unsigned rank = cast<RankedTensorType>(cotangent.getType()).getRank();
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(rank, context),
      AffineMap::get(rank, 0, {}, context)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  for (Value wrt : captured) {
    if (!emitter.isActive(wrt))
      continue;
    if (!isa<FloatType>(wrt.getType()))
      return op->emitError() << "cannot differentiate a " << op->getName()
                             << " whose body reads an active tensor yet";
    auto accType = RankedTensorType::get({}, wrt.getType());
    Value acc = createZerosLike(b, loc, accType, Value());
    bool bodyFailed = false;
    auto adjoint = linalg::GenericOp::create(
        b, loc, TypeRange{accType}, ValueRange{cotangent}, ValueRange{acc},
        maps, iterators,
        [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
          IRMapping mapping;
          SmallVector<Value> indices;
          for (unsigned dim = 0; dim < rank; ++dim)
            indices.push_back(linalg::IndexOp::create(nested, nestedLoc, dim));
          mapping.map(body.getArguments(), indices);
          for (auto [value, primal] : llvm::zip(captured, primals))
            mapping.map(value, primal);
          for (Operation &bodyOp : body.without_terminator())
            nested.clone(bodyOp, mapping);
          BodyReverseEmitter reverse(nested, mapping, body, wrt);
          reverse.addCotangent(body.getTerminator()->getOperand(0), args[0]);
          bodyFailed = failed(reverse.emitReverseOps(body));
          Value sum = args[1];
          if (Value contribution = reverse.lookupCotangent(wrt)) {
            // A select, not a product: the region may compute NaN or inf
            // where its element is not used.
            if (computes) {
              Value zero = arith::ConstantOp::create(
                  nested, nestedLoc,
                  nested.getFloatAttr(contribution.getType(), 0.0));
              contribution = arith::SelectOp::create(
                  nested, nestedLoc, computes(nested, nestedLoc, indices),
                  contribution, zero);
            }
            sum = arith::AddFOp::create(nested, nestedLoc, sum, contribution);
          }
          linalg::YieldOp::create(nested, nestedLoc, sum);
        });
    if (bodyFailed)
      return failure();
    emitter.addCotangent(wrt, tensor::ExtractOp::create(
                                  b, loc, adjoint.getResult(0), ValueRange()));
  }
  return success();
}

/// tensor.pad: the source gets the interior of the cotangent; scalars the
/// padding region reads (a constant padding value, or one computed per
/// position) get the contributions of the padded positions only.
struct PadRule
    : ReverseRuleOpInterface::ExternalModel<PadRule, tensor::PadOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto pad = cast<tensor::PadOp>(op);
    OpBuilder &b = emitter.getBuilder();
    Location loc = pad.getLoc();
    Value cotangent = emitter.getCotangent(pad.getResult());
    unsigned rank = pad.getSourceType().getRank();
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, loc, emitter.getPrimalShape(pad.getSource()));
    SmallVector<OpFoldResult> low = primalsOf(pad.getMixedLowPad(), emitter);
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    if (emitter.isActive(pad.getSource()))
      emitter.addCotangent(pad.getSource(),
                           tensor::ExtractSliceOp::create(
                               b, loc, pad.getSourceType(), cotangent, low,
                               sizes, strides));
    // A position is padding when some index is below its low padding or at
    // or past the end of the source.
    SmallVector<Value> lowValues, endValues;
    for (unsigned dim = 0; dim < rank; ++dim) {
      Value lowValue = getValueOrCreateConstantIndexOp(b, loc, low[dim]);
      lowValues.push_back(lowValue);
      endValues.push_back(arith::AddIOp::create(
          b, loc, lowValue,
          getValueOrCreateConstantIndexOp(b, loc, sizes[dim])));
    }
    auto isPadding = [&](OpBuilder &nested, Location nestedLoc,
                         ValueRange indices) -> Value {
      Value padding;
      for (unsigned dim = 0; dim < rank; ++dim) {
        Value below = arith::CmpIOp::create(nested, nestedLoc,
                                            arith::CmpIPredicate::ult,
                                            indices[dim], lowValues[dim]);
        Value past = arith::CmpIOp::create(nested, nestedLoc,
                                           arith::CmpIPredicate::uge,
                                           indices[dim], endValues[dim]);
        Value outside = arith::OrIOp::create(nested, nestedLoc, below, past);
        padding = padding ? arith::OrIOp::create(nested, nestedLoc, padding,
                                                 outside)
                          : outside;
      }
      return padding;
    };
    return reverseElementRegion(op, pad.getRegion(), cotangent, emitter,
                                isPadding);
  }
};

/// tensor.generate: scalars the body reads get their summed contributions.
struct GenerateRule
    : ReverseRuleOpInterface::ExternalModel<GenerateRule, tensor::GenerateOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto generate = cast<tensor::GenerateOp>(op);
    return reverseElementRegion(op, generate.getBody(),
                                emitter.getCotangent(generate.getResult()),
                                emitter, nullptr);
  }
};

/// tensor.reshape: reshape the cotangent back to the source's shape.
struct ReshapeRule
    : ReverseRuleOpInterface::ExternalModel<ReshapeRule, tensor::ReshapeOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto reshape = cast<tensor::ReshapeOp>(op);
    OpBuilder &b = emitter.getBuilder();
    Location loc = reshape.getLoc();
    auto sourceType = cast<RankedTensorType>(reshape.getSource().getType());
    auto shapeType = cast<RankedTensorType>(reshape.getShape().getType());
    Value source = emitter.getPrimalShape(reshape.getSource());
    SmallVector<Value> extents;
    for (OpFoldResult size : tensor::getMixedSizes(b, loc, source)) {
      Value extent = getValueOrCreateConstantIndexOp(b, loc, size);
      if (!shapeType.getElementType().isIndex())
        extent = arith::IndexCastOp::create(b, loc,
                                            shapeType.getElementType(), extent);
      extents.push_back(extent);
    }
    auto backShapeType = RankedTensorType::get(
        {(int64_t)extents.size()}, shapeType.getElementType());
    Value shape = tensor::FromElementsOp::create(b, loc, backShapeType, extents);
    emitter.addCotangent(
        reshape.getSource(),
        tensor::ReshapeOp::create(b, loc, sourceType,
                                  emitter.getCotangent(reshape.getResult()),
                                  shape));
    return success();
  }
};

/// tensor.cast only changes what is known of the shape: cast back.
struct CastRule
    : ReverseRuleOpInterface::ExternalModel<CastRule, tensor::CastOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto castOp = cast<tensor::CastOp>(op);
    Value cotangent = emitter.getCotangent(castOp.getResult());
    emitter.addCotangent(castOp.getSource(),
                         tensor::CastOp::create(emitter.getBuilder(),
                                                castOp.getLoc(),
                                                castOp.getSource().getType(),
                                                cotangent));
    return success();
  }
};


/// tensor.pad and tensor.generate: after the primal op, a second op of the
/// same kind, on the tangent of the source for a pad, whose region emits
/// the element's computation with its tangent rules and yields the
/// element's tangent.
template <typename OpT>
struct ElementRegionTangentRule
    : TangentRuleOpInterface::ExternalModel<ElementRegionTangentRule<OpT>,
                                            OpT> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    if (failed(emitter.cloneOp(op)))
      return failure();
    SmallVector<Value> operands;
    for (Value operand : op->getOperands())
      operands.push_back(isDifferentiableType(operand.getType())
                             ? emitter.getTangent(operand)
                             : emitter.lookup(operand));
    OpBuilder &b = emitter.getBuilder();
    Operation *tangentOp =
        createEmptyLike(b, op, operands, op->getResultTypes());
    Block &original = op->getRegion(0).front();
    SmallVector<Location> locations;
    for (BlockArgument argument : original.getArguments())
      locations.push_back(argument.getLoc());
    Block *target = b.createBlock(&tangentOp->getRegion(0), {},
                                  original.getArgumentTypes(), locations);
    b.setInsertionPointAfter(tangentOp);
    emitter.mapValues(original.getArguments(), target->getArguments());
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(target);
      if (failed(emitter.emitOps(original)))
        return failure();
      Operation *yield = original.getTerminator();
      tensor::YieldOp::create(b, yield->getLoc(),
                              emitter.getTangent(yield->getOperand(0)));
    }
    emitter.setTangent(op->getResult(0), tangentOp->getResult(0));
    return success();
  }
};

} // namespace

void mlir::ad::registerTensorRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, tensor::TensorDialect *) {
    tensor::ExtractOp::attachInterface<ExtractRule>(*context);
    tensor::InsertOp::attachInterface<InsertRule>(*context);
    tensor::CastOp::attachInterface<CastRule>(*context);
    tensor::ExtractSliceOp::attachInterface<ExtractSliceRule>(*context);
    tensor::InsertSliceOp::attachInterface<InsertSliceRule>(*context);
    tensor::SplatOp::attachInterface<SplatRule>(*context);
    tensor::FromElementsOp::attachInterface<FromElementsRule>(*context);
    tensor::ExpandShapeOp::attachInterface<ExpandShapeRule>(*context);
    tensor::CollapseShapeOp::attachInterface<CollapseShapeRule>(*context);
    tensor::ConcatOp::attachInterface<ConcatRule>(*context);
    tensor::PadOp::attachInterface<PadRule>(*context);
    tensor::GenerateOp::attachInterface<GenerateRule>(*context);
    tensor::ReshapeOp::attachInterface<ReshapeRule>(*context);
    // Sizes read from an active tensor (tensor.dim) make a tensor.empty
    // depend on it, but its contents are undefined: nothing flows back.
    attachZeroDerivativeRules<tensor::EmptyOp>(context);
    // Forward mode: ops that only move elements are linear (their tangent
    // is the op on the tangents); ops with an element region get a second
    // op whose region yields the element's tangent.
    attachLinearTangentRules<
        tensor::ExtractOp, tensor::InsertOp, tensor::CastOp,
        tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::SplatOp,
        tensor::FromElementsOp, tensor::ExpandShapeOp,
        tensor::CollapseShapeOp, tensor::ConcatOp, tensor::ReshapeOp>(
        context);
    tensor::PadOp::attachInterface<ElementRegionTangentRule<tensor::PadOp>>(
        *context);
    tensor::GenerateOp::attachInterface<
        ElementRegionTangentRule<tensor::GenerateOp>>(*context);
  });
}
