//===- SimplifyAdjoints.cpp - structural simplification of adjoints -------===//
//
// Adjoint code is full of structure the rules cannot see one op at a time:
// a cotangent that is zero except on a diagonal, an accumulator that starts
// at zero and receives one contribution per element, primal inputs the
// adjoint body no longer reads. These patterns exploit it:
//
// - ScatterIntoSum: a generic that writes a few elements of a zero tensor
//   (the adjoint of a diagonal read, as in a trace) is fused into a generic
//   that sums products with that tensor (the adjoint of a matmul). The sum
//   is restricted to where the tensor can be nonzero, and the tensor is
//   never materialized: trace(A B) gets dA = B^T in O(n^2), not O(n^3).
// - SumIntoZeros: `out + t` over a zero init that every iteration writes
//   once becomes `t` over an uninitialized tensor (no fill pass).
// - MergeSiblings: generics over the same loops (the adjoints of one op's
//   several inputs) become one, which reads shared inputs and recomputes
//   the primal body once.
// - AddOfSliceIntoZeros: adding the cotangent of a slice (inserted into
//   zeros) to the whole value's adds to the slice only.
// - SizeOfKeptTensor: the size of a tensor read back from a buffer is the
//   size of the slice read, so a value kept only for its shape is not kept.
// - GuardSelectedSum: a sum whose terms vanish unless two values are equal
//   (the adjoint of a maximum or minimum) runs its other loops only where
//   they are.
// - upstream's removal of unused generic operands, so that primal values
//   the adjoint does not read are neither kept alive nor taped.
//
// Dropping terms that multiply a structural zero assumes the other factor
// is finite (0 * inf is NaN): the simplified adjoint is the mathematically
// correct one. That is why these patterns run on generated pullbacks and in
// `ad-simplify-adjoints`, not on user code.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "GenericParts.h"
#include "IndexingLoops.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <numeric>

namespace mlir::ad {
#define GEN_PASS_DEF_ADSIMPLIFYADJOINTSPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;
using namespace mlir::ad;

namespace {

/// Whether scalar `value` is a constant +0 or -0.
static bool isZeroScalar(Value value) {
  return matchPattern(value, m_AnyZeroFloat());
}

/// Whether `value` is a tensor of zeros: a splat constant, a linalg.fill, or
/// a generalized fill (a generic writing one zero per element).
static bool isZeroTensor(Value value) {
  DenseElementsAttr constant;
  if (matchPattern(value, m_Constant(&constant)))
    return constant.isSplat() && isa<FloatType>(constant.getElementType()) &&
           constant.getSplatValue<APFloat>().isZero();
  if (auto fill = value.getDefiningOp<linalg::FillOp>())
    return isZeroScalar(fill.getInputs()[0]);
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !generic.getIndexingMapsArray().back().isPermutation())
    return false;
  Value yielded = generic.getBody()->getTerminator()->getOperand(0);
  if (auto argument = dyn_cast<BlockArgument>(yielded)) {
    if (argument.getOwner() != generic.getBody() ||
        argument.getArgNumber() >= generic.getNumDpsInputs())
      return false;
    Value input = generic.getDpsInputs()[argument.getArgNumber()];
    return input.getType().isIntOrFloat() && isZeroScalar(input);
  }
  return isZeroScalar(yielded);
}

/// For output `index` of `generic`: the value added to the output argument
/// when the body yields `out + t` and reads `out` nowhere else.
static Value summedTerm(linalg::GenericOp generic, unsigned index = 0) {
  BlockArgument output = generic.getRegionOutputArgs()[index];
  Value yielded = generic.getBody()->getTerminator()->getOperand(index);
  auto add = yielded.getDefiningOp<arith::AddFOp>();
  if (!add || !output.hasOneUse() || !add->hasOneUse() ||
      add->getBlock() != generic.getBody())
    return Value();
  if (add.getLhs() == output)
    return add.getRhs();
  if (add.getRhs() == output)
    return add.getLhs();
  return Value();
}

/// Whether `value`, computed in `body`, is zero whenever `zero` is (given
/// finite operands otherwise).
static bool vanishesWith(Value value, Value zero, Block *body) {
  if (value == zero)
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != body)
    return false;
  if (isa<arith::MulFOp>(def))
    return vanishesWith(def->getOperand(0), zero, body) ||
           vanishesWith(def->getOperand(1), zero, body);
  if (isa<arith::DivFOp, arith::NegFOp, arith::ExtFOp, arith::TruncFOp>(def))
    return vanishesWith(def->getOperand(0), zero, body);
  if (isa<arith::AddFOp, arith::SubFOp>(def))
    return vanishesWith(def->getOperand(0), zero, body) &&
           vanishesWith(def->getOperand(1), zero, body);
  return false;
}

static bool hasIndexOps(linalg::GenericOp generic) {
  return !generic.getBody()->getOps<linalg::IndexOp>().empty();
}

/// Whether every result of `map` is a plain dimension.
static bool hasOnlyDimResults(AffineMap map) {
  return llvm::all_of(map.getResults(),
                      [](AffineExpr e) { return isa<AffineDimExpr>(e); });
}

static unsigned dimOf(AffineExpr expr) {
  return cast<AffineDimExpr>(expr).getPosition();
}

/// The value a scatter generic writes per iteration when it writes each
/// element of a zero tensor at most once: `t` for a body yielding `out + t`
/// or `t`. Null if `producer` is not such a scatter or is too costly to
/// recompute in its consumers.
static Value scatteredValue(linalg::GenericOp producer) {
  if (!producer.hasPureTensorSemantics() || producer.getNumDpsInits() != 1 ||
      hasIndexOps(producer) || !isZeroTensor(producer.getDpsInits()[0]))
    return Value();
  AffineMap write = producer.getIndexingMapsArray().back();
  if (!hasOnlyDimResults(write))
    return Value();
  for (unsigned dim = 0; dim < write.getNumDims(); ++dim)
    if (!write.isFunctionOfDim(dim))
      return Value(); // two iterations would write the same element
  Block *body = producer.getBody();
  // The value is recomputed per consumer iteration: keep that cheap.
  if (std::distance(body->begin(), body->end()) > 5)
    return Value();
  BlockArgument output = producer.getRegionOutputArgs()[0];
  Value term = summedTerm(producer);
  if (!term && output.use_empty())
    term = body->getTerminator()->getOperand(0);
  if (!term || term == output)
    return Value();
  return term;
}

/// Fuses a scatter into a zero tensor (a generic writing each element at
/// most once, like the adjoint of a trace writing a diagonal) into a
/// consumer generic that reads the tensor. When the consumer sums terms
/// that vanish with the tensor, reduction dimensions that would only read
/// its zeros are eliminated: a diagonal read with (d0, d2) restricts the
/// sum to d2 = d0.
struct ScatterIntoSum : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    if (!consumer.hasPureTensorSemantics() ||
        consumer.getNumDpsInits() != 1 || hasIndexOps(consumer))
      return rewriter.notifyMatchFailure(consumer, "unsupported consumer");
    for (OpOperand *operand : consumer.getDpsInputOperands())
      if (succeeded(fuse(consumer, *operand, rewriter)))
        return success();
    return rewriter.notifyMatchFailure(consumer, "no scatter to fuse");
  }

  LogicalResult fuse(linalg::GenericOp consumer, OpOperand &operand,
                     PatternRewriter &rewriter) const {
    auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
    if (!producer)
      return failure();
    Value scattered = scatteredValue(producer);
    if (!scattered)
      return failure();
    SmallVector<AffineMap> maps = consumer.getIndexingMapsArray();
    unsigned position = operand.getOperandNumber();
    AffineMap read = maps[position];
    AffineMap write = producer.getIndexingMapsArray().back();
    AffineMap outputMap = maps.back();
    if (!hasOnlyDimResults(read) || !outputMap.isProjectedPermutation())
      return failure();
    unsigned numLoops = consumer.getNumLoops();
    Block *body = consumer.getBody();
    BlockArgument readArg = body->getArgument(position);

    // Consumer dimensions that index the same producer dimension must be
    // equal where the tensor is nonzero.
    SmallVector<unsigned> parent(numLoops);
    std::iota(parent.begin(), parent.end(), 0u);
    auto find = [&](unsigned dim) {
      while (parent[dim] != dim)
        dim = parent[dim] = parent[parent[dim]];
      return dim;
    };
    SmallVector<unsigned> firstPosition(write.getNumDims(), ~0u);
    for (auto [index, expr] : llvm::enumerate(write.getResults())) {
      unsigned producerDim = dimOf(expr);
      unsigned consumerDim = dimOf(read.getResult(index));
      if (firstPosition[producerDim] == ~0u)
        firstPosition[producerDim] = index;
      else
        parent[find(consumerDim)] =
            find(dimOf(read.getResult(firstPosition[producerDim])));
    }
    // Each class keeps one dimension: the output's if it has one (two
    // output dimensions cannot be merged), else its first reduction.
    SmallVector<unsigned> keep(numLoops);
    bool eliminates = false;
    for (unsigned dim = 0; dim < numLoops; ++dim) {
      unsigned kept = ~0u;
      for (unsigned member = 0; member < numLoops; ++member) {
        if (find(member) != find(dim) || !outputMap.isFunctionOfDim(member))
          continue;
        if (kept != ~0u && kept != member)
          return failure();
        kept = member;
      }
      if (kept == ~0u)
        for (unsigned member = 0; member < numLoops && kept == ~0u; ++member)
          if (find(member) == find(dim))
            kept = member;
      keep[dim] = kept;
      eliminates |= kept != dim;
    }
    // Eliminated iterations only read zeros; they may be dropped when they
    // add terms that vanish with the tensor.
    if (eliminates) {
      Value term = summedTerm(consumer);
      if (!term || !vanishesWith(term, readArg, body))
        return failure();
    }

    // Renumber the kept dimensions; map each old one to its keeper.
    MLIRContext *context = consumer.getContext();
    SmallVector<unsigned> newIndex(numLoops, ~0u);
    SmallVector<utils::IteratorType> iterators;
    SmallVector<utils::IteratorType> oldIterators =
        consumer.getIteratorTypesArray();
    for (unsigned dim = 0; dim < numLoops; ++dim)
      if (keep[dim] == dim) {
        newIndex[dim] = iterators.size();
        iterators.push_back(oldIterators[dim]);
      }
    SmallVector<AffineExpr> substitution;
    for (unsigned dim = 0; dim < numLoops; ++dim)
      substitution.push_back(getAffineDimExpr(newIndex[keep[dim]], context));
    AffineMap toNew =
        AffineMap::get(iterators.size(), 0, substitution, context);
    AffineMap newRead = read.compose(toNew);
    SmallVector<AffineExpr> producerDims;
    for (unsigned first : firstPosition)
      producerDims.push_back(newRead.getResult(first));
    AffineMap toProducer =
        AffineMap::get(iterators.size(), 0, producerDims, context);

    // Operands: the consumer's inputs but the tensor, then the inputs the
    // producer's scattered value reads, then the consumer's output.
    Block *producerBody = producer.getBody();
    llvm::SetVector<Operation *> slice;
    SmallVector<Value> worklist = {scattered};
    llvm::SmallSetVector<unsigned, 4> producerArgs;
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      if (auto argument = dyn_cast<BlockArgument>(value)) {
        if (argument.getOwner() == producerBody)
          producerArgs.insert(argument.getArgNumber());
        continue;
      }
      Operation *def = value.getDefiningOp();
      if (def->getBlock() != producerBody || !slice.insert(def))
        continue;
      llvm::append_range(worklist, def->getOperands());
    }
    if (llvm::is_contained(producerArgs,
                           producer.getRegionOutputArgs()[0].getArgNumber()))
      return failure();

    SmallVector<Value> inputs;
    SmallVector<AffineMap> newMaps;
    for (OpOperand *input : consumer.getDpsInputOperands()) {
      if (input == &operand)
        continue;
      inputs.push_back(input->get());
      newMaps.push_back(maps[input->getOperandNumber()].compose(toNew));
    }
    for (unsigned arg : producerArgs) {
      inputs.push_back(producer.getDpsInputs()[arg]);
      newMaps.push_back(
          producer.getIndexingMapsArray()[arg].compose(toProducer));
    }
    newMaps.push_back(outputMap.compose(toNew));
    // Every loop must still get its bounds from some operand.
    if (!inversePermutation(concatAffineMaps(newMaps, context)))
      return failure();

    auto fused = linalg::GenericOp::create(
        rewriter, consumer.getLoc(), consumer.getResultTypes(), inputs,
        consumer.getDpsInits(), newMaps, iterators,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          IRMapping mapping;
          unsigned next = 0;
          for (OpOperand *input : consumer.getDpsInputOperands())
            if (input != &operand)
              mapping.map(body->getArgument(input->getOperandNumber()),
                          args[next++]);
          for (unsigned arg : producerArgs)
            mapping.map(producerBody->getArgument(arg), args[next++]);
          for (Operation &op : *producerBody)
            if (slice.contains(&op))
              b.clone(op, mapping);
          mapping.map(readArg, mapping.lookupOrDefault(scattered));
          mapping.map(consumer.getRegionOutputArgs()[0], args.back());
          for (Operation &op : body->without_terminator())
            b.clone(op, mapping);
          linalg::YieldOp::create(
              b, loc,
              mapping.lookupOrDefault(body->getTerminator()->getOperand(0)));
        });
    rewriter.replaceOp(consumer, fused.getResults());
    return success();
  }
};

/// A sum whose terms vanish unless two values read through some of the
/// loops are equal (`out + select(x == m, a, 0) * ...`: the adjoint of a
/// maximum or minimum over those loops, fused into the adjoint of the
/// values compared) runs the other loops only where they are equal. The
/// comparison is made once per point of the loops it depends on (scalar
/// loops, outermost first in the op's order); the rest of the body runs as
/// a generic over the remaining loops on slices of the operands. The
/// equality holds at a few points (a maximum and its ties), so the n x k x d
/// adjoint of a distance matrix's row minima costs n x k comparisons and
/// n x d work.
///
/// Only an equality: a guard that may hold everywhere (a ReLU's `x > 0`)
/// would trade one vectorized loop nest for many small ones.
struct GuardSelectedSum : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const override {
    if (!generic.hasPureTensorSemantics() || generic.getNumDpsInits() != 1 ||
        hasIndexOps(generic) ||
        !llvm::all_of(generic.getIndexingMapsArray(), hasOnlyDimResults))
      return rewriter.notifyMatchFailure(generic, "unsupported generic");
    Value term = summedTerm(generic);
    if (!term)
      return rewriter.notifyMatchFailure(generic, "not a sum");
    Block *body = generic.getBody();
    // Skipping iterations must skip nothing but their terms.
    if (!llvm::all_of(body->without_terminator(), [](Operation &op) {
          return isMemoryEffectFree(&op);
        }))
      return rewriter.notifyMatchFailure(generic, "body with effects");
    unsigned numLoops = generic.getNumLoops();
    for (auto select : body->getOps<arith::SelectOp>()) {
      auto compare = select.getCondition().getDefiningOp<arith::CmpFOp>();
      if (!compare || compare->getBlock() != body ||
          compare.getPredicate() != arith::CmpFPredicate::OEQ ||
          !isZeroScalar(select.getFalseValue()) ||
          !vanishesWith(term, select.getResult(), body))
        continue;
      // The body ops computing the comparison and the loops of the inputs
      // they read (no output: it changes along the loops).
      llvm::SetVector<Operation *> slice =
          bodySlice(body, {compare.getResult()});
      llvm::SmallSetVector<unsigned, 4> inputs;
      llvm::SmallBitVector guardLoops(numLoops);
      bool supported = true;
      for (Operation *op : slice) {
        supported &= op->getNumRegions() == 0;
        for (Value operand : op->getOperands()) {
          auto argument = dyn_cast<BlockArgument>(operand);
          if (!argument || argument.getOwner() != body)
            continue;
          OpOperand *input = generic.getMatchingOpOperand(argument);
          supported &= generic.isDpsInput(input);
          inputs.insert(argument.getArgNumber());
          guardLoops |= loopsOf(generic.getMatchingIndexingMap(input));
        }
      }
      if (!supported || guardLoops.none() || guardLoops.all())
        continue;
      guard(generic, slice, inputs.getArrayRef(), guardLoops, compare,
            rewriter);
      return success();
    }
    return rewriter.notifyMatchFailure(generic, "no guard");
  }

  static void guard(linalg::GenericOp generic,
                    const llvm::SetVector<Operation *> &slice,
                    ArrayRef<unsigned> guardInputs,
                    const llvm::SmallBitVector &guardLoops,
                    arith::CmpFOp compare, PatternRewriter &rewriter) {
    Location loc = generic.getLoc();
    MLIRContext *context = generic.getContext();
    Block *body = generic.getBody();
    unsigned numLoops = generic.getNumLoops();
    rewriter.setInsertionPoint(generic);
    SmallVector<Range> ranges =
        cast<linalg::LinalgOp>(generic.getOperation())
            .createLoopRanges(rewriter, loc);
    SmallVector<unsigned> outer, inner;
    SmallVector<unsigned> innerIndex(numLoops, ~0u);
    for (unsigned loop = 0; loop < numLoops; ++loop) {
      if (guardLoops.test(loop)) {
        outer.push_back(loop);
      } else {
        innerIndex[loop] = inner.size();
        inner.push_back(loop);
      }
    }
    SmallVector<Value> lbs, ubs, steps;
    for (unsigned loop : outer) {
      lbs.push_back(getValueOrCreateConstantIndexOp(rewriter, loc,
                                                    ranges[loop].offset));
      ubs.push_back(
          getValueOrCreateConstantIndexOp(rewriter, loc, ranges[loop].size));
      steps.push_back(getValueOrCreateConstantIndexOp(rewriter, loc,
                                                      ranges[loop].stride));
    }
    SmallVector<utils::IteratorType> iterators =
        generic.getIteratorTypesArray();
    SmallVector<utils::IteratorType> innerIterators;
    for (unsigned loop : inner)
      innerIterators.push_back(iterators[loop]);

    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, generic.getDpsInits(),
        [&](OpBuilder &b, Location loc, ValueRange ivs,
            ValueRange accumulators) -> scf::ValueVector {
          SmallVector<Value> position(numLoops);
          for (auto [loop, iv] : llvm::zip(outer, ivs))
            position[loop] = iv;
          // The comparison at this point of the outer loops.
          IRMapping mapping;
          for (unsigned number : guardInputs) {
            OpOperand &operand = generic->getOpOperand(number);
            Value value = operand.get();
            if (isa<RankedTensorType>(value.getType())) {
              SmallVector<Value> indices;
              for (AffineExpr expr :
                   generic.getMatchingIndexingMap(&operand).getResults())
                indices.push_back(position[dimOf(expr)]);
              value = tensor::ExtractOp::create(b, loc, value, indices);
            }
            mapping.map(body->getArgument(number), value);
          }
          for (Operation &op : *body)
            if (slice.contains(&op))
              b.clone(op, mapping);
          Value equal = mapping.lookup(compare.getResult());

          // Where it holds, the body over the other loops, on slices.
          auto sliceOf = [&](OpBuilder &b, OpOperand &operand, Value source,
                             SmallVector<OpFoldResult> &offsets,
                             SmallVector<OpFoldResult> &sizes,
                             SmallVector<OpFoldResult> &strides,
                             AffineMap &innerMap) -> Value {
            auto type = cast<RankedTensorType>(source.getType());
            AffineMap map = generic.getMatchingIndexingMap(&operand);
            SmallVector<int64_t> shape;
            SmallVector<AffineExpr> results;
            for (auto [index, expr] : llvm::enumerate(map.getResults())) {
              unsigned loop = dimOf(expr);
              strides.push_back(b.getIndexAttr(1));
              if (guardLoops.test(loop)) {
                offsets.push_back(position[loop]);
                sizes.push_back(b.getIndexAttr(1));
                continue;
              }
              offsets.push_back(b.getIndexAttr(0));
              sizes.push_back(tensor::getMixedSize(b, loc, source, index));
              shape.push_back(type.getDimSize(index));
              results.push_back(getAffineDimExpr(innerIndex[loop], context));
            }
            innerMap = AffineMap::get(inner.size(), 0, results, context);
            auto sliceType =
                RankedTensorType::get(shape, type.getElementType());
            return tensor::ExtractSliceOp::create(b, loc, sliceType, source,
                                                  offsets, sizes, strides);
          };
          auto ifOp = scf::IfOp::create(
              b, loc, equal,
              [&](OpBuilder &b, Location loc) {
                SmallVector<Value> inputs;
                SmallVector<AffineMap> maps;
                for (OpOperand *input : generic.getDpsInputOperands()) {
                  Value value = input->get();
                  if (!isa<RankedTensorType>(value.getType())) {
                    inputs.push_back(value);
                    maps.push_back(
                        AffineMap::get(inner.size(), 0, {}, context));
                    continue;
                  }
                  SmallVector<OpFoldResult> offsets, sizes, strides;
                  AffineMap map;
                  inputs.push_back(sliceOf(b, *input, value, offsets, sizes,
                                           strides, map));
                  maps.push_back(map);
                }
                SmallVector<OpFoldResult> offsets, sizes, strides;
                AffineMap outputMap;
                Value output =
                    sliceOf(b, *generic.getDpsInitOperand(0),
                            accumulators[0], offsets, sizes, strides,
                            outputMap);
                maps.push_back(outputMap);
                auto part = linalg::GenericOp::create(
                    b, loc, output.getType(), inputs, output, maps,
                    innerIterators,
                    [&](OpBuilder &b, Location loc, ValueRange args) {
                      IRMapping mapping;
                      mapping.map(body->getArguments(), args);
                      for (Operation &op : *body)
                        b.clone(op, mapping);
                    });
                Value updated = tensor::InsertSliceOp::create(
                    b, loc, part->getResult(0), accumulators[0], offsets,
                    sizes, strides);
                scf::YieldOp::create(b, loc, updated);
              },
              [&](OpBuilder &b, Location loc) {
                scf::YieldOp::create(b, loc, accumulators[0]);
              });
          return {ifOp.getResult(0)};
        });
    rewriter.replaceOp(generic, nest.results);
  }
};

/// `out + t` over a zero init, for an output whose map is a permutation
/// (every element is written by exactly one iteration): yields `t` into an
/// uninitialized tensor.
struct SumIntoZeros : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const override {
    if (!generic.hasPureTensorSemantics())
      return rewriter.notifyMatchFailure(generic, "not on tensors");
    SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    unsigned numInputs = generic.getNumDpsInputs();
    bool changed = false;
    for (unsigned index = 0; index < generic.getNumDpsInits(); ++index) {
      Value init = generic.getDpsInits()[index];
      Value term = summedTerm(generic, index);
      if (!maps[numInputs + index].isPermutation() || !isZeroTensor(init) ||
          !term)
        continue;
      Value uninitialized;
      if (auto fill = init.getDefiningOp<linalg::FillOp>())
        uninitialized = fill.getOutputs()[0];
      else if (auto zeroGeneric = init.getDefiningOp<linalg::GenericOp>())
        uninitialized = zeroGeneric.getDpsInits()[0];
      else
        uninitialized = tensor::EmptyOp::create(
            rewriter, generic.getLoc(),
            tensor::getMixedSizes(rewriter, generic.getLoc(), init),
            getElementTypeOrSelf(init.getType()));
      Operation *add =
          generic.getBody()->getTerminator()->getOperand(index).getDefiningOp();
      rewriter.replaceOp(add, term);
      rewriter.modifyOpInPlace(generic, [&] {
        generic.getDpsInitsMutable()[index].set(uninitialized);
      });
      changed = true;
    }
    return success(changed);
  }
};

/// A sum `out + t` over reduction loops R that only some inputs U read,
/// whose term is linear in a value p computed from U alone (`t` is `p`,
/// `-p`, `c * p` or `p / c` for c not computed from U): p is summed over R
/// first, into a tensor s over the other loops U reads, and the sum reads
/// s instead. `sum_{n,j} d[n,k,j] M[k,j,i]` becomes `sum_j M[k,j,i] s[k,j]`
/// with `s[k,j] = sum_n d[n,k,j]`: the adjoint of an operand broadcast
/// along n into a contraction (GMM's mean, read by every data point) costs
/// a pass over d and a contraction without n, not one with it. Only when
/// some loop of the sum is read neither through R nor by U (else s is as
/// large as the sum). Sums are rounded in another order (and a sum of p
/// may overflow where the scaled terms would not); an empty R with
/// infinite factors or a zero divisor gives 0 * inf or 0 / 0 (NaN) where
/// the sum had no terms, which the other adjoint simplifications assume
/// away too (finite operands).
struct SumFactorFirst : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const override {
    if (!generic.hasPureTensorSemantics() || generic.getNumDpsInits() != 1 ||
        hasIndexOps(generic))
      return rewriter.notifyMatchFailure(generic, "not a sum on tensors");
    Value term = summedTerm(generic);
    if (!term || !isa<FloatType>(term.getType()))
      return rewriter.notifyMatchFailure(generic, "not out + t");
    SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    if (!llvm::all_of(maps, [](AffineMap map) {
          return map.isProjectedPermutation(/*allowZeroInResults=*/false);
        }))
      return rewriter.notifyMatchFailure(generic, "maps not permutations");
    Block *body = generic.getBody();
    for (Operation &op : body->without_terminator())
      if (!isPure(&op) || op.getNumRegions() != 0)
        return rewriter.notifyMatchFailure(generic, "body not pure");
    unsigned numLoops = generic.getNumLoops();
    unsigned numInputs = generic.getNumDpsInputs();
    AffineMap outputMap = maps[numInputs];
    auto loopsOf = [&](AffineMap map) {
      llvm::SmallBitVector loops(numLoops);
      for (AffineExpr expr : map.getResults())
        loops.set(dimOf(expr));
      return loops;
    };
    for (unsigned r = 0; r < numLoops; ++r) {
      if (outputMap.isFunctionOfDim(r))
        continue;
      llvm::SmallBitVector inU(numInputs);
      llvm::SmallBitVector readByU(numLoops), readByOthers = loopsOf(outputMap);
      for (unsigned i = 0; i < numInputs; ++i) {
        if (maps[i].isFunctionOfDim(r)) {
          inU.set(i);
          readByU |= loopsOf(maps[i]);
        } else {
          readByOthers |= loopsOf(maps[i]);
        }
      }
      if (inU.none())
        continue;
      // R: the loops only U reads; the loops of s: the others U reads.
      llvm::SmallBitVector summed = readByU, kept = readByU;
      summed.reset(readByOthers);
      kept &= readByOthers;
      if ((readByU | readByOthers).count() != numLoops ||
          (summed | kept).count() == numLoops)
        continue;
      // Which body values depend on U's arguments, which on the others'
      // (or the output's).
      DenseSet<Value> onU, onOthers;
      for (BlockArgument argument : body->getArguments())
        (argument.getArgNumber() < numInputs && inU.test(argument.getArgNumber())
             ? onU
             : onOthers)
            .insert(argument);
      for (Operation &op : body->without_terminator()) {
        bool u = llvm::any_of(op.getOperands(),
                              [&](Value v) { return onU.contains(v); });
        bool other = llvm::any_of(
            op.getOperands(), [&](Value v) { return onOthers.contains(v); });
        for (Value result : op.getResults()) {
          if (u)
            onU.insert(result);
          if (other)
            onOthers.insert(result);
        }
      }
      // Down from t to p through -x, x * c, c * x, x / c.
      SmallPtrSet<Operation *, 8> path;
      path.insert(body->getTerminator()->getOperand(0).getDefiningOp());
      Value p = term;
      while (p && onOthers.contains(p)) {
        Operation *def = p.getDefiningOp();
        if (!def || def->getBlock() != body || def->getNumResults() != 1) {
          p = Value();
          break;
        }
        path.insert(def);
        if (isa<arith::NegFOp>(def)) {
          p = def->getOperand(0);
        } else if (isa<arith::MulFOp>(def)) {
          Value a = def->getOperand(0), b = def->getOperand(1);
          p = !onU.contains(b) ? a : !onU.contains(a) ? b : Value();
        } else if (isa<arith::DivFOp>(def) &&
                   !onU.contains(def->getOperand(1))) {
          p = def->getOperand(0);
        } else {
          p = Value();
        }
      }
      if (!p || !onU.contains(p) || p.getType() != term.getType())
        continue;
      return factor(generic, rewriter, inU, summed, kept, p, path, onU,
                    onOthers);
    }
    return rewriter.notifyMatchFailure(generic, "no loop to sum first");
  }

  static LogicalResult factor(linalg::GenericOp generic,
                              PatternRewriter &rewriter,
                              const llvm::SmallBitVector &inU,
                              const llvm::SmallBitVector &summed,
                              const llvm::SmallBitVector &kept, Value p,
                              const SmallPtrSet<Operation *, 8> &path,
                              const DenseSet<Value> &onU,
                              const DenseSet<Value> &onOthers) {
    MLIRContext *context = generic.getContext();
    Location loc = generic.getLoc();
    Block *body = generic.getBody();
    unsigned numLoops = generic.getNumLoops();
    unsigned numInputs = generic.getNumDpsInputs();
    SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    SmallVector<utils::IteratorType> iterators =
        generic.getIteratorTypesArray();
    auto type = cast<FloatType>(p.getType());

    // s[kept] = sum over summed of p, over the loops of U renumbered: in
    // the order of the dimensions of the first U input that reads them all
    // (the layout of d[n, k, j] for s[k, j] = sum_n d[n, k, j]: its loop
    // over j innermost and contiguous; in the order of the sum's loops, s
    // was [j, k], its reduction reading d across j's rows), else in the
    // order of the sum's loops.
    SmallVector<unsigned> order;
    for (unsigned i = 0; i < numInputs && order.empty(); ++i) {
      if (!inU.test(i))
        continue;
      SmallVector<unsigned> dims;
      for (AffineExpr expr : maps[i].getResults())
        if (unsigned dim = dimOf(expr); summed.test(dim) || kept.test(dim))
          dims.push_back(dim);
      if (dims.size() == (summed | kept).count())
        order = dims;
    }
    if (order.empty())
      for (unsigned dim = 0; dim < numLoops; ++dim)
        if (summed.test(dim) || kept.test(dim))
          order.push_back(dim);
    SmallVector<AffineExpr> toS(numLoops, getAffineConstantExpr(0, context));
    SmallVector<AffineExpr> sResults;
    SmallVector<utils::IteratorType> sIterators;
    SmallVector<OpFoldResult> sSizes;
    unsigned numS = 0;
    for (unsigned dim : order) {
      AffineExpr expr = getAffineDimExpr(numS++, context);
      toS[dim] = expr;
      sIterators.push_back(summed.test(dim) ? utils::IteratorType::reduction
                                            : utils::IteratorType::parallel);
      if (!kept.test(dim))
        continue;
      sResults.push_back(expr);
      // The size of the loop, from a U input that reads it.
      for (unsigned i = 0; i < numInputs && sSizes.size() < sResults.size();
           ++i)
        if (inU.test(i))
          if (std::optional<unsigned> position = maps[i].getResultPosition(
                  getAffineDimExpr(dim, context)))
            sSizes.push_back(tensor::getMixedSize(
                rewriter, loc, generic.getDpsInputs()[i], *position));
    }
    SmallVector<Value> sInputs;
    SmallVector<AffineMap> sMaps;
    for (unsigned i = 0; i < numInputs; ++i)
      if (inU.test(i)) {
        sInputs.push_back(generic.getDpsInputs()[i]);
        sMaps.push_back(maps[i].replaceDimsAndSymbols(toS, {}, numS, 0));
      }
    sMaps.push_back(AffineMap::get(numS, 0, sResults, context));
    Value empty = tensor::EmptyOp::create(rewriter, loc, sSizes, type);
    // -0.0, the neutral element of a float sum.
    Value zero = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(type, -0.0));
    Value zeros =
        linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
    auto sum = linalg::GenericOp::create(
        rewriter, loc, zeros.getType(), sInputs, zeros, sMaps, sIterators,
        [&](OpBuilder &b, Location bodyLoc, ValueRange arguments) {
          IRMapping mapping;
          unsigned next = 0;
          for (unsigned i = 0; i < numInputs; ++i)
            if (inU.test(i))
              mapping.map(body->getArgument(i), arguments[next++]);
          for (Operation &op : body->without_terminator())
            if (llvm::none_of(op.getResults(), [&](Value v) {
                  return onOthers.contains(v);
                }))
              b.clone(op, mapping);
          Value added = arith::AddFOp::create(b, bodyLoc, arguments.back(),
                                              mapping.lookup(p));
          linalg::YieldOp::create(b, bodyLoc, added);
        });

    // The sum without the summed loops, reading s for p.
    SmallVector<AffineExpr> toMain(numLoops, getAffineConstantExpr(0, context));
    SmallVector<utils::IteratorType> mainIterators;
    unsigned numMain = 0;
    for (unsigned dim = 0; dim < numLoops; ++dim) {
      if (summed.test(dim))
        continue;
      toMain[dim] = getAffineDimExpr(numMain++, context);
      mainIterators.push_back(iterators[dim]);
    }
    SmallVector<Value> inputs;
    SmallVector<AffineMap> mainMaps;
    for (unsigned i = 0; i < numInputs; ++i)
      if (!inU.test(i)) {
        inputs.push_back(generic.getDpsInputs()[i]);
        mainMaps.push_back(maps[i].replaceDimsAndSymbols(toMain, {}, numMain, 0));
      }
    inputs.push_back(sum.getResult(0));
    SmallVector<AffineExpr> sRead;
    for (unsigned dim : order)
      if (kept.test(dim))
        sRead.push_back(toMain[dim]);
    mainMaps.push_back(AffineMap::get(numMain, 0, sRead, context));
    mainMaps.push_back(
        maps[numInputs].replaceDimsAndSymbols(toMain, {}, numMain, 0));
    auto factored = linalg::GenericOp::create(
        rewriter, loc, generic.getResultTypes(), inputs,
        generic.getDpsInits(), mainMaps, mainIterators,
        [&](OpBuilder &b, Location, ValueRange arguments) {
          IRMapping mapping;
          unsigned next = 0;
          for (unsigned i = 0; i < numInputs; ++i)
            if (!inU.test(i))
              mapping.map(body->getArgument(i), arguments[next++]);
          mapping.map(p, arguments[next++]);
          mapping.map(body->getArgument(numInputs), arguments[next]);
          for (Operation &op : *body)
            if (path.contains(&op) || isa<linalg::YieldOp>(op) ||
                llvm::none_of(op.getResults(),
                              [&](Value v) { return onU.contains(v); }))
              b.clone(op, mapping);
        });
    rewriter.replaceOp(generic, factored.getResults());
    return success();
  }
};

/// Merges two generics over the same loops (they read a common input
/// through the same map, which fixes every loop's range) into one with the
/// outputs of both. The adjoint generics of one op's inputs recompute the
/// same body: merged, they read the shared inputs once, and CSE computes
/// the body once. A loop stays parallel only if it is in both.
struct MergeSiblings : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp first,
                                PatternRewriter &rewriter) const override {
    if (!first.hasPureTensorSemantics())
      return rewriter.notifyMatchFailure(first, "not on tensors");
    for (Operation *op = first->getNextNode(); op; op = op->getNextNode()) {
      auto second = dyn_cast<linalg::GenericOp>(op);
      if (second && isSibling(first, second))
        return merge(first, second, rewriter);
    }
    return rewriter.notifyMatchFailure(first, "no sibling");
  }

  /// Whether `second` (after `first` in its block) runs the same loops and
  /// `first` can move down to it: nothing before `second` uses `first`.
  static bool isSibling(linalg::GenericOp first, linalg::GenericOp second) {
    if (!second.hasPureTensorSemantics() ||
        first.getNumLoops() != second.getNumLoops())
      return false;
    bool sharesLoops = false;
    for (OpOperand *a : first.getDpsInputOperands())
      for (OpOperand *b : second.getDpsInputOperands())
        if (a->get() == b->get() && isa<RankedTensorType>(a->get().getType())) {
          AffineMap map = first.getMatchingIndexingMap(a);
          sharesLoops |= map == second.getMatchingIndexingMap(b) &&
                         map.isPermutation();
        }
    if (!sharesLoops)
      return false;
    for (Operation *user : first->getUsers()) {
      Operation *ancestor = second->getBlock()->findAncestorOpInBlock(*user);
      if (!ancestor || !second->isBeforeInBlock(ancestor))
        return false;
    }
    return true;
  }

  static LogicalResult merge(linalg::GenericOp first, linalg::GenericOp second,
                             PatternRewriter &rewriter) {
    SmallVector<Value> inputs(first.getDpsInputs());
    llvm::append_range(inputs, second.getDpsInputs());
    SmallVector<Value> inits(first.getDpsInits());
    llvm::append_range(inits, second.getDpsInits());
    SmallVector<AffineMap> maps;
    for (OpOperand *operand : first.getDpsInputOperands())
      maps.push_back(first.getMatchingIndexingMap(operand));
    for (OpOperand *operand : second.getDpsInputOperands())
      maps.push_back(second.getMatchingIndexingMap(operand));
    for (OpOperand &operand : first.getDpsInitsMutable())
      maps.push_back(first.getMatchingIndexingMap(&operand));
    for (OpOperand &operand : second.getDpsInitsMutable())
      maps.push_back(second.getMatchingIndexingMap(&operand));
    SmallVector<utils::IteratorType> iterators;
    for (auto [a, b] : llvm::zip(first.getIteratorTypesArray(),
                                 second.getIteratorTypesArray()))
      iterators.push_back(a == b ? a : utils::IteratorType::reduction);
    SmallVector<Type> resultTypes(first.getResultTypes());
    llvm::append_range(resultTypes, second.getResultTypes());

    rewriter.setInsertionPoint(second);
    auto merged = linalg::GenericOp::create(
        rewriter, second.getLoc(), resultTypes, inputs, inits, maps,
        iterators, [&](OpBuilder &b, Location loc, ValueRange args) {
          unsigned firstInputs = first.getNumDpsInputs();
          unsigned secondInputs = second.getNumDpsInputs();
          unsigned firstOutputs = first.getNumDpsInits();
          IRMapping mapping;
          Block *firstBody = first.getBody(), *secondBody = second.getBody();
          for (unsigned i = 0; i < firstInputs; ++i)
            mapping.map(firstBody->getArgument(i), args[i]);
          for (unsigned i = 0; i < secondInputs; ++i)
            mapping.map(secondBody->getArgument(i), args[firstInputs + i]);
          for (unsigned i = 0; i < firstOutputs; ++i)
            mapping.map(firstBody->getArgument(firstInputs + i),
                        args[firstInputs + secondInputs + i]);
          for (unsigned i = 0; i < second.getNumDpsInits(); ++i)
            mapping.map(secondBody->getArgument(secondInputs + i),
                        args[firstInputs + secondInputs + firstOutputs + i]);
          SmallVector<Value> yielded;
          for (Block *body : {firstBody, secondBody}) {
            for (Operation &op : body->without_terminator())
              b.clone(op, mapping);
            for (Value value : body->getTerminator()->getOperands())
              yielded.push_back(mapping.lookupOrDefault(value));
          }
          linalg::YieldOp::create(b, loc, yielded);
        });
    unsigned numFirst = first.getNumResults();
    rewriter.replaceOp(first, merged.getResults().take_front(numFirst));
    rewriter.replaceOp(second, merged.getResults().drop_front(numFirst));
    return success();
  }
};

/// The size of a tensor the pullback reads back from a buffer (the
/// `to_tensor` of a subview: a per-iteration buffer's element, a tape row's
/// slots) is the subview's size. A tensor read only for its shape, as the
/// shape of a cotangent, then is not read at all, and the forward function
/// stops keeping it.
struct SizeOfKeptTensor : OpRewritePattern<tensor::DimOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::DimOp dim,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> position = dim.getConstantIndex();
    auto toTensor = dim.getSource().getDefiningOp<bufferization::ToTensorOp>();
    if (!position || !toTensor)
      return failure();
    auto subview = toTensor.getBuffer().getDefiningOp<memref::SubViewOp>();
    if (!subview)
      return failure();
    llvm::SmallBitVector dropped = subview.getDroppedDims();
    SmallVector<OpFoldResult> sizes = subview.getMixedSizes();
    int64_t kept = -1;
    for (auto [i, size] : llvm::enumerate(sizes)) {
      if (dropped.test(i) || ++kept != *position)
        continue;
      rewriter.replaceOp(dim, getValueOrCreateConstantIndexOp(
                                  rewriter, dim.getLoc(), size));
      if (toTensor->use_empty())
        rewriter.eraseOp(toTensor);
      if (subview->use_empty())
        rewriter.eraseOp(subview);
      return success();
    }
    return failure();
  }
};

/// `acc + insert_slice(d into zeros)`, the cotangent of a slice added to
/// the whole value's (a layer's parameters in a loop over layers), becomes
/// `insert_slice(extract_slice(acc) + d into acc)`: the sum touches the
/// slice only, not the whole value.
struct AddOfSliceIntoZeros : OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::AddFOp add,
                                PatternRewriter &rewriter) const override {
    if (!isa<RankedTensorType>(add.getType()))
      return failure();
    for (unsigned side = 0; side < 2; ++side) {
      Value acc = add->getOperand(side);
      auto insert =
          add->getOperand(1 - side).getDefiningOp<tensor::InsertSliceOp>();
      if (!insert || !isZeroTensor(insert.getDest()))
        continue;
      Location loc = add.getLoc();
      Value part = tensor::ExtractSliceOp::create(
          rewriter, loc, insert.getSourceType(), acc, insert.getMixedOffsets(),
          insert.getMixedSizes(), insert.getMixedStrides());
      Value sum = arith::AddFOp::create(rewriter, loc, part, insert.getSource(),
                                        add.getFastmathAttr());
      rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
          add, sum, acc, insert.getMixedOffsets(), insert.getMixedSizes(),
          insert.getMixedStrides());
      return success();
    }
    return failure();
  }
};

struct ADSimplifyAdjointsPass
    : mlir::ad::impl::ADSimplifyAdjointsPassBase<ADSimplifyAdjointsPass> {
  void runOnOperation() override {
    simplifyAdjoints(getOperation());
  }
};

} // namespace

void mlir::ad::populateAdjointSimplificationPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ScatterIntoSum, SumIntoZeros, SizeOfKeptTensor,
               AddOfSliceIntoZeros, GuardSelectedSum, SumFactorFirst>(
      patterns.getContext());
  linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
  populateEraseDeadResultPatterns(patterns);
}

void mlir::ad::simplifyAdjoints(Operation *root) {
  MLIRContext *context = root->getContext();
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  // Not converging within the iteration limit leaves valid, less simplified
  // IR: not an error.
  RewritePatternSet patterns(context);
  populateAdjointSimplificationPatterns(patterns);
  (void)applyPatternsGreedily(root, std::move(patterns), config);
  // Merging siblings last: a merged generic has several outputs, which the
  // fusions above do not handle.
  RewritePatternSet merging(context);
  merging.add<MergeSiblings, SumIntoZeros>(context);
  linalg::populateEraseUnusedOperandsAndResultsPatterns(merging);
  populateEraseDeadResultPatterns(merging);
  (void)applyPatternsGreedily(root, std::move(merging), config);
}
