//===- FuseElementwise.cpp - one pass over memory per chain ------*- C++ -*-===//
//
// ad-fuse-elementwise: an elementwise `linalg.generic` read by another
// generic in the same block is computed inside that generic (upstream
// `linalg::fuseElementwiseOps`), so a chain of elementwise ops, or an
// elementwise op feeding a reduction, is one loop nest and one pass over
// memory instead of one buffer per op.
//
// Fusion makes no expensive work: the consumer must read the producer's
// result through a permutation of all its loops, so it computes each
// element once, and a producer that other ops also read (and which
// therefore stays) is fused only if its body is a few additions,
// multiplications or comparisons of tensors the consumer reads anyway,
// cheaper than reading its result back. A producer read through a broadcast (a matmul's
// operand, a row read by every column) stays a loop of its own: fused into
// a contraction it would be recomputed for every output element and the
// contraction would no longer be the multiply-add ad-vectorize
// register-tiles. Producers outside a loop are not moved into it. Each
// element is computed by the same operations in the same order, so the
// results are bit-identical.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADFUSEELEMENTWISEPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;

namespace {
/// Most operations of a producer worth computing again in each consumer
/// rather than reading back from memory.
constexpr unsigned kMaxRecomputedOps = 8;

/// Whether `producer`'s body is a few cheap operations (no division, no
/// math function, no call): reading its result back from memory costs more
/// than computing it again.
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

/// Whether the producer of `operand` (an input of a generic) is fused into
/// its consumer. Upstream fusion leaves the producer in place for its other
/// readers, so the fused op computes it again: allowed only when that is a
/// few cheap operations on tensors the consumer reads anyway. Either way the consumer must visit each element of
/// the producer once (a permutation of its loops), and must only read the
/// producer: if it also writes into a result, the producer stays alive.
static bool worthFusing(OpOperand *operand) {
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
  if (!producer || !consumer || producer->getBlock() != consumer->getBlock())
    return false;
  if (!consumer.getMatchingIndexingMap(operand).isPermutation())
    return false;
  bool exclusive = true;
  for (OpOperand &use : producer->getUses()) {
    if (use.getOwner() != consumer.getOperation())
      exclusive = false;
    else if (!consumer.isDpsInput(&use))
      return false;
  }
  if (exclusive)
    return true;
  // The producer stays and still writes its result: computing it again
  // only saves reading it back, so it must not make the consumer read
  // anything it did not already read.
  if (!isCheapToRecompute(producer))
    return false;
  return llvm::all_of(producer.getDpsInputs(), [&](Value input) {
    return !isa<RankedTensorType>(input.getType()) ||
           llvm::is_contained(consumer.getDpsInputs(), input);
  });
}

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
    linalg::populateElementwiseOpsFusionPatterns(patterns,
                                                 worthFusing);
    // Every step leaves valid IR: stopping at the iteration limit only
    // leaves some ops unfused.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};
} // namespace
