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
// tensor ops move cotangents the way the op moves values: extract/insert
// and their slice forms, splat (sum), from_elements, generate, reshapes,
// cast, concat, pad.
//
//===----------------------------------------------------------------------===//

#include "ad/Rules/ElementwiseRule.h"
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
                     Value wrt)
      : builder(builder), mapping(mapping) {
    SmallVector<Value> worklist = {wrt};
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      if (!varied.insert(value).second)
        continue;
      // A use nested in a region op of the body varies that op.
      for (Operation *user : value.getUsers())
        if (Operation *inBody = body.findAncestorOpInBlock(*user))
          llvm::append_range(worklist, inBody->getResults());
    }
  }

  OpBuilder &getBuilder() override { return builder; }
  bool isActive(Value original) const override {
    return varied.contains(original) && isDifferentiableType(original.getType());
  }
  bool isVaried(Value original) const override {
    return varied.contains(original);
  }
  FailureOr<DerivativeFunctions> getDerivativeFunctions(func::FuncOp,
                                                        ArrayRef<int64_t>,
                                                        Operation *requester) override {
    return requester->emitError(
        "cannot differentiate a call inside a linalg.generic body");
  }
  bool isSameRecursion(func::FuncOp) override { return false; }
  bool inRecursion() override { return false; }
  // Bodies hold no calls (Preparation rewrites such generics as loops).
  bool usesSharedTape(func::CallOp) override { return false; }
  func::FuncOp lookupCallee(func::CallOp call) override {
    return SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
  }

  Value getPrimal(Value original) override { return mapping.lookup(original); }
  SmallVector<Value> getResiduals(Operation *) override { return {}; }
  Value getCotangent(Value original) override {
    if (Value cotangent = cotangents.lookup(original))
      return cotangent;
    return createFilledConstant(builder, original.getLoc(), original.getType(),
                                0.0);
  }
  void addCotangent(Value original, Value contribution) override {
    if (isActive(original))
      cotangents.add(builder, original, contribution);
  }
  Value lookupCotangent(Value original) override {
    return cotangents.lookup(original);
  }
  void setCotangent(Value original, Value cotangent) override {
    cotangents.set(original, cotangent);
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
      // Region ops and calls would need the tape of a function-level sweep.
      if (op.getNumRegions() > 0 || isa<CallOpInterface>(op))
        return op.emitError()
               << "cannot differentiate '" << op.getName()
               << "' inside the body of a linalg or tensor op "
                  "(ad-generate-derivatives writes such bodies as loop nests)";
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
  Value getGrowableTape(Operation *) override { return nullptr; }

private:
  OpBuilder &builder;
  IRMapping &mapping;
  llvm::DenseSet<Value> varied;
  CotangentMap cotangents;
};

/// How an output of a linalg.generic combines its block argument (the value
/// so far) with what an iteration computes.
enum class Combiner { Overwrite, Sum, Select };

/// The combiner of each output, or failure (with a diagnostic) for forms the
/// rule does not support: an output is overwritten (then no loop reduces),
/// summed (`out + expr`, matmul, sum pooling) or selected (`max(out, expr)`
/// and the like, max pooling). ad-generate-derivatives writes the other
/// generics as loop nests first (mlir::ad::needsLoopNest), and gives
/// parallel generics that read their outputs the inits as inputs.
static FailureOr<SmallVector<Combiner>>
classifyOutputs(linalg::GenericOp generic) {
  Block &body = *generic.getBody();
  Operation *yield = body.getTerminator();
  bool reduces = llvm::any_of(generic.getIteratorTypesArray(), [](auto type) {
    return type == utils::IteratorType::reduction;
  });
  SmallVector<Combiner> combiners;
  for (auto [index, output] :
       llvm::enumerate(generic.getRegionOutputArgs())) {
    if (output.use_empty()) {
      if (reduces)
        return generic.emitError(
            "cannot differentiate a reducing linalg.generic that overwrites "
            "its output (ad-generate-derivatives writes it as a loop nest)");
      combiners.push_back(Combiner::Overwrite);
      continue;
    }
    Operation *combine = *output.user_begin();
    bool single = reduces && output.hasOneUse() && combine->hasOneUse() &&
                  combine->getNumOperands() == 2 &&
                  yield->getOperand(index) == combine->getResult(0);
    if (single && isa<arith::AddFOp>(combine)) {
      combiners.push_back(Combiner::Sum);
      continue;
    }
    if (single && isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
                      arith::MinNumFOp>(combine)) {
      combiners.push_back(Combiner::Select);
      continue;
    }
    return generic.emitError(
        "cannot differentiate this linalg.generic directly: its output is "
        "read other than by a reducing sum, max or min "
        "(ad-generate-derivatives rewrites such generics first)");
  }
  return combiners;
}

/// The operand of `combine` that is not the output block argument.
static Value combinedValue(Operation *combine, BlockArgument output) {
  return combine->getOperand(0) == output ? combine->getOperand(1)
                                          : combine->getOperand(0);
}

/// Clones the body of `generic` (but its yield) at `b`, reading the input
/// elements `inputArgs` and, for scalars read from outside, their primals.
/// Output arguments only feed the combining ops, whose results the reverse
/// bodies do not need: they read zero.
static void recomputeBody(OpBuilder &b, Location loc,
                          linalg::GenericOp generic, ValueRange inputArgs,
                          const llvm::SetVector<Value> &captured,
                          ArrayRef<Value> capturedPrimals,
                          IRMapping &mapping) {
  Block &body = *generic.getBody();
  for (auto [index, arg] : llvm::enumerate(inputArgs))
    mapping.map(body.getArgument(index), arg);
  for (BlockArgument output : generic.getRegionOutputArgs())
    mapping.map(output,
                arith::ConstantOp::create(
                    b, loc, cast<TypedAttr>(b.getZeroAttr(output.getType()))));
  for (auto [value, primal] : llvm::zip(captured, capturedPrimals))
    mapping.map(value, primal);
  for (Operation &op : body.without_terminator())
    b.clone(op, mapping);
}

/// The maps of a pass over the loops of `generic` that reads its inputs and
/// accumulates two values per element of output `index`.
static SmallVector<AffineMap> outputPassMaps(linalg::GenericOp generic,
                                             unsigned index) {
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  unsigned numInputs = generic.getNumDpsInputs();
  maps.resize(numInputs);
  AffineMap outputMap = generic.getIndexingMapsArray()[numInputs + index];
  maps.append({outputMap, outputMap});
  return maps;
}

/// The value the body combines into output `index` (with a sum, max or
/// min).
static Value combinedValueOf(linalg::GenericOp generic, unsigned index) {
  Block &body = *generic.getBody();
  return combinedValue(body.getTerminator()->getOperand(index).getDefiningOp(),
                       generic.getRegionOutputArgs()[index]);
}

/// For selected output `index` of `generic`: how many iterations computed a
/// value equal to the result (ties share the cotangent).
static Value countWinners(OpBuilder &b, Location loc, linalg::GenericOp generic,
                          unsigned index, ArrayRef<Value> inputs, Value result,
                          const llvm::SetVector<Value> &captured,
                          ArrayRef<Value> capturedPrimals) {
  SmallVector<AffineMap> maps = outputPassMaps(generic, index);
  SmallVector<Value> countInputs(inputs);
  countInputs.push_back(result);
  Value zeros = createZerosLike(b, loc, result.getType(), result);
  Value combined = combinedValueOf(generic, index);
  auto count = linalg::GenericOp::create(
      b, loc, TypeRange{result.getType()}, countInputs, ValueRange{zeros}, maps,
      generic.getIteratorTypesArray(),
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        IRMapping mapping;
        recomputeBody(nested, nestedLoc, generic, args.take_front(inputs.size()),
                      captured, capturedPrimals, mapping);
        Type element = args.back().getType();
        Value won = arith::CmpFOp::create(nested, nestedLoc,
                                          arith::CmpFPredicate::OEQ,
                                          mapping.lookup(combined),
                                          args[inputs.size()]);
        Value one = arith::ConstantOp::create(
            nested, nestedLoc, nested.getFloatAttr(element, 1.0));
        Value zero = arith::ConstantOp::create(
            nested, nestedLoc, nested.getFloatAttr(element, 0.0));
        Value add = arith::SelectOp::create(nested, nestedLoc, won, one, zero);
        linalg::YieldOp::create(
            nested, nestedLoc,
            ValueRange{arith::AddFOp::create(nested, nestedLoc, args.back(),
                                             add)});
      });
  return count.getResult(0);
}

/// Whether `body` reads loop indices (whose numbering a reordering of the
/// loops would change).
static bool hasIndexOps(Block &body) {
  return body.walk([](linalg::IndexOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// Reorders the loops of an adjoint generic: reductions outermost, then the
/// accumulator's dimensions in its layout order, so the innermost loop
/// walks the accumulator contiguously (the loop nest is not tiled later).
static void reorderForContiguousWrites(SmallVectorImpl<AffineMap> &maps,
                                       SmallVectorImpl<utils::IteratorType> &
                                           iterators,
                                       AffineMap accMap, MLIRContext *context) {
  unsigned numLoops = accMap.getNumDims();
  SmallVector<unsigned> order; // new position -> old dimension
  for (unsigned dim = 0; dim < numLoops; ++dim)
    if (!accMap.isFunctionOfDim(dim))
      order.push_back(dim);
  for (AffineExpr result : accMap.getResults())
    order.push_back(cast<AffineDimExpr>(result).getPosition());
  SmallVector<AffineExpr> oldInNew(numLoops);
  for (auto [position, dim] : llvm::enumerate(order))
    oldInNew[dim] = getAffineDimExpr(position, context);
  AffineMap substitution = AffineMap::get(numLoops, 0, oldInNew, context);
  for (AffineMap &map : maps)
    map = map.compose(substitution);
  SmallVector<utils::IteratorType> reordered;
  for (unsigned dim : order)
    reordered.push_back(iterators[dim]);
  iterators.assign(reordered.begin(), reordered.end());
}

struct GenericRule
    : ReverseRuleOpInterface::ExternalModel<GenericRule, linalg::GenericOp> {
  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto generic = cast<linalg::GenericOp>(op);
    if (!generic.hasPureTensorSemantics())
      return generic.emitError("cannot differentiate a linalg.generic on "
                               "buffers; differentiate before bufferization");
    FailureOr<SmallVector<Combiner>> combiners = classifyOutputs(generic);
    if (failed(combiners))
      return failure();
    OpBuilder &b = emitter.getBuilder();
    Location loc = generic.getLoc();
    Block &body = *generic.getBody();
    unsigned numInputs = generic.getNumDpsInputs();
    MLIRContext *context = generic.getContext();

    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(generic.getRegion(), captured);
    for (Value value : captured)
      if (emitter.isActive(value) && !isa<FloatType>(value.getType()))
        return generic.emitError(
            "cannot differentiate this linalg.generic yet: its body reads an "
            "active tensor defined outside it");

    SmallVector<Value> inputs, capturedPrimals;
    for (Value input : generic.getDpsInputs())
      inputs.push_back(emitter.getPrimal(input));
    for (Value value : captured)
      capturedPrimals.push_back(emitter.getPrimal(value));

    // A summed output passes its cotangent to the init. A selected one (max,
    // min) splits it evenly among the values equal to the result: the
    // contributions and, when it won, the init. The adjoint bodies of a
    // selection also read its result.
    SmallVector<Value> resultCotangents;
    SmallVector<SmallVector<Value>> extras(generic.getNumResults());
    for (auto [index, result] : llvm::enumerate(generic.getResults())) {
      Value cotangent = emitter.getCotangent(result);
      Value init = generic.getDpsInits()[index];
      if ((*combiners)[index] != Combiner::Select) {
        resultCotangents.push_back(cotangent);
        if ((*combiners)[index] == Combiner::Sum)
          emitter.addCotangent(init, cotangent);
        continue;
      }
      Value primal = emitter.getPrimal(result);
      Value initPrimal = emitter.getPrimal(init);
      Value initWon = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                            initPrimal, primal);
      Value ones = createFilledLike(b, loc, primal, 1.0);
      Value zeros = createZerosLike(b, loc, primal.getType(), primal);
      Value ties = arith::AddFOp::create(
          b, loc,
          countWinners(b, loc, generic, index, inputs, primal, captured,
                       capturedPrimals),
          arith::SelectOp::create(b, loc, initWon, ones, zeros));
      Value share = arith::DivFOp::create(b, loc, cotangent, ties);
      resultCotangents.push_back(share);
      extras[index] = {primal};
      if (emitter.isActive(init))
        emitter.addCotangent(
            init, arith::SelectOp::create(b, loc, initWon, share, zeros));
    }

    SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    unsigned numLoops = generic.getNumLoops();

    // Every adjoint generic reads the primal inputs, the result cotangents
    // and the extra values of each output (through the output's map).
    SmallVector<AffineMap> sharedMaps(maps.begin(), maps.end());
    SmallVector<Value> adjointInputs(inputs);
    llvm::append_range(adjointInputs, resultCotangents);
    SmallVector<unsigned> extraOffsets;
    for (auto [j, values] : llvm::enumerate(extras)) {
      extraOffsets.push_back(adjointInputs.size());
      for (Value value : values) {
        adjointInputs.push_back(value);
        sharedMaps.push_back(maps[numInputs + j]);
      }
    }
    // The adjoint generic accumulating the cotangent of `wrt` into `acc`.
    auto buildAdjoint = [&](Value wrt, Value acc, AffineMap accMap,
                            SmallVector<utils::IteratorType> iterators,
                            bool reorder) -> FailureOr<Value> {
      SmallVector<AffineMap> adjointMaps(sharedMaps);
      adjointMaps.push_back(accMap);
      if (reorder && !hasIndexOps(body))
        reorderForContiguousWrites(adjointMaps, iterators, accMap, context);
      bool bodyFailed = false;
      auto adjoint = linalg::GenericOp::create(
          b, loc, TypeRange{acc.getType()}, adjointInputs, ValueRange{acc},
          adjointMaps, iterators,
          [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
            bodyFailed = failed(buildAdjointBody(
                nested, nestedLoc, generic, body, wrt, *combiners,
                extraOffsets, args, captured, capturedPrimals));
          });
      if (bodyFailed)
        return failure();
      // Nothing flows to `wrt` (a pooling window read only for its shape):
      // no pass at all.
      Block *adjointBody = adjoint.getBody();
      if (adjointBody->getTerminator()->getOperand(0) ==
          adjointBody->getArguments().back()) {
        adjoint.erase();
        return Value();
      }
      return adjoint.getResult(0);
    };

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
      // Accumulate straight into the input's cotangent when it has one:
      // no zero fill and no separate addition pass.
      Value existing = tensorType ? emitter.lookupCotangent(input) : Value();
      Value acc = existing ? existing
                           : zerosLike(b, loc, accType,
                                       tensorType ? inputs[k] : Value());
      // Loops the input's map drops are summed over.
      SmallVector<utils::IteratorType> iterators;
      for (unsigned dim = 0; dim < numLoops; ++dim)
        iterators.push_back(permutation && accMap.isFunctionOfDim(dim)
                                ? utils::IteratorType::parallel
                                : utils::IteratorType::reduction);
      FailureOr<Value> gradient = buildAdjoint(
          body.getArgument(k), acc, accMap, iterators, permutation);
      if (failed(gradient))
        return failure();
      if (!*gradient)
        continue;
      if (existing)
        emitter.setCotangent(input, *gradient);
      else if (!tensorType)
        emitter.addCotangent(input, tensor::ExtractOp::create(
                                        b, loc, *gradient, ValueRange()));
      else
        emitter.addCotangent(input, *gradient);
    }

    // A scalar read from outside the body gets the sum over all iterations.
    for (Value value : captured) {
      if (!emitter.isActive(value))
        continue;
      auto accType = RankedTensorType::get({}, value.getType());
      FailureOr<Value> gradient = buildAdjoint(
          value, createZerosLike(b, loc, accType, Value()),
          AffineMap::get(numLoops, 0, {}, context),
          SmallVector<utils::IteratorType>(numLoops,
                                           utils::IteratorType::reduction),
          /*reorder=*/false);
      if (failed(gradient))
        return failure();
      if (!*gradient)
        continue;
      emitter.addCotangent(
          value, tensor::ExtractOp::create(b, loc, *gradient, ValueRange()));
    }
    return success();
  }

  /// The body of an adjoint generic: recompute the original body, run its
  /// scalar rules backwards from the result cotangents, and add the
  /// cotangent of `wrt` (a block argument, or a scalar from outside) to the
  /// accumulator.
  static LogicalResult buildAdjointBody(OpBuilder &b, Location loc,
                                        linalg::GenericOp generic, Block &body,
                                        Value wrt,
                                        ArrayRef<Combiner> combiners,
                                        ArrayRef<unsigned> extraOffsets,
                                        ValueRange args,
                                        const llvm::SetVector<Value> &captured,
                                        ArrayRef<Value> capturedPrimals) {
    unsigned numInputs = generic.getNumDpsInputs();
    unsigned numOutputs = generic.getNumDpsInits();
    IRMapping mapping;
    recomputeBody(b, loc, generic, args.take_front(numInputs), captured,
                  capturedPrimals, mapping);

    BodyReverseEmitter reverse(b, mapping, body, wrt);
    Operation *yield = body.getTerminator();
    for (unsigned j = 0; j < numOutputs; ++j) {
      Value cotangent = args[numInputs + j];
      Value yielded = yield->getOperand(j);
      if (combiners[j] == Combiner::Overwrite) {
        reverse.addCotangent(yielded, cotangent);
        continue;
      }
      // The combining op itself is not reversed: its other operand gets the
      // cotangent, all of it for a sum, where it won for a max or min.
      Value combined = combinedValue(yielded.getDefiningOp(),
                                     generic.getRegionOutputArgs()[j]);
      if (combiners[j] == Combiner::Select) {
        Value won = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OEQ, mapping.lookup(combined),
            args[extraOffsets[j]]);
        Value zero = arith::ConstantOp::create(
            b, loc, cast<TypedAttr>(b.getZeroAttr(cotangent.getType())));
        cotangent = arith::SelectOp::create(b, loc, won, cotangent, zero);
      }
      reverse.addCotangent(combined, cotangent);
    }
    if (failed(reverse.emitReverseOps(body)))
      return failure();
    Value accumulated = args.back();
    Value contribution = reverse.lookupCotangent(wrt);
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
                       : emitter.getPrimal(extract.getTensor());
    Value zeros = zerosLike(b, loc, type, source);
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
    Value source = emitter.getPrimal(slice.getSource());
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
      Value source = emitter.getPrimal(insert.getSource());
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
                                        emitter.getPrimal(collapse.getSrc())));
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
          tensor::getMixedSizes(b, loc, emitter.getPrimal(input));
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
        tensor::getMixedSizes(b, loc, emitter.getPrimal(pad.getSource()));
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
    Value source = emitter.getPrimal(reshape.getSource());
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

} // namespace

void mlir::ad::registerLinalgReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    linalg::GenericOp::attachInterface<GenericRule>(*context);
  });
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
  });
}
