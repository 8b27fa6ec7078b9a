//===- LinalgRules.cpp - reverse rules for linalg and tensor ----*- C++ -*-===//
//
// linalg.generic is differentiated at the tensor level: one adjoint generic
// per active input, over the same iteration space, with that input's
// indexing map on its output (dimensions the map drops become reductions;
// a map that is not a projected permutation, like a convolution's input,
// makes every dimension a reduction).
// Its body recomputes the original body and runs the scalar rules of its
// ops backwards. Named linalg ops reach this rule through upstream
// linalg-generalize-named-ops (ad-differentiate runs it).
//
// tensor.extract and tensor.insert move one element's cotangent; tensor.cast
// casts it back.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseRule.h"
#include "ad/Rules/Rules.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::ad;

namespace {

/// A tensor of `type` filled with zeros, shaped like `shapeSource`.
static Value zerosLike(OpBuilder &b, Location loc, RankedTensorType type,
                       Value shapeSource) {
  return createZerosLike(b, loc, type, shapeSource);
}

/// The reverse sweep over the scalar body of a linalg.generic, for the
/// derivative with respect to one block argument. Primal values are the
/// body's recomputation inside the adjoint generic.
class BodyReverseEmitter : public ReverseEmitter {
public:
  BodyReverseEmitter(OpBuilder &builder, IRMapping &mapping, Block &body,
                     BlockArgument wrt)
      : builder(builder), mapping(mapping) {
    SmallVector<Value> worklist = {wrt};
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      if (!varied.insert(value).second)
        continue;
      for (Operation *user : value.getUsers())
        if (user->getBlock() == &body)
          llvm::append_range(worklist, user->getResults());
    }
  }

  OpBuilder &getBuilder() override { return builder; }
  bool isActive(Value original) const override {
    return varied.contains(original) && isDifferentiableType(original.getType());
  }
  FailureOr<DerivativeFunctions> getDerivativeFunctions(func::FuncOp,
                                                        ArrayRef<int64_t>,
                                                        Operation *requester) override {
    return requester->emitError(
        "cannot differentiate a call inside a linalg.generic body");
  }
  bool isSameRecursion(func::FuncOp) override { return false; }

  Value getPrimal(Value original) override { return mapping.lookup(original); }
  SmallVector<Value> getResiduals(Operation *) override { return {}; }
  Value getCotangent(Value original) override {
    if (Value cotangent = cotangents.lookup(original))
      return cotangent;
    return createFilledConstant(builder, original.getLoc(), original.getType(),
                                0.0);
  }
  void addCotangent(Value original, Value contribution) override {
    if (!isActive(original))
      return;
    Value &slot = cotangents[original];
    slot = slot ? createCotangentAdd(builder, contribution.getLoc(), slot,
                                     contribution)
                : contribution;
  }
  Value lookupCotangent(Value original) override {
    return cotangents.lookup(original);
  }
  void setCotangent(Value original, Value cotangent) override {
    cotangents[original] = cotangent;
  }
  LogicalResult emitReverseOps(Block &original) override {
    for (Operation &op : llvm::reverse(original.without_terminator())) {
      bool hasCotangent = llvm::any_of(op.getResults(), [&](Value result) {
        return cotangents.contains(result);
      });
      if (!hasCotangent ||
          llvm::none_of(op.getResults(),
                        [&](Value result) { return isActive(result); }))
        continue;
      auto rule = dyn_cast<ReverseRuleOpInterface>(op);
      if (!rule)
        return op.emitError() << "no derivative rule for '" << op.getName()
                              << "', whose result depends on a "
                                 "differentiated argument";
      if (failed(rule.emitReverse(*this)))
        return failure();
    }
    return success();
  }
  void mapPrimal(Value original, Value pullbackValue) override {
    mapping.map(original, pullbackValue);
  }
  void beginLoop(Block *, Value, Value) override {}
  void endLoop(Block *) override {}
  void beginRows(Block *, Operation *, Value) override {}
  void endRows(Block *) override {}
  void resetCotangents(Block &) override {}
  Value getRecursionTape() override { return nullptr; }

private:
  OpBuilder &builder;
  IRMapping &mapping;
  llvm::DenseSet<Value> varied;
  DenseMap<Value, Value> cotangents;
};

/// Checks what the rule supports: every output block argument is either
/// unused (then no loop reduces) or only accumulated into, `out + expr`.
static LogicalResult checkAccumulatingOutputs(linalg::GenericOp generic) {
  Block &body = *generic.getBody();
  Operation *yield = body.getTerminator();
  bool reduces = llvm::any_of(generic.getIteratorTypesArray(), [](auto type) {
    return type == utils::IteratorType::reduction;
  });
  for (auto [index, output] :
       llvm::enumerate(generic.getRegionOutputArgs())) {
    if (output.use_empty()) {
      if (reduces)
        return generic.emitError(
            "cannot differentiate a reducing linalg.generic that overwrites "
            "its output");
      continue;
    }
    auto add = dyn_cast<arith::AddFOp>(*output.user_begin());
    if (!output.hasOneUse() || !add || !add->hasOneUse() ||
        yield->getOperand(index) != add.getResult())
      return generic.emitError(
          "cannot differentiate this linalg.generic yet: its output is "
          "combined with something other than a sum");
  }
  return success();
}

struct GenericRule
    : ReverseRuleOpInterface::ExternalModel<GenericRule, linalg::GenericOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto generic = cast<linalg::GenericOp>(op);
    if (!generic.hasPureTensorSemantics())
      return generic.emitError("cannot differentiate a linalg.generic on "
                               "buffers; differentiate before bufferization");
    if (failed(checkAccumulatingOutputs(generic)))
      return failure();
    OpBuilder &b = emitter.getBuilder();
    Location loc = generic.getLoc();
    Block &body = *generic.getBody();
    unsigned numInputs = generic.getNumDpsInputs();
    MLIRContext *context = generic.getContext();

    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(generic.getRegion(), captured);
    for (Value value : captured)
      if (emitter.isActive(value))
        return generic.emitError(
            "cannot differentiate this linalg.generic yet: its body reads an "
            "active value defined outside it");

    // Outputs that are accumulated into pass their cotangent to the init.
    SmallVector<Value> resultCotangents;
    for (auto [index, result] : llvm::enumerate(generic.getResults())) {
      Value cotangent = emitter.getCotangent(result);
      resultCotangents.push_back(cotangent);
      if (!generic.getRegionOutputArgs()[index].use_empty())
        emitter.addCotangent(generic.getDpsInits()[index], cotangent);
    }

    SmallVector<Value> inputs, capturedPrimals;
    for (Value input : generic.getDpsInputs())
      inputs.push_back(emitter.getPrimal(input));
    for (Value value : captured)
      capturedPrimals.push_back(emitter.getPrimal(value));
    SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    unsigned numLoops = generic.getNumLoops();

    for (unsigned k = 0; k < numInputs; ++k) {
      Value input = generic.getDpsInputs()[k];
      if (!emitter.isActive(input))
        continue;
      AffineMap inputMap = maps[k];
      // A map like a convolution's (d1 + d4) writes each element from
      // several iterations: the adjoint then accumulates sequentially.
      bool permutation = inputMap.isProjectedPermutation();
      auto tensorType = dyn_cast<RankedTensorType>(input.getType());
      RankedTensorType accType =
          tensorType ? tensorType : RankedTensorType::get({}, input.getType());
      AffineMap accMap =
          tensorType ? inputMap : AffineMap::get(numLoops, 0, {}, context);
      Value acc = zerosLike(b, loc, accType, tensorType ? inputs[k] : Value());

      // Loops the input's map drops are summed over.
      SmallVector<utils::IteratorType> iterators;
      for (unsigned dim = 0; dim < numLoops; ++dim)
        iterators.push_back(permutation && accMap.isFunctionOfDim(dim)
                                ? utils::IteratorType::parallel
                                : utils::IteratorType::reduction);
      SmallVector<AffineMap> adjointMaps(maps.begin(), maps.end());
      adjointMaps.push_back(accMap);
      SmallVector<Value> adjointInputs(inputs);
      llvm::append_range(adjointInputs, resultCotangents);

      bool bodyFailed = false;
      auto adjoint = linalg::GenericOp::create(
          b, loc, TypeRange{accType}, adjointInputs, ValueRange{acc},
          adjointMaps, iterators,
          [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
            bodyFailed = failed(buildAdjointBody(nested, nestedLoc, generic,
                                                 body, k, args, captured,
                                                 capturedPrimals));
          });
      if (bodyFailed)
        return failure();
      Value gradient = adjoint.getResult(0);
      if (!tensorType)
        gradient = tensor::ExtractOp::create(b, loc, gradient, ValueRange());
      emitter.addCotangent(input, gradient);
    }
    return success();
  }

  /// The body of the adjoint generic for input `k`: recompute the original
  /// body, run its scalar rules backwards from the result cotangents, and
  /// add the cotangent of block argument `k` to the accumulator.
  static LogicalResult buildAdjointBody(OpBuilder &b, Location loc,
                                        linalg::GenericOp generic, Block &body,
                                        unsigned k, ValueRange args,
                                        const llvm::SetVector<Value> &captured,
                                        ArrayRef<Value> capturedPrimals) {
    unsigned numInputs = generic.getNumDpsInputs();
    unsigned numOutputs = generic.getNumDpsInits();
    IRMapping mapping;
    for (unsigned i = 0; i < numInputs; ++i)
      mapping.map(body.getArgument(i), args[i]);
    // Output arguments only feed the accumulating additions, whose results
    // the adjoint does not need.
    for (BlockArgument output : generic.getRegionOutputArgs())
      mapping.map(output, arith::ConstantOp::create(
                              b, loc, cast<TypedAttr>(b.getZeroAttr(
                                          output.getType()))));
    for (auto [value, primal] : llvm::zip(captured, capturedPrimals))
      mapping.map(value, primal);
    for (Operation &op : body.without_terminator())
      b.clone(op, mapping);

    BodyReverseEmitter reverse(b, mapping, body, body.getArgument(k));
    Operation *yield = body.getTerminator();
    for (unsigned j = 0; j < numOutputs; ++j)
      reverse.addCotangent(yield->getOperand(j), args[numInputs + j]);
    if (failed(reverse.emitReverseOps(body)))
      return failure();
    Value accumulated = args.back();
    Value contribution = reverse.lookupCotangent(body.getArgument(k));
    if (contribution)
      accumulated = arith::AddFOp::create(b, loc, accumulated, contribution);
    linalg::YieldOp::create(b, loc, accumulated);
    return success();
  }
};

/// tensor.extract: the element's cotangent goes to its position.
struct ExtractRule
    : ReverseRuleOpInterface::ExternalModel<ExtractRule, tensor::ExtractOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto extract = cast<tensor::ExtractOp>(op);
    if (!emitter.isActive(extract.getTensor()))
      return success();
    OpBuilder &b = emitter.getBuilder();
    Location loc = extract.getLoc();
    Value source = emitter.getPrimal(extract.getTensor());
    SmallVector<Value> indices;
    for (Value index : extract.getIndices())
      indices.push_back(emitter.getPrimal(index));
    Value zeros = zerosLike(b, loc, extract.getTensor().getType(), source);
    Value cotangent = tensor::InsertOp::create(
        b, loc, emitter.getCotangent(extract.getResult()), zeros, indices);
    emitter.addCotangent(extract.getTensor(), cotangent);
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

} // namespace

void mlir::ad::registerLinalgReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    linalg::GenericOp::attachInterface<GenericRule>(*context);
  });
  registry.addExtension(+[](MLIRContext *context, tensor::TensorDialect *) {
    tensor::ExtractOp::attachInterface<ExtractRule>(*context);
    tensor::InsertOp::attachInterface<InsertRule>(*context);
    tensor::CastOp::attachInterface<CastRule>(*context);
  });
}
