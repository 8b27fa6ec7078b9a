//===- HoistBuffers.cpp - one allocation per loop, not per iteration -*- C++ -*-===//
//
// ad-hoist-buffers: a buffer a loop body allocates and frees in the same
// iteration, with sizes the loop does not change, is allocated once before
// the loop and freed once after it. Bufferization allocates every tensor a
// loop body computes afresh in each iteration, and an LSTM's step or an
// adjoint's reverse iteration computes a dozen small vectors: the calls to
// malloc and free cost more than the arithmetic.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADHOISTBUFFERSPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;

/// The `memref.dealloc` of `alloc` in the alloc's own block, after it, when
/// it is the only operation that frees the buffer; null otherwise. Every
/// iteration that allocates the buffer then frees it before the next one
/// begins, and nothing may touch it after that (it would be a use after
/// free): the iterations' buffers have disjoint lifetimes.
static memref::DeallocOp unconditionalDealloc(memref::AllocOp alloc) {
  memref::DeallocOp found;
  for (Operation *user : alloc->getUsers()) {
    if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
      if (found || dealloc->getBlock() != alloc->getBlock() ||
          !alloc->isBeforeInBlock(dealloc))
        return {};
      found = dealloc;
      continue;
    }
    // Operations that free or take over the buffer in another way, or
    // that may (an unregistered op).
    Dialect *dialect = user->getDialect();
    if (isa<memref::ReallocOp>(user) || !dialect ||
        dialect->getNamespace() == "bufferization")
      return {};
  }
  return found;
}

/// Whether `value` is defined outside `loop` (it then has the same value in
/// every iteration).
static bool definedOutside(Value value, Operation *loop) {
  return !loop->isAncestor(value.getParentBlock()->getParentOp());
}

/// Whether `size` is known not to be negative.
static bool nonNegative(Value size) {
  APInt constant;
  if (matchPattern(size, m_ConstantInt(&constant)))
    return !constant.isNegative();
  if (auto max = size.getDefiningOp<arith::MaxSIOp>())
    return nonNegative(max.getLhs()) || nonNegative(max.getRhs());
  return size.getDefiningOp<memref::DimOp>() != nullptr;
}

/// Moves `alloc` before the loop whose body holds it and its dealloc after
/// the loop; false when that is not allowed.
static bool hoistOnce(memref::AllocOp alloc) {
  Operation *loop = alloc->getParentOp();
  if (!isa_and_nonnull<scf::ForOp, scf::WhileOp>(loop))
    return false;
  for (Value operand : alloc->getOperands())
    if (!definedOutside(operand, loop))
      return false;
  memref::DeallocOp dealloc = unconditionalDealloc(alloc);
  if (!dealloc)
    return false;
  alloc->moveBefore(loop);
  dealloc->moveAfter(loop);
  return true;
}

/// Clamps the dynamic sizes of a hoisted `alloc` that may be negative at
/// zero: the loops it left may run no iteration, and the original
/// allocation would then never have happened.
static void clampSizes(memref::AllocOp alloc) {
  OpBuilder builder(alloc);
  Value zero;
  for (OpOperand &size : alloc.getDynamicSizesMutable()) {
    if (nonNegative(size.get()))
      continue;
    if (!zero)
      zero = arith::ConstantIndexOp::create(builder, alloc.getLoc(), 0);
    size.set(arith::MaxSIOp::create(builder, alloc.getLoc(), size.get(), zero));
  }
}

namespace {
struct ADHoistBuffersPass
    : mlir::ad::impl::ADHoistBuffersPassBase<ADHoistBuffersPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocOp> allocs;
    getOperation()->walk([&](memref::AllocOp alloc) {
      allocs.push_back(alloc);
    });
    // Out of every enclosing loop whose iterations see the same sizes.
    for (memref::AllocOp alloc : allocs) {
      bool hoisted = false;
      while (hoistOnce(alloc))
        hoisted = true;
      if (hoisted)
        clampSizes(alloc);
    }
  }
};
} // namespace
