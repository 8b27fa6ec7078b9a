//===- ActivityAnalysis.cpp - which values carry derivatives ----*- C++ -*-===//
//
// Two worklist propagations over use-def chains: forward from the
// differentiated arguments, backward from the returned values. Region ops
// are treated conservatively and without knowing their semantics: a varied
// operand varies every result and every region argument of the op, a varied
// terminator operand varies the parent's results and region arguments, and
// any varied value read inside a region varies the results of every op
// around the use up to the first region branch op (whose results come from
// its terminators only); a
// useful result or region argument makes every operand of the op and every
// value used inside its regions useful. Over-approximating activity costs
// work, never correctness.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/ActivityAnalysis.h"
#include "ad/IR/ADDialect.h"
#include "ad/IR/ADInterfaces.h"

#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::ad;

ActivityAnalysis::ActivityAnalysis(func::FuncOp function,
                                   ArrayRef<int64_t> wrt) {
  propagateVaried(function, wrt);
  propagateUseful(function);
}

/// Results and region arguments of `op`.
static void appendDefinedByRegionOp(Operation *op,
                                    SmallVectorImpl<Value> &values) {
  llvm::append_range(values, op->getResults());
  for (Region &region : op->getRegions())
    for (Block &block : region)
      llvm::append_range(values, block.getArguments());
}

/// Whether values leave the regions of `op` only as operands of their
/// terminators: a region branch op whose blocks end in region branch
/// terminators (scf.for, scf.if, scf.while; not scf.forall, whose
/// terminator holds tensor.parallel_insert_slice ops).
static bool passesThroughTerminators(Operation *op) {
  if (!isa<RegionBranchOpInterface>(op))
    return false;
  for (Region &region : op->getRegions())
    for (Block &block : region)
      if (block.empty() ||
          !isa<RegionBranchTerminatorOpInterface>(block.back()))
        return false;
  return true;
}

void ActivityAnalysis::propagateVaried(func::FuncOp function,
                                       ArrayRef<int64_t> wrt) {
  SmallVector<Value> worklist;
  llvm::SmallPtrSet<Operation *, 16> enclosingVaried;
  for (int64_t position : wrt)
    worklist.push_back(function.getArgument(position));
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!varied.insert(value).second)
      continue;
    for (Operation *user : value.getUsers()) {
      // No derivative flows through ad.stop_gradient.
      if (isa<StopGradientOp>(user))
        continue;
      appendDefinedByRegionOp(user, worklist);
      // A terminator passes values to its parent's results and regions.
      Operation *parent = user->getParentOp();
      if (user->hasTrait<OpTrait::IsTerminator>() && parent &&
          parent != function)
        appendDefinedByRegionOp(parent, worklist);
      // Region branch ops (scf.for, scf.if, ...) pass values out through
      // their terminators only. Any other route out of a region (scf.forall's
      // tensor.parallel_insert_slice) is unknown here: every op around a
      // use, up to the first region branch op, is varied, so it is
      // differentiated or reported, never skipped.
      for (; parent && parent != function && !passesThroughTerminators(parent);
           parent = parent->getParentOp()) {
        if (!enclosingVaried.insert(parent).second)
          break;
        llvm::append_range(worklist, parent->getResults());
      }
    }
  }
}

void ActivityAnalysis::propagateUseful(func::FuncOp function) {
  SmallVector<Value> worklist;
  function.walk([&](func::ReturnOp ret) {
    for (Value returned : ret.getOperands())
      if (isDifferentiableType(returned.getType()))
        worklist.push_back(returned);
  });
  llvm::SmallPtrSet<Operation *, 16> expanded;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!useful.insert(value).second)
      continue;
    Operation *op = value.getDefiningOp();
    if (!op)
      op = value.getParentBlock()->getParentOp();
    if (!op || op == function || !expanded.insert(op).second)
      continue;
    llvm::append_range(worklist, op->getOperands());
    // Everything a region reads, including what its terminators pass on.
    op->walk([&](Operation *nested) {
      if (nested != op)
        llvm::append_range(worklist, nested->getOperands());
    });
  }
}

bool ActivityAnalysis::isActive(Value value) const {
  return varied.contains(value) && useful.contains(value) &&
         isDifferentiableType(value.getType());
}

bool ActivityAnalysis::isActive(Operation *op) const {
  return llvm::any_of(op->getResults(),
                      [&](Value result) { return isActive(result); });
}
