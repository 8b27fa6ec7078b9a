//===- FuseElementwise.cpp - one pass over memory per chain ------*- C++ -*-===//
//
// ad-fuse-elementwise: an elementwise `linalg.generic` read by another
// generic in the same block is computed inside that generic (upstream
// `linalg::fuseElementwiseOps`), so a chain of elementwise ops, or an
// elementwise op feeding a reduction, is one loop nest and one pass over
// memory instead of one buffer per op.
//
// Fusion makes no expensive work. The consumer must read the producer
// through a permutation of all its loops, so it computes each element once.
// The producer's results that other ops read become results of the fused
// op when those readers come after it; otherwise the producer stays for
// them and the fused op computes it again, which is allowed only for a few
// additions, multiplications or comparisons of tensors the consumer reads
// anyway (cheaper than reading the result back). Upstream's own pattern
// set is not used: it also replaces a generic's `outs` that the body does
// not read by a `tensor.empty`, which turns the in-place accumulations of
// adjoints (`insert_slice(add(slice, d))`) into a new buffer and a copy.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"
#include "ad/Transforms/Preparation.h"

#include "GenericParts.h"
#include "IndexingLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADFUSEELEMENTWISEPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;
using mlir::ad::bodySlice;
using mlir::ad::loopsOf;

namespace {
/// Whether `user`, or the op of `op`'s block it is nested in, comes after
/// `op`.
static bool isAfterInBlock(Operation *user, Operation *op) {
  Operation *ancestor = op->getBlock()->findAncestorOpInBlock(*user);
  return ancestor && ancestor != op && op->isBeforeInBlock(ancestor);
}

/// What fusing the producer of an input into its consumer does with the
/// producer.
enum class Fusion {
  None,
  /// The fused op computes the producer's results for every reader.
  Move,
  /// The producer stays for readers before the consumer; the fused op
  /// computes it again.
  Recompute,
};

static Fusion planFusion(OpOperand *operand) {
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
  if (!producer || !consumer || producer->getBlock() != consumer->getBlock() ||
      !linalg::areElementwiseOpsFusable(operand) ||
      !consumer.getMatchingIndexingMap(operand).isPermutation())
    return Fusion::None;
  bool othersAfter = true;
  for (OpOperand &use : producer->getUses()) {
    if (use.getOwner() == consumer.getOperation()) {
      // A result the consumer writes into would stay alive.
      if (!consumer.isDpsInput(&use))
        return Fusion::None;
    } else if (!isAfterInBlock(use.getOwner(), consumer)) {
      othersAfter = false;
    }
  }
  if (othersAfter)
    return Fusion::Move;
  // A producer that reads its outputs would make the fused op write them
  // too, and bufferization copy them for the producer that stays.
  if (!ad::isCheapBody(*producer.getBlock()) ||
      llvm::any_of(producer.getDpsInitsMutable(), [&](OpOperand &init) {
        return producer.payloadUsesValueFromOperand(&init);
      }))
    return Fusion::None;
  // Recomputing saves reading the result back only if the consumer need
  // not read anything new for it.
  bool readsNothingNew =
      llvm::all_of(producer.getDpsInputs(), [&](Value input) {
        return !isa<RankedTensorType>(input.getType()) ||
               llvm::is_contained(consumer.getDpsInputs(), input);
      });
  return readsNothingNew ? Fusion::Recompute : Fusion::None;
}

/// An input of a generic that a linalg.fill produces holds the fill's
/// value in every element: the body reads that value instead (a zero
/// tangent, or an all-ones direction, read in every iteration of a loop
/// nest), folding follows (x + 0, 1 * x), and the unused input goes.
struct FoldFillInput : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const override {
    if (!generic.hasPureTensorSemantics())
      return failure();
    bool changed = false;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      auto fill = input->get().getDefiningOp<linalg::FillOp>();
      if (!fill || !fill.hasPureTensorSemantics())
        continue;
      BlockArgument argument = generic.getMatchingBlockArgument(input);
      Value value = fill.getInputs()[0];
      if (argument.use_empty() || value.getType() != argument.getType())
        continue;
      rewriter.modifyOpInPlace(generic,
                               [&] { argument.replaceAllUsesWith(value); });
      changed = true;
    }
    return success(changed);
  }
};

struct FuseIntoConsumer : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    if (!consumer.hasPureTensorSemantics())
      return failure();
    for (OpOperand *operand : consumer.getDpsInputOperands()) {
      Fusion plan = planFusion(operand);
      if (plan == Fusion::None)
        continue;
      Operation *producer = operand->get().getDefiningOp();
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, operand);
      if (failed(fused))
        continue;
      // The fused op stands where the consumer was: the producer's readers
      // after it may read its copy of the producer's results. The fused op
      // itself still reads the producer if the consumer read it through
      // several operands (fused in turn next).
      Operation *fusedOp = fused->fusedOp;
      for (auto [original, replacement] : fused->replacements) {
        if (original.getDefiningOp() != producer)
          rewriter.replaceAllUsesWith(original, replacement);
        else if (plan == Fusion::Move)
          rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &use) {
            return use.getOwner() != consumer.getOperation() &&
                   use.getOwner() != fusedOp;
          });
      }
      rewriter.eraseOp(consumer);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }
};

/// Gives each write into a shared or hoisted destination a destination of
/// its own. A `tensor.insert_slice` or a linalg op writing into a
/// `linalg.fill` or a `tensor.empty` that other ops use too, or that was
/// made in another block (hoisted out of a loop by LICM, merged by CSE),
/// bufferizes to a copy: of the filled buffer (a read and a write where a
/// fill is a write), or, in a loop yielding the result, of the whole result
/// at every iteration so that the next one may overwrite the buffer. A
/// `tensor.empty` costs nothing to repeat.
static void giveDestinationsBack(Operation *root) {
  SmallVector<OpOperand *> destinations;
  root->walk([&](Operation *op) {
    auto write = dyn_cast<DestinationStyleOpInterface>(op);
    if (!write || !write.hasPureTensorSemantics())
      return;
    for (OpOperand &init : write.getDpsInitsMutable()) {
      Operation *def = init.get().getDefiningOp();
      auto fill = dyn_cast_or_null<linalg::FillOp>(def);
      if (!isa_and_nonnull<tensor::EmptyOp>(def) &&
          !(fill && fill.hasPureTensorSemantics()))
        continue;
      if (!def->hasOneUse() || def->getBlock() != op->getBlock())
        destinations.push_back(&init);
    }
  });
  OpBuilder builder(root->getContext());
  for (OpOperand *init : destinations) {
    Operation *def = init->get().getDefiningOp();
    builder.setInsertionPoint(init->getOwner());
    init->set(builder.clone(*def)->getResult(0));
    if (def->use_empty())
      def->erase();
  }
}

/// Splits a generic on tensors whose outputs are indexed by different sets
/// of loops into one generic per set: an elementwise output (every loop)
/// and a reduction (the adjoints merge `dp * t` and `sum(dp)`; fusion
/// merges an elementwise op with the reduction reading it), or reductions
/// over different loops (`dw = sum_i x dy` and `db = sum_ij dy`). Merged,
/// a reduction cannot keep its partial sums in registers (the elementwise
/// output is written between them) and is vectorized as one sequential sum
/// per vector, and reductions over different loops cannot be vectorized
/// at all. Each part computes again what it needs of the body, so every
/// reduction's part must need only cheap operations; no part may read
/// another's outputs; each part's operands must still give the size of
/// every loop; and bodies with regions are left alone.
static void splitMixedOutputs(RewriterBase &rewriter, Operation *root) {
  SmallVector<linalg::GenericOp> generics;
  root->walk([&](linalg::GenericOp op) {
    if (op.hasPureTensorSemantics() && op.getNumReductionLoops() > 0 &&
        op.getNumDpsInits() > 1)
      generics.push_back(op);
  });
  for (linalg::GenericOp op : generics) {
    Block *body = op.getBlock();
    if (llvm::any_of(body->getOperations(),
                     [](Operation &o) { return o.getNumRegions() != 0; }))
      continue;
    unsigned numLoops = op.getNumLoops();
    // The outputs, grouped by the loops they are indexed by.
    SmallVector<std::pair<llvm::SmallBitVector, SmallVector<OpOperand *>>>
        groups;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      llvm::SmallBitVector loops = loopsOf(op.getMatchingIndexingMap(&init));
      auto group = llvm::find_if(groups, [&](auto &g) { return g.first == loops; });
      if (group == groups.end())
        groups.push_back({loops, {&init}});
      else
        group->second.push_back(&init);
    }
    if (groups.size() < 2)
      continue;

    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    auto yieldedBy = [&](ArrayRef<OpOperand *> inits) {
      SmallVector<Value> values;
      for (OpOperand *init : inits)
        values.push_back(yield.getOperand(init->getOperandNumber() -
                                          op.getNumDpsInputs()));
      return values;
    };
    llvm::SmallBitVector inputLoops(numLoops);
    for (OpOperand *input : op.getDpsInputOperands())
      inputLoops |= loopsOf(op.getMatchingIndexingMap(input));
    bool splittable = true;
    for (auto &[loops, inits] : groups) {
      bool elementwise = loops.all();
      SmallVector<Value> values = yieldedBy(inits);
      llvm::SetVector<Operation *> slice = bodySlice(body, values);
      if (!elementwise &&
          !llvm::all_of(slice, ad::isCheapScalarOp))
        splittable = false;
      // The part's inputs and outputs must give every loop's size.
      if (!(inputLoops | loops).all())
        splittable = false;
      // It may not read another part's outputs.
      for (OpOperand &init : op.getDpsInitsMutable()) {
        if (llvm::is_contained(inits, &init))
          continue;
        BlockArgument arg = op.getMatchingBlockArgument(&init);
        if (llvm::is_contained(values, Value(arg)) ||
            llvm::any_of(arg.getUsers(),
                         [&](Operation *user) { return slice.contains(user); }))
          splittable = false;
      }
    }
    if (!splittable)
      continue;

    rewriter.setInsertionPoint(op);
    for (auto &[loops, inits] : groups) {
      llvm::SetVector<Operation *> slice = bodySlice(body, yieldedBy(inits));
      SmallVector<AffineMap> outputMaps;
      for (OpOperand *init : inits)
        outputMaps.push_back(op.getMatchingIndexingMap(init));
      // The loops the part's outputs are indexed by are parallel, the others
      // reduced (an elementwise part has only parallel loops).
      linalg::GenericOp part = ad::buildGenericPart(
          rewriter, op, inits,
          ad::iteratorTypesOfOutputs(numLoops, outputMaps), slice);
      for (auto [init, result] : llvm::zip(inits, part->getResults()))
        rewriter.replaceAllUsesWith(op.getTiedOpResult(init), result);
    }
    rewriter.eraseOp(op);
  }
}

struct ADFuseElementwisePass
    : mlir::ad::impl::ADFuseElementwisePassBase<ADFuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    giveDestinationsBack(getOperation());
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseIntoConsumer, FoldFillInput>(&getContext());
    // Results of fused ops nobody reads (a moved producer's result that
    // only the consumer read) and the operands they needed.
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    ad::populateEraseDeadResultPatterns(patterns);
    // Every step leaves valid IR: stopping at the iteration limit only
    // leaves some ops unfused.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
    IRRewriter splitter(&getContext());
    splitMixedOutputs(splitter, getOperation());
    // The parts of a split generic keep every input of the whole.
    RewritePatternSet cleanup(&getContext());
    linalg::populateEraseUnusedOperandsAndResultsPatterns(cleanup);
    ad::populateEraseDeadResultPatterns(cleanup);
    (void)applyPatternsGreedily(getOperation(), std::move(cleanup));
    // Padded tensors read in place, once the generics reading them are
    // fused.
    ad::splitPaddedInputs(getOperation());
    // A producer read through several operands is inlined once per
    // operand: one computation is enough. Only inside the bodies: CSE of
    // the function would merge the fills given back above.
    IRRewriter rewriter(&getContext());
    DominanceInfo dominance(getOperation());
    getOperation()->walk([&](linalg::GenericOp generic) {
      eliminateCommonSubExpressions(rewriter, dominance, generic);
    });
  }
};
} // namespace
