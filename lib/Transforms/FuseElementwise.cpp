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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADFUSEELEMENTWISEPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;

namespace {
/// Most operations of a producer worth computing again in a consumer rather
/// than reading back from memory.
constexpr unsigned kMaxRecomputedOps = 8;

/// Whether `producer`'s body is a few cheap operations (no division, no
/// math function, no call).
static bool isCheapToRecompute(linalg::GenericOp producer) {
  unsigned count = 0;
  for (Operation &op : producer.getBlock()->without_terminator()) {
    if (!isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::NegFOp,
             arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
             arith::MinNumFOp, arith::CmpFOp, arith::SelectOp,
             arith::ConstantOp, arith::ExtFOp, arith::TruncFOp,
             arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::CmpIOp,
             arith::AndIOp, arith::OrIOp, arith::XOrIOp>(op))
      return false;
    if (++count > kMaxRecomputedOps)
      return false;
  }
  return true;
}

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
  if (!isCheapToRecompute(producer))
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

/// Fills a constant-filled destination again where it is written into.
/// A `tensor.insert_slice` or a linalg op writing into the result of a
/// `linalg.fill` that other ops read too, or that was made in another block
/// (hoisted out of a loop), bufferizes to a copy of the filled buffer: a
/// read and a write. Filling a fresh buffer there is a write only.
static void refillDestinations(Operation *root) {
  SmallVector<OpOperand *> destinations;
  root->walk([&](Operation *op) {
    auto write = dyn_cast<DestinationStyleOpInterface>(op);
    if (!write || !write.hasPureTensorSemantics())
      return;
    for (OpOperand &init : write.getDpsInitsMutable()) {
      auto fill = init.get().getDefiningOp<linalg::FillOp>();
      if (fill && fill.hasPureTensorSemantics() &&
          (!fill->hasOneUse() || fill->getBlock() != op->getBlock()))
        destinations.push_back(&init);
    }
  });
  OpBuilder builder(root->getContext());
  for (OpOperand *init : destinations) {
    auto fill = init->get().getDefiningOp<linalg::FillOp>();
    builder.setInsertionPoint(init->getOwner());
    init->set(builder.clone(*fill)->getResult(0));
    if (fill->use_empty())
      fill->erase();
  }
}

struct ADFuseElementwisePass
    : mlir::ad::impl::ADFuseElementwisePassBase<ADFuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    refillDestinations(getOperation());
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseIntoConsumer>(&getContext());
    // Results of fused ops nobody reads (a moved producer's result that
    // only the consumer read) and the operands they needed.
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    // Every step leaves valid IR: stopping at the iteration limit only
    // leaves some ops unfused.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
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
