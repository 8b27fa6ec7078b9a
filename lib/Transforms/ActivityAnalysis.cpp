//===- ActivityAnalysis.cpp - which values carry derivatives ----*- C++ -*-===//
//
// Two worklist propagations over use-def chains: forward from the
// differentiated arguments, backward from the returned values. Variedness
// is propagated twice. The precise propagation, which decides what carries
// a derivative, stops at booleans (comparisons) and sizes, and follows
// linalg bodies (an operand varies its block argument, an init also its
// result; a yielded value its own result and its output's block argument,
// which a reduction carries) and scf.for (an init or yielded value its own
// iteration argument and result, a bound the induction variable only), so
// that an output computed from inactive values (a count of ties next to a
// sum) stays inactive. The conservative one follows every path, for what
// may hold a float's bits (integers, booleans, buffers): a bitcast of such
// an integer back to a float seeds the precise propagation. In both, other
// region ops
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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::ad;

ActivityAnalysis::ActivityAnalysis(func::FuncOp function,
                                   ArrayRef<int64_t> wrt, bool followsMemory)
    : followsMemory(followsMemory) {
  if (followsMemory)
    groupBuffers(function);
  // What may hold a float's bits, through every path (booleans, sizes,
  // trip counts, whole region ops): an integer turned into a float by a
  // bitcast is then varied however the precise rules would have lost it
  // (a float rebuilt bit by bit from comparisons, or from loop trip
  // counts, must reach the bitcast's diagnostic, not become a constant).
  propagateVaried(function, wrt, /*precise=*/false, mayHoldBits, {});
  SmallVector<Value> bits;
  function.walk([&](arith::BitcastOp bitcast) {
    if (isa<FloatType>(getElementTypeOrSelf(bitcast.getType())) &&
        mayHoldBits.contains(bitcast.getIn()))
      bits.push_back(bitcast.getResult());
  });
  propagateVaried(function, wrt, /*precise=*/true, varied, bits);
  propagateUseful(function);
}

Operation *mlir::ad::findBitsBecomingFloats(func::FuncOp function,
                                            ArrayRef<int64_t> positions) {
  if (positions.empty() || function.isExternal())
    return nullptr;
  ActivityAnalysis activity(function, positions);
  Operation *found = nullptr;
  function.walk([&](arith::BitcastOp bitcast) {
    if (isa<FloatType>(getElementTypeOrSelf(bitcast.getType())) &&
        activity.isVaried(bitcast.getIn())) {
      found = bitcast;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

SmallVector<Value> mlir::ad::getWrittenBuffers(Operation *op) {
  SmallVector<Value> written;
  auto isBuffer = [](Value value) {
    return value && isa<BaseMemRefType>(value.getType());
  };
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects) {
    // Nested ops speak for a region op with recursive effects; an op that
    // declares nothing (a call) may write any buffer it is given.
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return written;
    llvm::copy_if(op->getOperands(), std::back_inserter(written), isBuffer);
    return written;
  }
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  for (MemoryEffects::EffectInstance &instance : instances)
    if (isa<MemoryEffects::Write, MemoryEffects::Free>(instance.getEffect()) &&
        isBuffer(instance.getValue()) &&
        !llvm::is_contained(written, instance.getValue()))
      written.push_back(instance.getValue());
  return written;
}

/// Whether `op` only reads or writes the buffers it is given, making none
/// of them an alias of another (memref.load/store/copy, linalg ops on
/// buffers): a view, a terminator or region op passing buffers on, a call
/// (which may return its argument) or an op declaring nothing may alias
/// what it touches.
static bool makesNoAliases(Operation *op) {
  // A terminator (scf.yield, pure) passes its buffers to its parent.
  if (!isa<MemoryEffectOpInterface>(op) || isa<ViewLikeOpInterface>(op) ||
      op->hasTrait<OpTrait::IsTerminator>())
    return false;
  return llvm::none_of(op->getResultTypes(), llvm::IsaPred<BaseMemRefType>);
}

void ActivityAnalysis::groupBuffers(func::FuncOp function) {
  function.walk([&](Operation *op) {
    if (makesNoAliases(op))
      return;
    SmallVector<Value> group;
    auto add = [&](ValueRange values) {
      for (Value value : values)
        if (isa<BaseMemRefType>(value.getType()))
          group.push_back(value);
    };
    add(op->getOperands());
    add(op->getResults());
    for (Region &region : op->getRegions())
      for (Block &block : region)
        add(block.getArguments());
    // A terminator passes buffers to its parent's results and regions.
    Operation *parent = op->getParentOp();
    if (op->hasTrait<OpTrait::IsTerminator>() && parent != function) {
      add(parent->getResults());
      for (Region &region : parent->getRegions())
        for (Block &block : region)
          add(block.getArguments());
    }
    for (Value value : group) {
      buffers.insert(value);
      buffers.unionSets(group.front(), value);
    }
  });
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
  // A linalg op's body gives its values to the op's outputs through
  // linalg.yield only.
  if (isa<linalg::LinalgOp>(op))
    return true;
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
                                       ArrayRef<int64_t> wrt, bool precise,
                                       llvm::DenseSet<Value> &varied,
                                       ArrayRef<Value> seeds) {
  SmallVector<Value> worklist(seeds.begin(), seeds.end());
  llvm::SmallPtrSet<Operation *, 16> enclosingVaried;
  for (int64_t position : wrt)
    worklist.push_back(function.getArgument(position));
  // A caller may write a differentiable value to a buffer the function
  // returns: it needs a shadow that every alias of it shares.
  if (followsMemory)
    function.walk([&](func::ReturnOp ret) {
      for (Value returned : ret.getOperands())
        if (hasTangentType(returned.getType()) &&
            isa<MemRefType>(returned.getType()))
          worklist.push_back(returned);
    });
  // A varied op may write a varied value to the buffers it is given.
  auto appendWritten = [&](Operation *op) {
    if (followsMemory)
      llvm::append_range(worklist, getWrittenBuffers(op));
  };
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    // A boolean (a comparison's result, a branch condition) has no
    // derivative and holds no float's bits: what it selects varies only
    // through the selected values.
    if (precise && getElementTypeOrSelf(value.getType()).isInteger(1))
      continue;
    if (!varied.insert(value).second)
      continue;
    // Every buffer that may alias a varied one is varied.
    if (followsMemory && buffers.contains(value))
      llvm::append_range(worklist, buffers.members(value));
    for (Operation *user : value.getUsers()) {
      // No derivative flows through ad.stop_gradient, nor into the sizes
      // of a tensor or buffer (tensor.empty of them holds no varied value).
      if (isa<StopGradientOp>(user) ||
          (precise && isa<tensor::DimOp, memref::DimOp>(user)))
        continue;
      // Whether a rule below followed `value` into or out of a body.
      bool followed = false;
      // (Only the precise propagation follows bodies; every result of a
      // region op may hold bits of what it reads.)
      if (auto linalgOp =
              precise ? dyn_cast<linalg::LinalgOp>(user) : nullptr) {
        followed = true;
        // An operand of a linalg op varies its block argument; an init
        // also its result (which is the init where a reduction is empty).
        for (OpOperand &operand : user->getOpOperands()) {
          if (operand.get() != value)
            continue;
          if (BlockArgument argument =
                  linalgOp.getMatchingBlockArgument(&operand))
            worklist.push_back(argument);
          if (linalgOp.isDpsInit(&operand) &&
              linalgOp.hasPureTensorSemantics())
            worklist.push_back(linalgOp.getTiedOpResult(&operand));
        }
        appendWritten(user);
      } else if (auto yield =
                     precise ? dyn_cast<linalg::YieldOp>(user) : nullptr) {
        if (auto linalgOp = dyn_cast<linalg::LinalgOp>(yield->getParentOp())) {
          followed = true;
          // A yielded value varies its output: the result (or the buffer
          // written) and the output's block argument, which carries it to
          // the next iteration of a reduction.
          for (OpOperand &operand : yield->getOpOperands()) {
            if (operand.get() != value ||
                operand.getOperandNumber() >= linalgOp.getNumDpsInits())
              continue;
            OpOperand *init =
                linalgOp.getDpsInitOperand(operand.getOperandNumber());
            if (BlockArgument argument =
                    linalgOp.getMatchingBlockArgument(init))
              worklist.push_back(argument);
            if (linalgOp.hasPureTensorSemantics())
              worklist.push_back(linalgOp.getTiedOpResult(init));
            else if (followsMemory)
              worklist.push_back(init->get());
          }
        }
      } else if (auto loop = precise ? dyn_cast<scf::ForOp>(user) : nullptr) {
        // An init varies its iteration argument and result; a bound or the
        // step varies the induction variable only.
        followed = true;
        for (OpOperand &operand : user->getOpOperands()) {
          if (operand.get() != value)
            continue;
          if (BlockArgument argument = loop.getTiedLoopRegionIterArg(&operand)) {
            worklist.push_back(argument);
            worklist.push_back(loop.getTiedLoopResult(&operand));
          } else {
            worklist.push_back(loop.getInductionVar());
          }
        }
        appendWritten(user);
      } else if (auto yield =
                     precise ? dyn_cast<scf::YieldOp>(user) : nullptr) {
        if (auto loop = dyn_cast<scf::ForOp>(yield->getParentOp())) {
          // A yielded value varies its result and, for the next iteration,
          // its iteration argument.
          followed = true;
          for (OpOperand &operand : yield->getOpOperands()) {
            if (operand.get() != value)
              continue;
            unsigned index = operand.getOperandNumber();
            worklist.push_back(loop.getRegionIterArgs()[index]);
            worklist.push_back(loop.getResult(index));
          }
          appendWritten(loop);
        }
      }
      if (!followed) {
        appendDefinedByRegionOp(user, worklist);
        appendWritten(user);
      }
      // A terminator passes values to its parent's results and regions.
      Operation *parent = user->getParentOp();
      if (!followed && user->hasTrait<OpTrait::IsTerminator>() && parent &&
          parent != function) {
        appendDefinedByRegionOp(parent, worklist);
        appendWritten(parent);
      }
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
        appendWritten(parent);
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
  // What is written to a varied buffer may be read back: every operand of
  // such a write (and what its regions read) is useful.
  if (followsMemory)
    function.walk([&](Operation *op) {
      if (llvm::none_of(getWrittenBuffers(op),
                        [&](Value buffer) { return varied.contains(buffer); }))
        return;
      llvm::append_range(worklist, op->getOperands());
      op->walk([&](Operation *nested) {
        llvm::append_range(worklist, nested->getOperands());
      });
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

bool ActivityAnalysis::isVaried(Value value) const {
  if (varied.contains(value))
    return true;
  return !isDifferentiableType(value.getType()) && mayHoldBits.contains(value);
}

bool ActivityAnalysis::isActive(Value value) const {
  if (!varied.contains(value))
    return false;
  // A varied buffer of floats has a shadow, whoever reads it.
  if (followsMemory && isa<MemRefType>(value.getType()))
    return hasTangentType(value.getType());
  return useful.contains(value) && isDifferentiableType(value.getType());
}

bool ActivityAnalysis::isActive(Operation *op) const {
  return llvm::any_of(op->getResults(),
                      [&](Value result) { return isActive(result); });
}
