//===- HoistInvariants.cpp - loop-invariant code motion that keeps checks -*- C++ -*-===//
//
// ad-hoist-invariants: upstream's loop-invariant code motion, except that
// work which may fault (tensor ops, linalg ops, anything with a region)
// leaves a loop only when the loop runs at least once, together with the
// run-time checks (`cf.assert`) that guard it. Upstream hoists every
// speculatable op: a slice of `n - 1` elements in a loop that runs `n`
// times was taken before the loop when n = 0 (a slice of -1 elements, a
// corrupted heap), and a checked op moved above its check.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADHOISTINVARIANTSPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;

/// Whether `op` may fault or fail when its operands are not what the loop
/// would have given it: a check, an op on tensors (sizes, offsets and
/// indices are only valid where the program computes them), a loop, an op
/// with regions holding such an op.
static bool mayFault(Operation *op) {
  // A loop may run for as long as its bounds say: an unsigned loop to
  // `n - 1` taken out of a loop that runs no iteration (n = 0) ran 2^64 - 1
  // times (review finding).
  if (isa<cf::AssertOp, LoopLikeOpInterface>(op))
    return true;
  // Another op with regions (the run-time checks' `scf.if`s computing a
  // condition) as its nested ops and results.
  if (op->getNumRegions() != 0) {
    bool nested = false;
    for (Region &region : op->getRegions())
      for (Operation &inner : region.getOps())
        nested |= !inner.hasTrait<OpTrait::IsTerminator>() && mayFault(&inner);
    if (nested)
      return true;
  }
  // The size of a ranked tensor's dimension that exists.
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    std::optional<int64_t> index = dim.getConstantIndex();
    auto type = dyn_cast<RankedTensorType>(dim.getSource().getType());
    if (index && type && *index >= 0 && *index < type.getRank())
      return false;
  }
  auto shaped = [](Type type) { return isa<ShapedType>(type); };
  return llvm::any_of(op->getOperandTypes(), shaped) ||
         llvm::any_of(op->getResultTypes(), shaped);
}

/// Whether `loop` runs at least once: constant bounds, lb < ub.
static bool runsAtLeastOnce(scf::ForOp loop) {
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
  if (!lb || !ub)
    return false;
  return loop.getUnsignedCmp() ? uint64_t(*lb) < uint64_t(*ub) : *lb < *ub;
}

/// Hoists the invariants of `region` (of `loop`); ops that may fault only
/// when `runs` (the region runs whenever the loop is entered). Returns the
/// number of ops moved.
static size_t hoist(LoopLikeOpInterface loop, Region &region, bool runs) {
  return moveLoopInvariantCode(
      {&region},
      [&](Value value, Region *) { return loop.isDefinedOutsideOfLoop(value); },
      [&](Operation *op, Region *) {
        bool movable = isa<cf::AssertOp>(op) ||
                       (isMemoryEffectFree(op) && isSpeculatable(op));
        return movable && (runs || !mayFault(op));
      },
      [&](Operation *op, Region *) { loop.moveOutOfLoop(op); });
}

/// Whether hoisting `op` out of a loop saves work worth a branch around the
/// loop: it computes a tensor (a linalg op, a pad, a loop or branch over
/// tensors). Checks, scalars, sizes and views of tensors cost next to
/// nothing per iteration, while a branch with tensor results costs a taped
/// choice per run in the adjoint and copies in bufferization.
static bool worthGuarding(Operation *op) {
  if (isa<tensor::EmptyOp, tensor::ExtractSliceOp, tensor::ExpandShapeOp,
          tensor::CollapseShapeOp, tensor::CastOp, tensor::ReshapeOp>(op))
    return false;
  return llvm::any_of(op->getResultTypes(),
                      [](Type type) { return isa<ShapedType>(type); });
}

/// Whether hoisting from `loop`, were it known to run, would move an op
/// worth a guard (a dry run of the hoisting: nothing moves).
static bool wouldHoistWorthGuarding(scf::ForOp loop) {
  llvm::SmallPtrSet<Operation *, 16> movable;
  bool worth = false;
  moveLoopInvariantCode(
      {&loop.getRegion()},
      [&](Value value, Region *) {
        Operation *def = value.getDefiningOp();
        return loop.isDefinedOutsideOfLoop(value) ||
               (def && movable.contains(def));
      },
      [&](Operation *op, Region *) {
        return !movable.contains(op) &&
               (isa<cf::AssertOp>(op) ||
                (isMemoryEffectFree(op) && isSpeculatable(op)));
      },
      [&](Operation *op, Region *) {
        movable.insert(op);
        worth |= worthGuarding(op);
      });
  return worth;
}

/// Hoists out of `loop`, whose trip count is not known: first the ops that
/// cannot fault, then, when that moves work worth it, with the loop inside
/// `scf.if (lb < ub)` (its inits as results otherwise), the rest into that
/// branch.
static void hoistGuarded(scf::ForOp loop) {
  hoist(loop, loop.getRegion(), /*runs=*/false);
  if (!wouldHoistWorthGuarding(loop))
    return;
  OpBuilder builder(loop);
  Location loc = loop.getLoc();
  Value entered = arith::CmpIOp::create(
      builder, loc,
      loop.getUnsignedCmp() ? arith::CmpIPredicate::ult
                            : arith::CmpIPredicate::slt,
      loop.getLowerBound(), loop.getUpperBound());
  auto guard = scf::IfOp::create(builder, loc, loop.getResultTypes(), entered,
                                 /*withElseRegion=*/true);
  loop->replaceAllUsesWith(guard.getResults());
  // (The builder gives a guard without results its yields.)
  if (!guard.thenBlock()->mightHaveTerminator()) {
    builder.setInsertionPointToEnd(guard.thenBlock());
    scf::YieldOp::create(builder, loc, loop.getResults());
    builder.setInsertionPointToEnd(guard.elseBlock());
    scf::YieldOp::create(builder, loc, loop.getInitArgs());
  }
  loop->moveBefore(guard.thenBlock(), guard.thenBlock()->begin());
  hoist(loop, loop.getRegion(), /*runs=*/true);
}

namespace {
struct ADHoistInvariantsPass
    : mlir::ad::impl::ADHoistInvariantsPassBase<ADHoistInvariantsPass> {
  void runOnOperation() override {
    // Innermost loops first: what leaves an inner loop may then leave the
    // loop around it.
    SmallVector<LoopLikeOpInterface> loops;
    getOperation()->walk(
        [&](LoopLikeOpInterface loop) { loops.push_back(loop); });
    for (LoopLikeOpInterface loop : loops) {
      if (auto forOp = dyn_cast<scf::ForOp>(loop.getOperation())) {
        if (runsAtLeastOnce(forOp))
          hoist(loop, forOp.getRegion(), /*runs=*/true);
        else
          hoistGuarded(forOp);
        continue;
      }
      // A while loop's condition region runs whenever the loop is entered;
      // its body may run no iteration.
      if (auto whileOp = dyn_cast<scf::WhileOp>(loop.getOperation())) {
        hoist(loop, whileOp.getBefore(), /*runs=*/true);
        hoist(loop, whileOp.getAfter(), /*runs=*/false);
        continue;
      }
      for (Region *region : loop.getLoopRegions())
        hoist(loop, *region, /*runs=*/false);
    }
  }
};
} // namespace
