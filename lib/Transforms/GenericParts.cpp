//===- GenericParts.cpp - generics computing part of another --------------===//
//
// The helpers of GenericParts.h, and the removal of dead result chains.
//
// A generic's result that nothing reads still costs its whole computation:
// upstream drops such a result only when the body does not read its init,
// or reads it once to yield it. Merged and fused generics carry longer
// chains: the forward of a Hessian-vector product computes a tangent of
// every forward value in the same loop nest as the value, and when the
// pullback reads no tangent of some value (a comparison's operands), that
// output still accumulates its tangent over the whole iteration space.
//
// EraseDeadResultChains replaces such a generic by its part computing the
// outputs that are read and those whose init these read (the body ops
// they need, and every op with a memory effect). The outputs that stay
// must still give every loop its range.
//
// ForwardRepeatedResults gives the readers of a result that only repeats
// another (the same yielded value through the same map) or copies an input
// (an input yielded through the map it is read by) that result or input
// instead: fusion leaves such results (the cotangents 2h/6 dy of two RK4
// stages, an input passed through to a consumer merged in), and each costs
// a pass writing memory. EraseDeadResultChains then drops them.
//
// ReadInitsAsInputs makes an output nobody reads, whose init the body reads
// (an accumulator read for the value so far by other outputs), an input:
// the pass no longer writes it back. Only when its map reaches every loop,
// so that each element is read once, before any iteration writes it.
//
//===----------------------------------------------------------------------===//

#include "GenericParts.h"

#include "ad/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

llvm::SetVector<Operation *> mlir::ad::bodySlice(Block *body,
                                                 ArrayRef<Value> roots,
                                                 bool withEffects) {
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> worklist(roots.begin(), roots.end());
  auto add = [&](Operation *op) {
    if (!slice.insert(op))
      return;
    op->walk([&](Operation *nested) {
      llvm::append_range(worklist, nested->getOperands());
    });
  };
  if (withEffects)
    for (Operation &op : body->without_terminator())
      if (!isMemoryEffectFree(&op))
        add(&op);
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    Operation *def = value.getDefiningOp();
    if (!def)
      continue;
    // A value defined in a region nested in a body op belongs to that op.
    Operation *owner = body->findAncestorOpInBlock(*def);
    if (owner)
      add(owner);
  }
  // In body order.
  llvm::SetVector<Operation *> ordered;
  for (Operation &op : *body)
    if (slice.contains(&op))
      ordered.insert(&op);
  return ordered;
}

linalg::GenericOp
mlir::ad::buildGenericPart(OpBuilder &builder, linalg::GenericOp op,
                           ArrayRef<OpOperand *> inits,
                           ArrayRef<utils::IteratorType> iterators,
                           const llvm::SetVector<Operation *> &slice,
                           ArrayRef<Value> yields) {
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  unsigned numInputs = op.getNumDpsInputs();
  SmallVector<Value> outs;
  SmallVector<Type> types;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands())
    maps.push_back(op.getMatchingIndexingMap(input));
  for (OpOperand *init : inits) {
    outs.push_back(init->get());
    if (op.hasPureTensorSemantics())
      types.push_back(op.getTiedOpResult(init).getType());
    maps.push_back(op.getMatchingIndexingMap(init));
  }
  auto part = linalg::GenericOp::create(
      builder, op.getLoc(), types, op.getDpsInputs(), outs, maps, iterators,
      [&](OpBuilder &b, Location loc, ValueRange args) {
        IRMapping mapping;
        for (unsigned i = 0; i < numInputs; ++i)
          mapping.map(body->getArgument(i), args[i]);
        for (auto [i, init] : llvm::enumerate(inits))
          mapping.map(op.getMatchingBlockArgument(init), args[numInputs + i]);
        for (Operation &o : body->without_terminator())
          if (slice.contains(&o))
            b.clone(o, mapping);
        SmallVector<Value> results;
        for (auto [i, init] : llvm::enumerate(inits))
          results.push_back(mapping.lookupOrDefault(
              yields.empty()
                  ? yield.getOperand(init->getOperandNumber() - numInputs)
                  : yields[i]));
        linalg::YieldOp::create(b, loc, results);
      });
  part->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  return part;
}

namespace {

struct EraseDeadResultChains : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const override {
    if (!generic.hasPureTensorSemantics() || generic.getNumResults() < 2 ||
        llvm::all_of(generic->getResults(),
                     [](Value result) { return !result.use_empty(); }))
      return failure();
    Block *body = generic.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());

    // The outputs read, and those whose init what they need reads, until
    // nothing more is needed.
    SmallVector<OpOperand *> kept;
    for (OpOperand &init : generic.getDpsInitsMutable())
      if (!generic.getTiedOpResult(&init).use_empty())
        kept.push_back(&init);
    llvm::SetVector<Operation *> slice;
    for (bool grew = true; grew;) {
      SmallVector<Value> roots;
      for (OpOperand *init : kept)
        roots.push_back(yield.getOperand(init->getOperandNumber() -
                                         generic.getNumDpsInputs()));
      slice = ad::bodySlice(body, roots, /*withEffects=*/true);
      grew = false;
      for (OpOperand &init : generic.getDpsInitsMutable()) {
        if (llvm::is_contained(kept, &init))
          continue;
        BlockArgument argument = generic.getMatchingBlockArgument(&init);
        bool read =
            llvm::is_contained(roots, Value(argument)) ||
            llvm::any_of(argument.getUsers(), [&](Operation *user) {
              Operation *owner = body->findAncestorOpInBlock(*user);
              return owner && slice.contains(owner);
            });
        if (read) {
          kept.push_back(&init);
          grew = true;
        }
      }
    }
    if (kept.size() == generic.getNumResults())
      return rewriter.notifyMatchFailure(generic, "every init is read");
    llvm::sort(kept, [](OpOperand *a, OpOperand *b) {
      return a->getOperandNumber() < b->getOperandNumber();
    });
    SmallVector<OpOperand *> dropped;
    for (OpOperand &init : generic.getDpsInitsMutable())
      if (!llvm::is_contained(kept, &init))
        dropped.push_back(&init);
    if (!generic.canOpOperandsBeDropped(dropped))
      return rewriter.notifyMatchFailure(generic,
                                         "a loop would lose its range");

    rewriter.setInsertionPoint(generic);
    linalg::GenericOp part = ad::buildGenericPart(
        rewriter, generic, kept, generic.getIteratorTypesArray(), slice);
    if (generic.getDocAttr())
      part.setDocAttr(generic.getDocAttr());
    if (generic.getLibraryCallAttr())
      part.setLibraryCallAttr(generic.getLibraryCallAttr());
    // An unused result is replaced by its init: any value of its type will
    // do.
    SmallVector<Value> replacements(generic.getDpsInits());
    for (auto [init, result] : llvm::zip(kept, part->getResults()))
      replacements[init->getOperandNumber() - generic.getNumDpsInputs()] =
          result;
    rewriter.replaceOp(generic, replacements);
    return success();
  }
};

struct ForwardRepeatedResults : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const override {
    if (!generic.hasPureTensorSemantics())
      return failure();
    Block *body = generic.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    unsigned numInputs = generic.getNumDpsInputs();
    bool changed = false;
    for (OpOperand &init : generic.getDpsInitsMutable()) {
      OpResult result = generic.getTiedOpResult(&init);
      AffineMap map = generic.getMatchingIndexingMap(&init);
      // Every element of the result is the yielded value at its point
      // (the last one with reductions) only when the body never reads the
      // init and the map reaches every element once per point.
      if (result.use_empty() || !map.isProjectedPermutation() ||
          !generic.getMatchingBlockArgument(&init).use_empty())
        continue;
      // A loop the map does not read may have no iterations, and then the
      // result is its init: only loops known to run.
      SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
      if (llvm::any_of(llvm::seq<unsigned>(0, ranges.size()), [&](unsigned dim) {
            return !map.isFunctionOfDim(dim) &&
                   (ShapedType::isDynamic(ranges[dim]) || ranges[dim] < 1);
          }))
        continue;
      Value yielded = yield.getOperand(init.getOperandNumber() - numInputs);
      Value same;
      // An input yielded through the map it is read by, of the same type.
      if (auto argument = dyn_cast<BlockArgument>(yielded);
          argument && argument.getOwner() == body &&
          argument.getArgNumber() < numInputs) {
        OpOperand *input = generic.getDpsInputOperand(argument.getArgNumber());
        if (generic.getMatchingIndexingMap(input) == map &&
            input->get().getType() == result.getType())
          same = input->get();
      }
      // An earlier result yielding the same value through the same map.
      for (OpOperand &other : generic.getDpsInitsMutable()) {
        if (same || other.getOperandNumber() >= init.getOperandNumber())
          break;
        if (yield.getOperand(other.getOperandNumber() - numInputs) ==
                yielded &&
            generic.getMatchingIndexingMap(&other) == map &&
            generic.getTiedOpResult(&other).getType() == result.getType())
          same = generic.getTiedOpResult(&other);
      }
      if (!same)
        continue;
      rewriter.replaceAllUsesWith(result, same);
      changed = true;
    }
    return success(changed);
  }
};

struct ReadInitsAsInputs : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const override {
    if (!generic.hasPureTensorSemantics() || generic.getNumResults() < 2)
      return failure();
    SmallVector<OpOperand *> moved, kept;
    for (OpOperand &init : generic.getDpsInitsMutable()) {
      AffineMap map = generic.getMatchingIndexingMap(&init);
      if (generic.getTiedOpResult(&init).use_empty() &&
          !generic.getMatchingBlockArgument(&init).use_empty() &&
          map.isPermutation())
        moved.push_back(&init);
      else
        kept.push_back(&init);
    }
    if (moved.empty() || kept.empty())
      return failure();
    unsigned numInputs = generic.getNumDpsInputs();
    SmallVector<Value> inputs(generic.getDpsInputs());
    SmallVector<AffineMap> maps;
    for (OpOperand *input : generic.getDpsInputOperands())
      maps.push_back(generic.getMatchingIndexingMap(input));
    for (OpOperand *init : moved) {
      inputs.push_back(init->get());
      maps.push_back(generic.getMatchingIndexingMap(init));
    }
    SmallVector<Value> outputs;
    SmallVector<Type> types;
    for (OpOperand *init : kept) {
      outputs.push_back(init->get());
      types.push_back(generic.getTiedOpResult(init).getType());
      maps.push_back(generic.getMatchingIndexingMap(init));
    }
    Block *body = generic.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    auto rewritten = linalg::GenericOp::create(
        rewriter, generic.getLoc(), types, inputs, outputs, maps,
        generic.getIteratorTypesArray(),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          IRMapping mapping;
          for (unsigned i = 0; i < numInputs; ++i)
            mapping.map(body->getArgument(i), args[i]);
          unsigned next = numInputs;
          for (OpOperand *init : moved)
            mapping.map(generic.getMatchingBlockArgument(init), args[next++]);
          for (OpOperand *init : kept)
            mapping.map(generic.getMatchingBlockArgument(init), args[next++]);
          for (Operation &op : body->without_terminator())
            b.clone(op, mapping);
          SmallVector<Value> results;
          for (OpOperand *init : kept)
            results.push_back(mapping.lookupOrDefault(
                yield.getOperand(init->getOperandNumber() - numInputs)));
          linalg::YieldOp::create(b, loc, results);
        });
    rewritten->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
    // A moved output is replaced by its init: nothing reads it.
    SmallVector<Value> replacements(generic.getDpsInits());
    for (auto [init, result] : llvm::zip(kept, rewritten->getResults()))
      replacements[init->getOperandNumber() - numInputs] = result;
    rewriter.replaceOp(generic, replacements);
    return success();
  }
};

} // namespace

void mlir::ad::populateEraseDeadResultPatterns(RewritePatternSet &patterns) {
  patterns.add<EraseDeadResultChains, ForwardRepeatedResults,
               ReadInitsAsInputs>(patterns.getContext());
}
