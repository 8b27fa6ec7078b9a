//===- LinalgRules.cpp - reverse rule of linalg.generic ---------*- C++ -*-===//
//
// linalg.generic is differentiated at the tensor level: one adjoint generic
// per active input, over the same iteration space, with that input's
// indexing map on its output (dimensions the map drops become reductions;
// a map that is not a projected permutation, like a convolution's input,
// makes every dimension a reduction).
// Its body recomputes the original body and runs the scalar rules of its
// ops backwards (BodyReverseEmitter). Named linalg ops reach this rule
// through upstream linalg-generalize-named-ops (ad-differentiate runs it).
// The tensor ops' rules are in TensorRules.cpp.
//
//===----------------------------------------------------------------------===//

#include "BodyReverseEmitter.h"
#include "ad/Rules/ElementwiseRule.h"
#include "ad/Rules/Rules.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::ad;

namespace {

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

/// Whether every evaluation of `value`, computed in `body`, gives the same
/// bits: it is built from the body's arguments and values from outside by
/// correctly rounded or exact operations only. A math function (exp, atan,
/// ...) may not be: its scalar and vector implementations (libm, libmvec)
/// can differ in the last bit, so the adjoint's recomputation in another
/// loop need not equal what the forward loop compared; so may an operation
/// with fast-math flags.
static bool isReproducible(Value value, Block &body) {
  SmallVector<Value> worklist = {value};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !seen.insert(def).second)
      continue;
    bool exact =
        isa<arith::ArithDialect>(def->getDialect()) ||
        isa<math::SqrtOp, math::AbsFOp, math::CopySignOp, math::FloorOp,
            math::CeilOp, math::RoundOp, math::RoundEvenOp, math::TruncOp,
            math::FmaOp, linalg::IndexOp>(def);
    // Fast-math flags allow contraction and reassociation, which one loop
    // may do and another not.
    if (auto flags = dyn_cast<arith::ArithFastMathInterface>(def))
      if (arith::FastMathFlagsAttr attr = flags.getFastMathFlagsAttr())
        exact = exact && attr.getValue() == arith::FastMathFlags::none;
    if (!exact)
      return false;
    llvm::append_range(worklist, def->getOperands());
  }
  return true;
}

/// The value output `index` of `generic` combines at every iteration,
/// computed once into a tensor over the whole iteration space (identity
/// map), so that every adjoint pass compares the same bits. Null (after a
/// diagnostic) when a loop's size is not a dimension of an input or of the
/// output.
static Value materializeContributions(OpBuilder &b, Location loc,
                                      linalg::GenericOp generic, unsigned index,
                                      ArrayRef<Value> inputs, Value initPrimal,
                                      const llvm::SetVector<Value> &captured,
                                      ArrayRef<Value> capturedPrimals) {
  unsigned numLoops = generic.getNumLoops();
  unsigned numInputs = generic.getNumDpsInputs();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  SmallVector<std::pair<Value, AffineMap>> shaped;
  for (auto [k, input] : llvm::enumerate(inputs))
    shaped.push_back({input, maps[k]});
  shaped.push_back({initPrimal, maps[numInputs + index]});
  SmallVector<OpFoldResult> sizes(numLoops);
  for (unsigned dim = 0; dim < numLoops; ++dim) {
    for (auto [value, map] : shaped) {
      auto type = dyn_cast<RankedTensorType>(value.getType());
      if (!type)
        continue;
      std::optional<unsigned> position =
          map.getResultPosition(getAffineDimExpr(dim, b.getContext()));
      if (!position)
        continue;
      sizes[dim] = tensor::getMixedSize(b, loc, value, *position);
      break;
    }
    if (!sizes[dim]) {
      generic.emitError("cannot differentiate this max/min reduction: it "
                        "compares values computed by math functions, and "
                        "loop ")
          << dim << " is not a dimension of any operand";
      return Value();
    }
  }
  Value combined = combinedValueOf(generic, index);
  Value empty = tensor::EmptyOp::create(b, loc, sizes, combined.getType());
  SmallVector<AffineMap> mappedMaps(maps.begin(), maps.begin() + numInputs);
  mappedMaps.push_back(AffineMap::getMultiDimIdentityMap(numLoops,
                                                         b.getContext()));
  auto mapped = linalg::GenericOp::create(
      b, loc, TypeRange{empty.getType()}, inputs, ValueRange{empty},
      mappedMaps,
      SmallVector<utils::IteratorType>(numLoops,
                                       utils::IteratorType::parallel),
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        IRMapping mapping;
        recomputeBody(nested, nestedLoc, generic,
                      args.take_front(inputs.size()), captured,
                      capturedPrimals, mapping);
        linalg::YieldOp::create(nested, nestedLoc, mapping.lookup(combined));
      });
  return mapped.getResult(0);
}

/// Output `index` of `generic` selected again (max or min) from the
/// materialized contributions `mapped` and the init: the result every
/// adjoint pass compares `mapped` with.
static Value reselect(OpBuilder &b, Location loc, linalg::GenericOp generic,
                      unsigned index, Value mapped, Value initPrimal) {
  unsigned numLoops = generic.getNumLoops();
  Operation *combine =
      generic.getBody()->getTerminator()->getOperand(index).getDefiningOp();
  BlockArgument output = generic.getRegionOutputArgs()[index];
  Value combined = combinedValue(combine, output);
  AffineMap outputMap =
      generic.getIndexingMapsArray()[generic.getNumDpsInputs() + index];
  auto selected = linalg::GenericOp::create(
      b, loc, TypeRange{initPrimal.getType()}, ValueRange{mapped},
      ValueRange{initPrimal},
      {AffineMap::getMultiDimIdentityMap(numLoops, b.getContext()), outputMap},
      generic.getIteratorTypesArray(),
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        IRMapping mapping;
        mapping.map(combined, args[0]);
        mapping.map(output, args[1]);
        Operation *clone = nested.clone(*combine, mapping);
        linalg::YieldOp::create(nested, nestedLoc, clone->getResult(0));
      });
  return selected.getResult(0);
}

/// For selected output `index` of `generic`: how many iterations computed a
/// value equal to the result (ties share the cotangent). `mapped`, when
/// set, holds those values (materializeContributions); otherwise the body
/// is recomputed.
static Value countWinners(OpBuilder &b, Location loc, linalg::GenericOp generic,
                          unsigned index, ArrayRef<Value> inputs, Value result,
                          Value mapped, const llvm::SetVector<Value> &captured,
                          ArrayRef<Value> capturedPrimals) {
  SmallVector<AffineMap> maps = outputPassMaps(generic, index);
  SmallVector<Value> countInputs(inputs);
  if (mapped) {
    countInputs.assign({mapped});
    maps.erase(maps.begin(), maps.begin() + inputs.size());
    maps.insert(maps.begin(), AffineMap::getMultiDimIdentityMap(
                                  generic.getNumLoops(), b.getContext()));
  }
  unsigned numRead = countInputs.size();
  countInputs.push_back(result);
  Value zeros = createZerosLike(b, loc, result.getType(), result);
  Value combined = combinedValueOf(generic, index);
  auto count = linalg::GenericOp::create(
      b, loc, TypeRange{result.getType()}, countInputs, ValueRange{zeros}, maps,
      generic.getIteratorTypesArray(),
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value contribution = args[0];
        if (!mapped) {
          IRMapping mapping;
          recomputeBody(nested, nestedLoc, generic, args.take_front(numRead),
                        captured, capturedPrimals, mapping);
          contribution = mapping.lookup(combined);
        }
        Type element = args.back().getType();
        Value won = arith::CmpFOp::create(nested, nestedLoc,
                                          arith::CmpFPredicate::OEQ,
                                          contribution, args[numRead]);
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

    // An input the tape cannot keep (a tensor whose size changes from row
    // to row of a while loop) is read for its shape only; that is an error
    // below unless no adjoint reads its elements (a sum, a scaling).
    SmallVector<Value> inputs, capturedPrimals;
    SmallVector<std::pair<unsigned, Value>> shapeOnlyInputs;
    for (auto [k, input] : llvm::enumerate(generic.getDpsInputs())) {
      Value primal = emitter.tryGetPrimal(input);
      if (!primal && isa<RankedTensorType>(input.getType())) {
        primal = emitter.getPrimalShape(input);
        shapeOnlyInputs.push_back({k, primal});
      }
      inputs.push_back(primal ? primal : emitter.getPrimal(input));
    }
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
      Value initPrimal = emitter.getPrimal(init);
      // Compared values that a recomputation might not reproduce bit for
      // bit are computed once, and the result selected again from them
      // (the forward's result is then not needed): otherwise no value, or
      // two in different passes, could equal the result (a division by
      // zero ties, an infinite gradient).
      Value mapped, primal;
      if (!isReproducible(combinedValueOf(generic, index), body)) {
        mapped = materializeContributions(b, loc, generic, index, inputs,
                                          initPrimal, captured,
                                          capturedPrimals);
        if (!mapped)
          return failure();
        primal = reselect(b, loc, generic, index, mapped, initPrimal);
      } else {
        primal = emitter.getPrimal(result);
      }
      Value initWon = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                            initPrimal, primal);
      Value ones = createFilledLike(b, loc, primal, 1.0);
      Value zeros = createZerosLike(b, loc, primal.getType(), primal);
      Value ties = arith::AddFOp::create(
          b, loc,
          countWinners(b, loc, generic, index, inputs, primal, mapped,
                       captured, capturedPrimals),
          arith::SelectOp::create(b, loc, initWon, ones, zeros));
      Value share = arith::DivFOp::create(b, loc, cotangent, ties);
      resultCotangents.push_back(share);
      extras[index] = {primal};
      if (mapped)
        extras[index].push_back(mapped);
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
      // The result, through the output's map; the materialized
      // contributions, through the identity.
      for (auto [position, value] : llvm::enumerate(values)) {
        adjointInputs.push_back(value);
        sharedMaps.push_back(position == 0 ? maps[numInputs + j]
                                           : AffineMap::getMultiDimIdentityMap(
                                                 numLoops, context));
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
                extraOffsets, extras, args, captured, capturedPrimals));
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
                           : createZerosLike(b, loc, accType,
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
    for (auto [k, shape] : shapeOnlyInputs)
      if (elementsRead(shape)) {
        // Reports why the tensor cannot be kept.
        (void)emitter.getPrimal(generic.getDpsInputs()[k]);
        return failure();
      }
    return success();
  }

  /// Whether some op reads elements of `tensor`, a shape-only stand-in:
  /// its sizes alone are read by `tensor.dim`, and by a generic whose
  /// block argument for it reaches no yield (the recomputed body's ops
  /// that only the derivative of another input needed).
  static bool elementsRead(Value tensor) {
    for (OpOperand &use : tensor.getUses()) {
      Operation *user = use.getOwner();
      if (isa<tensor::DimOp>(user))
        continue;
      auto generic = dyn_cast<linalg::GenericOp>(user);
      if (!generic || reachesYield(generic.getMatchingBlockArgument(&use)))
        return true;
    }
    return false;
  }

  /// Whether `value` (a block argument of a generic's body) flows through
  /// pure ops into the yield, or into an op with effects or regions.
  static bool reachesYield(Value value) {
    SmallVector<Value> worklist = {value};
    llvm::SmallPtrSet<Operation *, 16> visited;
    while (!worklist.empty()) {
      Value current = worklist.pop_back_val();
      for (Operation *user : current.getUsers()) {
        if (user->hasTrait<OpTrait::IsTerminator>() || !isPure(user) ||
            user->getNumRegions() != 0)
          return true;
        if (visited.insert(user).second)
          llvm::append_range(worklist, user->getResults());
      }
    }
    return false;
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
                                        ArrayRef<SmallVector<Value>> extras,
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
        // The materialized contribution when there is one (it is what the
        // result was selected from), else the recomputed one.
        Value contribution = extras[j].size() > 1
                                 ? args[extraOffsets[j] + 1]
                                 : mapping.lookup(combined);
        Value won = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                          contribution, args[extraOffsets[j]]);
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

} // namespace

void mlir::ad::registerLinalgReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    linalg::GenericOp::attachInterface<GenericRule>(*context);
  });
}
