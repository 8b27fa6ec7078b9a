//===- Parallelize.cpp - marked tile loops on OpenMP threads ----*- C++ -*-===//
//
// ad-parallelize: the outermost tile loop of a linalg op over one of its
// parallel dimensions (ad-vectorize marks it `ad.parallel`) becomes an
// OpenMP worksharing loop inside a parallel region, which runs only when
// the loop nest has enough iterations to pay for waking the other threads.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "ViewRoots.h"

#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADPARALLELIZEPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;

namespace {

/// Whether `value` is defined outside `loop` (so known before it starts).
static bool definedOutside(Value value, Operation *loop) {
  return !loop->isAncestor(value.getParentBlock()->getParentOp());
}

/// The trip count of `loop` as an index value built before `outer`, or a
/// null value when its bounds are computed inside `outer`.
static Value tripCount(OpBuilder &builder, scf::ForOp loop, Operation *outer) {
  Value lower = loop.getLowerBound(), upper = loop.getUpperBound(),
        step = loop.getStep();
  if (loop != outer && !(definedOutside(lower, outer) &&
                         definedOutside(upper, outer) &&
                         definedOutside(step, outer)))
    return {};
  if (!lower.getType().isIndex())
    return {};
  Location loc = loop.getLoc();
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value span = builder.createOrFold<arith::SubIOp>(loc, upper, lower);
  Value trips = builder.createOrFold<arith::CeilDivSIOp>(loc, span, step);
  return builder.createOrFold<arith::MaxSIOp>(loc, trips, zero);
}

/// An estimate of the iterations the ops of `block` run, built before
/// `outer`: each loop with bounds known there counts its trip count times
/// the iterations of its body; ops without such loops count one.
static Value estimateWork(OpBuilder &builder, Block &block, Operation *outer) {
  Location loc = outer->getLoc();
  Value total;
  auto add = [&](Value work) {
    total = total ? builder.createOrFold<arith::AddIOp>(loc, total, work)
                  : work;
  };
  for (Operation &op : block) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      Value body = estimateWork(builder, *loop.getBody(), outer);
      if (Value trips = tripCount(builder, loop, outer))
        body = builder.createOrFold<arith::MulIOp>(loc, trips, body);
      add(body);
      continue;
    }
    // Branches and other regions: the larger is a fair estimate, the sum
    // a safe one for the decision taken with it.
    for (Region &region : op.getRegions())
      for (Block &nested : region)
        add(estimateWork(builder, nested, outer));
  }
  if (!total)
    return arith::ConstantIndexOp::create(builder, loc, 1);
  return total;
}

/// Why `loop` must stay sequential, or null.
static const char *whySequential(scf::ForOp loop) {
  if (loop.getNumResults() != 0)
    return "it has results";
  if (!loop.getLowerBound().getType().isIndex())
    return "its induction variable is not an index";
  if (loop->getParentOfType<omp::ParallelOp>())
    return "it is nested in a parallel region";
  // A stack buffer allocated before the loop and used in it would be shared
  // by the threads (vector transfers lowered through a temporary do that).
  // (Or a view of one: a subview, a cast.)
  WalkResult shared = loop.getBody()->walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (definedOutside(operand, loop))
        if (auto alloca =
                ad::rootBuffer(operand).getDefiningOp<memref::AllocaOp>();
            alloca && definedOutside(alloca.getResult(), loop))
          return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (shared.wasInterrupted())
    return "its body uses a stack buffer allocated outside it";
  return nullptr;
}

/// Rewrites `loop` into `omp.parallel if(work >= minWork) { omp.wsloop {
/// omp.loop_nest ... } }`, or leaves it sequential when the work is known
/// to be too small.
static void parallelize(IRRewriter &rewriter, scf::ForOp loop,
                        int64_t minWork) {
  Location loc = loop.getLoc();
  MLIRContext *context = loop.getContext();
  rewriter.setInsertionPoint(loop);
  Value trips = tripCount(rewriter, loop, loop);
  Value work = rewriter.createOrFold<arith::MulIOp>(
      loc, trips, estimateWork(rewriter, *loop.getBody(), loop));
  Value threshold = arith::ConstantIndexOp::create(rewriter, loc, minWork);
  Value two = arith::ConstantIndexOp::create(rewriter, loc, 2);
  // A peeled remainder (one iteration) has nothing to share.
  Value enough = rewriter.createOrFold<arith::AndIOp>(
      loc,
      rewriter.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sge,
                                           work, threshold),
      rewriter.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sge,
                                           trips, two));
  std::optional<int64_t> known = getConstantIntValue(enough);
  if (known && !*known)
    return;

  // A parallel region with a false `if` still costs a serialized region in
  // the runtime (microseconds, as much as a small op's work): the loop
  // stays as it is on that branch.
  if (!known) {
    auto branch = scf::IfOp::create(rewriter, loc, enough,
                                    /*withElseRegion=*/true);
    rewriter.setInsertionPoint(branch.elseBlock()->getTerminator());
    rewriter.clone(*loop);
    rewriter.setInsertionPoint(branch.thenBlock()->getTerminator());
  }
  auto parallel = omp::ParallelOp::create(rewriter, loc, omp::ParallelOperands());
  rewriter.createBlock(&parallel.getRegion());
  omp::WsloopOperands loopClauses;
  loopClauses.scheduleKind = omp::ClauseScheduleKindAttr::get(
      context, omp::ClauseScheduleKind::Static);
  auto wsloop = omp::WsloopOp::create(rewriter, loc, loopClauses);
  omp::TerminatorOp::create(rewriter, loc);
  rewriter.createBlock(&wsloop.getRegion());
  omp::LoopNestOperands nestClauses;
  nestClauses.loopLowerBounds = {loop.getLowerBound()};
  nestClauses.loopUpperBounds = {loop.getUpperBound()};
  nestClauses.loopSteps = {loop.getStep()};
  auto nest = omp::LoopNestOp::create(rewriter, loc, nestClauses);
  Block *nestBody = rewriter.createBlock(
      &nest.getRegion(), {}, {loop.getInductionVar().getType()}, {loc});
  // Stack buffers the body allocates are released at each iteration's end,
  // as they were by the loop (each thread has its own stack).
  bool allocates = llvm::any_of(loop.getBody()->getOperations(),
                                [](Operation &op) {
                                  return isa<memref::AllocaOp>(op);
                                });
  Block *target = nestBody;
  if (allocates) {
    auto scope = memref::AllocaScopeOp::create(rewriter, loc, TypeRange());
    Block *scopeBody = rewriter.createBlock(&scope.getBodyRegion());
    memref::AllocaScopeReturnOp::create(rewriter, loc, ValueRange());
    target = scopeBody;
    rewriter.setInsertionPointToEnd(nestBody);
  }
  Operation *yield = loop.getBody()->getTerminator();
  rewriter.eraseOp(yield);
  rewriter.inlineBlockBefore(loop.getBody(), target,
                             allocates ? std::prev(target->end())
                                       : target->end(),
                             nestBody->getArguments());
  rewriter.setInsertionPointToEnd(nestBody);
  omp::YieldOp::create(rewriter, loc);
  rewriter.eraseOp(loop);
}

struct ADParallelizePass
    : mlir::ad::impl::ADParallelizePassBase<ADParallelizePass> {
  using Base::Base;

  void runOnOperation() override {
    StringAttr marker = StringAttr::get(&getContext(), "ad.parallel");
    SmallVector<scf::ForOp> loops;
    getOperation().walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
      if (loop->removeAttr(marker))
        loops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    // Outermost first: a marked loop inside one already parallel stays
    // sequential.
    for (scf::ForOp loop : loops) {
      if (whySequential(loop))
        continue;
      parallelize(rewriter, loop, minWork);
    }
  }
};
} // namespace
