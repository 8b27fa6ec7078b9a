//===- LegalizeForLLVM.cpp - workarounds for upstream lowerings -*- C++ -*-===//
//
// ad-legalize-loops, ad-legalize-for-bufferization and ad-legalize-for-llvm:
// rewrite what the upstream transformations of LLVM 22 get wrong (a
// miscompile, a crash, or IR the LLVM dialect cannot read back) into
// equivalent IR they handle.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Analysis/CallGraph.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SCCIterator.h"
#include "llvm/ADT/SmallBitVector.h"
#include <limits>

namespace mlir::ad {
#define GEN_PASS_DEF_ADLEGALIZELOOPSPASS
#define GEN_PASS_DEF_ADLEGALIZEFORBUFFERIZATIONPASS
#define GEN_PASS_DEF_ADLEGALIZEFORLLVMPASS
#define GEN_PASS_DEF_ADLEGALIZEVIEWSPASS
#define GEN_PASS_DEF_ADLEGALIZEMATHPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;

namespace {
/// Rewrites `loop`, whose induction variable is an integer narrower than 64
/// bits, into the same loop over i64: bounds extended as the loop compares
/// them (zero-extended for `unsigned`), the body reading the truncated
/// induction variable.
static void widenInductionVariable(scf::ForOp loop) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Type i64 = b.getI64Type();
  bool isUnsigned = loop.getUnsignedCmp();
  auto extend = [&](Value value) -> Value {
    if (isUnsigned)
      return arith::ExtUIOp::create(b, loc, i64, value);
    return arith::ExtSIOp::create(b, loc, i64, value);
  };
  auto wide = scf::ForOp::create(
      b, loc, extend(loop.getLowerBound()), extend(loop.getUpperBound()),
      extend(loop.getStep()), loop.getInitArgs(), /*bodyBuilder=*/nullptr,
      isUnsigned);
  wide.getRegion().getBlocks().clear();
  wide.getRegion().takeBody(loop.getRegion());
  Block *body = wide.getBody();
  Value iv = body->getArgument(0);
  Type narrowType = iv.getType();
  iv.setType(i64);
  b.setInsertionPointToStart(body);
  auto narrow = arith::TruncIOp::create(b, loc, narrowType, iv);
  iv.replaceAllUsesExcept(narrow, narrow);
  loop.replaceAllUsesWith(wide.getResults());
  loop.erase();
}

struct ADLegalizeLoopsPass
    : mlir::ad::impl::ADLegalizeLoopsPassBase<ADLegalizeLoopsPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) {
      auto type = dyn_cast<IntegerType>(loop.getInductionVar().getType());
      if (type && type.getWidth() < 64)
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops)
      widenInductionVariable(loop);
  }
};

/// Whether some reassociation group of `expand` has two dynamic sizes.
static bool hasGroupWithTwoDynamicSizes(tensor::ExpandShapeOp expand) {
  RankedTensorType type = expand.getResultType();
  return llvm::any_of(expand.getReassociationIndices(),
                      [&](const ReassociationIndices &group) {
                        return llvm::count_if(group, [&](int64_t dim) {
                                 return type.isDynamicDim(dim);
                               }) > 1;
                      });
}

/// Whether `slice` drops dimensions and has a stride other than one.
static bool isStridedRankReducing(tensor::ExtractSliceOp slice) {
  return slice.getResultType().getRank() < slice.getSourceType().getRank() &&
         llvm::any_of(slice.getMixedStrides(), [](OpFoldResult stride) {
           return !isConstantIntValue(stride, 1);
         });
}

/// The reassociation that collapses the dimensions `dropped` says of a
/// shape of rank `rank` (unit dimensions), each into the kept dimension
/// before it (the leading ones into the first kept dimension).
static SmallVector<ReassociationIndices>
groupsDropping(int64_t rank, llvm::function_ref<bool(int64_t)> dropped) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices leading;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (dropped(dim)) {
      (groups.empty() ? leading : groups.back()).push_back(dim);
      continue;
    }
    groups.push_back(leading);
    groups.back().push_back(dim);
    leading.clear();
  }
  return groups;
}

/// Rewrites `slice` as the slice that keeps every dimension followed by a
/// tensor.collapse_shape dropping the unit ones, each into the kept
/// dimension before it (the first ones into the first kept dimension).
static void rewriteAsSliceAndCollapse(tensor::ExtractSliceOp slice) {
  OpBuilder b(slice);
  Location loc = slice.getLoc();
  RankedTensorType resultType = slice.getResultType();
  auto fullType = RankedTensorType::get(slice.getStaticSizes(),
                                        resultType.getElementType());
  llvm::SmallBitVector dropped = slice.getDroppedDims();
  SmallVector<ReassociationIndices> groups = groupsDropping(
      fullType.getRank(), [&](int64_t dim) { return dropped.test(dim); });
  Value full = tensor::ExtractSliceOp::create(
      b, loc, fullType, slice.getSource(), slice.getMixedOffsets(),
      slice.getMixedSizes(), slice.getMixedStrides());
  Value collapsed =
      tensor::CollapseShapeOp::create(b, loc, resultType, full, groups);
  slice.replaceAllUsesWith(collapsed);
  slice.erase();
}

/// Rewrites `op` as a chain of scf.if, one per case, the default last.
static void rewriteAsIfChain(scf::IndexSwitchOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  TypeRange types = op.getResultTypes();
  Region *elseRegion = nullptr;
  scf::IfOp outermost;
  for (auto [value, region] : llvm::zip(op.getCases(), op.getCaseRegions())) {
    if (elseRegion) {
      Block *block = b.createBlock(elseRegion);
      b.setInsertionPointToStart(block);
    }
    Value key = arith::ConstantIndexOp::create(b, loc, value);
    Value matches = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          op.getArg(), key);
    auto ifOp = scf::IfOp::create(b, loc, types, matches,
                                  /*withElseRegion=*/false);
    ifOp.getThenRegion().takeBody(region);
    if (elseRegion)
      scf::YieldOp::create(b, loc, ifOp.getResults());
    else
      outermost = ifOp;
    elseRegion = &ifOp.getElseRegion();
  }
  if (!outermost) {
    // No case: the default region alone.
    auto ifOp = scf::IfOp::create(b, loc, types,
                                  arith::ConstantIntOp::create(b, loc, 1, 1),
                                  /*withElseRegion=*/false);
    ifOp.getThenRegion().takeBody(op.getDefaultRegion());
    op.replaceAllUsesWith(ifOp.getResults());
    op.erase();
    return;
  }
  elseRegion->takeBody(op.getDefaultRegion());
  op.replaceAllUsesWith(outermost.getResults());
  op.erase();
}

/// Pushes what region op `op` yields as its result `index` (each region's
/// value) to `worklist`.
static void pushYielded(Operation *op, unsigned index,
                        SmallVectorImpl<Value> &worklist) {
  for (Region &region : op->getRegions())
    for (Block &block : region)
      if (Operation *terminator = block.getTerminator();
          terminator && terminator->hasTrait<OpTrait::ReturnLike>() &&
          index < terminator->getNumOperands())
        worklist.push_back(terminator->getOperand(index));
}

/// For result `index` of an scf.if, scf.execute_region or scf.for: pushes
/// what it may be (what a region yields; a loop's init, if it runs no
/// iteration) and returns true.
static bool pushRegionResult(Operation *op, unsigned index,
                             SmallVectorImpl<Value> &worklist) {
  if (auto loop = dyn_cast<scf::ForOp>(op))
    worklist.push_back(loop.getInitArgs()[index]);
  else if (!isa<scf::IfOp, scf::ExecuteRegionOp>(op))
    return false;
  pushYielded(op, index, worklist);
  return true;
}

/// For a value an scf.for carries (a region iter_arg): pushes what it may
/// be, the loop's init or what an iteration yields, and returns true.
static bool pushLoopCarried(BlockArgument argument,
                            SmallVectorImpl<Value> &worklist) {
  auto loop = dyn_cast<scf::ForOp>(argument.getOwner()->getParentOp());
  if (!loop || argument.getArgNumber() < loop.getNumInductionVars())
    return false;
  unsigned index = argument.getArgNumber() - loop.getNumInductionVars();
  worklist.push_back(loop.getInitArgs()[index]);
  worklist.push_back(loop.getYieldedValues()[index]);
  return true;
}

/// Whether tensor `value`, returned by a function, may bufferize to a buffer
/// that is neither fresh nor one of the function's arguments: a constant's
/// read-only global, or a view of one. Conservative: true unless every
/// value it may be is fresh (an allocating op, a destination-passing or
/// elementwise op, which one-shot bufferization never runs in place on a
/// constant), an argument of the function (one-shot bufferization knows a
/// call result may alias its operand) or the result of a call (the callee
/// copies its own).
static bool mayBeReadOnly(Value value, func::FuncOp function) {
  SmallVector<Value> worklist = {value};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!seen.insert(current).second || !isa<TensorType>(current.getType()))
      continue;
    if (auto argument = dyn_cast<BlockArgument>(current)) {
      if (argument.getOwner() == &function.getBody().front())
        continue;
      if (pushLoopCarried(argument, worklist))
        continue;
      return true; // Another region's argument: it may be a constant.
    }
    Operation *def = current.getDefiningOp();
    unsigned index = cast<OpResult>(current).getResultNumber();
    if (isa<arith::ConstantOp, bufferization::ToTensorOp>(def))
      return true;
    if (isa<CallOpInterface, DestinationStyleOpInterface, tensor::EmptyOp,
            tensor::FromElementsOp, tensor::GenerateOp, tensor::PadOp,
            tensor::ConcatOp, tensor::SplatOp, bufferization::AllocTensorOp>(
            def))
      continue;
    if (pushRegionResult(def, index, worklist))
      continue;
    if (isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
            tensor::ExpandShapeOp, tensor::CastOp, tensor::ReshapeOp,
            tensor::BitcastOp>(def)) {
      worklist.push_back(def->getOperand(0));
      continue;
    }
    // Made from scalars, or elementwise on tensors (a linalg op once
    // convert-elementwise-to-linalg runs): fresh.
    if (llvm::none_of(def->getOperandTypes(), llvm::IsaPred<TensorType>) ||
        def->hasTrait<OpTrait::Elementwise>())
      continue;
    return true;
  }
  return false;
}

/// Copies each returned tensor of a private function that may be a
/// constant's buffer. Buffer deallocation passes the ownership of buffers
/// out of private functions (instead of cloning those they do not own), and
/// one-shot bufferization takes a call's result to be a fresh buffer unless
/// it may alias an operand: a caller would write into the constant's
/// read-only global.
static void copyReadOnlyReturns(func::FuncOp function) {
  if (!function.isPrivate() || function.isExternal())
    return;
  function.walk([&](func::ReturnOp ret) {
    OpBuilder b(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      auto type = dyn_cast<RankedTensorType>(operand.get().getType());
      if (!type || !mayBeReadOnly(operand.get(), function))
        continue;
      // A copy takes its sizes from the copied tensor.
      operand.set(bufferization::AllocTensorOp::create(
          b, ret.getLoc(), type, ValueRange(), /*copy=*/operand.get()));
    }
  });
}

/// Per function of a recursion: the positions of its tensor arguments that
/// are only read (the candidates to pass as buffers).
using ReadOnlyPositions = llvm::DenseMap<Operation *, llvm::SmallBitVector>;

/// The read-only positions of the callee of `call` when it is a function of
/// `candidates`, or null.
static const llvm::SmallBitVector *
readOnlyPositionsOf(func::CallOp call, const ReadOnlyPositions &candidates) {
  auto it = llvm::find_if(candidates, [&](auto &entry) {
    return cast<func::FuncOp>(entry.first).getSymName() == call.getCallee();
  });
  return it == candidates.end() ? nullptr : &it->second;
}

/// Whether every use of tensor `argument` only reads it where one-shot
/// bufferization can tell (an element, a size, a linalg input), or passes
/// it on to a function of `candidates` at a position still in its set.
/// Nothing derived from it is used: no view of it can reach a return.
static bool isOnlyRead(
    BlockArgument argument,
    const ReadOnlyPositions &candidates) {
  for (OpOperand &use : argument.getUses()) {
    Operation *user = use.getOwner();
    if (isa<tensor::ExtractOp, tensor::DimOp>(user))
      continue;
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
        linalgOp && linalgOp.isDpsInput(&use))
      continue;
    if (auto call = dyn_cast<func::CallOp>(user))
      if (const llvm::SmallBitVector *positions =
              readOnlyPositionsOf(call, candidates);
          positions && positions->test(use.getOperandNumber()))
        continue;
    return false;
  }
  return true;
}

/// The buffers tensor `value` may bufferize to, followed back through the
/// ops that write in place or make views (a destination-passing op, a view,
/// a loop's carried value, a branch's result, a call of a function of
/// `candidates`, whose results may be those of its tensor operands but the
/// ones only read, at the positions in its set): every value on the way
/// goes to `visited`. False when some op on the way is none of those, nor
/// one that makes a new buffer (or a constant's, which nothing writes in
/// place), nor an argument of the function; `fresh` is then also false,
/// and it is false too when an argument of the function is reached.
static bool traceBuffers(
    Value value,
    const ReadOnlyPositions &candidates,
    llvm::DenseSet<Value> &visited, bool &fresh) {
  SmallVector<Value> worklist = {value};
  fresh = true;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!isa<TensorType>(current.getType()) ||
        !visited.insert(current).second)
      continue;
    if (auto argument = dyn_cast<BlockArgument>(current)) {
      Operation *parent = argument.getOwner()->getParentOp();
      if (isa<func::FuncOp>(parent) && argument.getOwner()->isEntryBlock()) {
        fresh = false;
        continue;
      }
      if (pushLoopCarried(argument, worklist))
        continue;
      fresh = false;
      return false;
    }
    Operation *def = current.getDefiningOp();
    unsigned index = cast<OpResult>(current).getResultNumber();
    if (isa<tensor::EmptyOp, bufferization::AllocTensorOp, arith::ConstantOp>(
            def))
      continue;
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(def)) {
      worklist.push_back(dps.getDpsInits()[index]);
      continue;
    }
    if (pushRegionResult(def, index, worklist))
      continue;
    if (isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
            tensor::ExpandShapeOp, tensor::CastOp>(def)) {
      worklist.push_back(def->getOperand(0));
      continue;
    }
    if (auto call = dyn_cast<func::CallOp>(def))
      if (const llvm::SmallBitVector *positions =
              readOnlyPositionsOf(call, candidates)) {
        for (OpOperand &operand : call->getOpOperands())
          if (!positions->test(operand.getOperandNumber()))
            worklist.push_back(operand.get());
        continue;
      }
    fresh = false;
    return false;
  }
  return true;
}

/// Whether `call` (of a function of `candidates`) may pass `operand`, at a
/// position only read, as the buffer it is: none of the other tensor
/// operands, which the callee may write in place, can be that buffer or a
/// view of it. They must be made from fresh buffers only, and `operand`'s
/// own buffers must be known and none of theirs.
static bool mayPassUncopied(
    func::CallOp call, Value operand, const llvm::SmallBitVector &readOnly,
    const ReadOnlyPositions &candidates) {
  llvm::DenseSet<Value> read;
  bool readFresh;
  if (!traceBuffers(operand, candidates, read, readFresh))
    return false;
  for (OpOperand &other : call->getOpOperands()) {
    if (!isa<RankedTensorType>(other.get().getType()) ||
        readOnly.test(other.getOperandNumber()))
      continue;
    llvm::DenseSet<Value> written;
    bool writtenFresh;
    if (!traceBuffers(other.get(), candidates, written, writtenFresh) ||
        !writtenFresh ||
        llvm::any_of(written, [&](Value v) { return read.contains(v); }))
      return false;
  }
  return true;
}

/// Passes the tensor arguments of a recursion as buffers when no function
/// of the recursion writes them. One-shot bufferization (LLVM 22) cannot
/// analyze a call within a recursion before its callee, so it assumes the
/// callee writes each tensor operand and copies the operand at every call
/// still reading it afterwards: a recursion reading a few elements of a
/// matrix per invocation (det by minors) copied the whole matrix each
/// time. A recursion qualifies when its functions are private and only
/// called (by func.call). Each argument only read (isOnlyRead) becomes an
/// identity-layout memref, read in the body through a restrict
/// `bufferization.to_tensor`. A call passing the caller's own such argument
/// passes its buffer; any other call passes a read-only
/// `bufferization.to_buffer` of the operand, or of a copy of it when
/// another tensor operand, which the callee may write in place, could be
/// that buffer (mayPassUncopied).
static void passRecursionInputsAsBuffers(ModuleOp module) {
  CallGraph graph(module);
  for (auto scc = llvm::scc_begin<const CallGraph *>(&graph); !scc.isAtEnd();
       ++scc) {
    SmallVector<func::FuncOp> members;
    bool qualifies = true;
    for (CallGraphNode *node : *scc) {
      if (node->isExternal()) {
        qualifies = false;
        break;
      }
      auto function =
          dyn_cast<func::FuncOp>(node->getCallableRegion()->getParentOp());
      if (!function || !function.isPrivate() || function.isExternal() ||
          !function.getBody().hasOneBlock()) {
        qualifies = false;
        break;
      }
      members.push_back(function);
    }
    if (!qualifies || members.empty())
      continue;
    bool isRecursion = members.size() > 1 || scc.hasCycle();
    if (!isRecursion)
      continue;
    // Only called: no symbol use may pass a function around.
    ReadOnlyPositions candidates;
    for (func::FuncOp function : members) {
      std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(function, module);
      if (!uses || llvm::any_of(*uses, [](const SymbolTable::SymbolUse &use) {
            return !isa<func::CallOp>(use.getUser());
          })) {
        qualifies = false;
        break;
      }
      llvm::SmallBitVector tensors(function.getNumArguments());
      for (BlockArgument argument : function.getArguments())
        if (isa<RankedTensorType>(argument.getType()))
          tensors.set(argument.getArgNumber());
      candidates[function] = tensors;
    }
    if (!qualifies)
      continue;
    bool changed = true;
    while (changed) {
      changed = false;
      for (func::FuncOp function : members)
        for (BlockArgument argument : function.getArguments()) {
          llvm::SmallBitVector &set = candidates[function];
          if (set.test(argument.getArgNumber()) &&
              !isOnlyRead(argument, candidates)) {
            set.reset(argument.getArgNumber());
            changed = true;
          }
        }
    }
    if (llvm::all_of(candidates,
                     [](auto &entry) { return entry.second.none(); }))
      continue;
    // Calls first (from inside and outside the recursion), then bodies.
    for (func::FuncOp function : members) {
      const llvm::SmallBitVector &set = candidates[function];
      std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(function, module);
      for (const SymbolTable::SymbolUse &use : *uses) {
        auto call = cast<func::CallOp>(use.getUser());
        OpBuilder b(call);
        for (unsigned position : set.set_bits()) {
          Value operand = call.getOperand(position);
          auto type = cast<RankedTensorType>(operand.getType());
          auto memrefType =
              MemRefType::get(type.getShape(), type.getElementType());
          auto argument = dyn_cast<BlockArgument>(operand);
          if (argument && argument.getOwner()->isEntryBlock() &&
              candidates.count(argument.getOwner()->getParentOp()) &&
              candidates[argument.getOwner()->getParentOp()].test(
                  argument.getArgNumber()))
            continue; // Rewritten with the callers' bodies below.
          // A tensor another operand may be (and the callee may write):
          // passed as a copy.
          Value passed = operand;
          if (!mayPassUncopied(call, operand, set, candidates))
            passed = bufferization::AllocTensorOp::create(
                b, call.getLoc(), type, ValueRange(), /*copy=*/operand);
          call->setOperand(position, bufferization::ToBufferOp::create(
                                         b, call.getLoc(), memrefType,
                                         passed, /*read_only=*/true));
        }
      }
    }
    for (func::FuncOp function : members) {
      const llvm::SmallBitVector &set = candidates[function];
      Block &entry = function.getBody().front();
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      SmallVector<Type> inputs(function.getArgumentTypes());
      for (unsigned position : set.set_bits()) {
        BlockArgument argument = entry.getArgument(position);
        auto type = cast<RankedTensorType>(argument.getType());
        auto memrefType =
            MemRefType::get(type.getShape(), type.getElementType());
        argument.setType(memrefType);
        inputs[position] = memrefType;
        auto tensor = bufferization::ToTensorOp::create(
            b, function.getLoc(), type, argument, /*restrict=*/true,
            /*writable=*/false);
        // The calls within the recursion take the buffer itself.
        argument.replaceUsesWithIf(tensor, [&](OpOperand &use) {
          if (use.getOwner() == tensor)
            return false;
          auto call = dyn_cast<func::CallOp>(use.getOwner());
          return !call || !readOnlyPositionsOf(call, candidates);
        });
      }
      function.setType(FunctionType::get(function.getContext(), inputs,
                                         function.getResultTypes()));
    }
  }
}

struct ADLegalizeForBufferizationPass
    : mlir::ad::impl::ADLegalizeForBufferizationPassBase<
          ADLegalizeForBufferizationPass> {
  void runOnOperation() override {
    // One-shot bufferization (LLVM 22) may write into a buffer an
    // scf.index_switch yields while it is still read; scf.if is right.
    SmallVector<scf::IndexSwitchOp> switches;
    getOperation()->walk([&](scf::IndexSwitchOp op) {
      if (llvm::any_of(op.getResultTypes(), llvm::IsaPred<TensorType>))
        switches.push_back(op);
    });
    for (scf::IndexSwitchOp op : switches)
      rewriteAsIfChain(op);
    getOperation()->walk(
        [](func::FuncOp function) { copyReadOnlyReturns(function); });
    getOperation()->walk(
        [](ModuleOp module) { passRecursionInputsAsBuffers(module); });
    // expand-strided-metadata (LLVM 22) crashes on a strided subview that
    // drops unit dimensions (it cannot tell which ones were dropped).
    SmallVector<tensor::ExtractSliceOp> slices;
    getOperation()->walk([&](tensor::ExtractSliceOp slice) {
      if (isStridedRankReducing(slice))
        slices.push_back(slice);
    });
    for (tensor::ExtractSliceOp slice : slices)
      rewriteAsSliceAndCollapse(slice);

    SmallVector<tensor::ExpandShapeOp> expands;
    getOperation()->walk([&](tensor::ExpandShapeOp expand) {
      if (hasGroupWithTwoDynamicSizes(expand))
        expands.push_back(expand);
    });
    for (tensor::ExpandShapeOp expand : expands) {
      OpBuilder b(expand);
      Location loc = expand.getLoc();
      SmallVector<Value> sizes;
      for (OpFoldResult size : expand.getMixedOutputShape())
        sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, size));
      Value shape = tensor::FromElementsOp::create(b, loc, sizes);
      Value reshaped = tensor::ReshapeOp::create(
          b, loc, expand.getResultType(), expand.getSrc(), shape);
      expand.replaceAllUsesWith(reshaped);
      expand.erase();
    }
  }
};

/// Whether upstream may misread which dimensions the rank-reducing
/// `view` drops: it has a stride other than one (expand-strided-metadata
/// crashes), or the dimensions it infers from the strides keep a size
/// other than the result's (dynamic strides cannot tell unit dimensions
/// apart, and the inference then keeps one of size 1 for one of size n).
static bool misreadDroppedDims(memref::SubViewOp view) {
  MemRefType result = view.getType();
  if (result.getRank() == view.getSourceType().getRank())
    return false;
  if (llvm::any_of(view.getMixedStrides(), [](OpFoldResult stride) {
        return !isConstantIntValue(stride, 1);
      }))
    return true;
  llvm::SmallBitVector dropped = view.getDroppedDims();
  ArrayRef<int64_t> sizes = view.getStaticSizes();
  if (dropped.size() != sizes.size() ||
      sizes.size() - dropped.count() != static_cast<size_t>(result.getRank()))
    return true;
  unsigned kept = 0;
  for (auto [dim, size] : llvm::enumerate(sizes)) {
    if (dropped.test(dim)) {
      if (size != 1)
        return true;
      continue;
    }
    if (size != result.getDimSize(kept++))
      return true;
  }
  return false;
}

} // namespace

Value mlir::ad::legalizeRankReducingView(RewriterBase &rewriter,
                                         Operation *op) {
  auto view = dyn_cast<memref::SubViewOp>(op);
  if (!view)
    return op->getResult(0);
  if (!misreadDroppedDims(view))
    return view.getResult();
  MemRefType resultType = view.getType();
  auto fullType = memref::SubViewOp::inferResultType(
      view.getSourceType(), view.getMixedOffsets(), view.getMixedSizes(),
      view.getMixedStrides());
  // The kept dimensions: in order, each of the result's size and of a
  // stride its layout admits (a canonicalized view may keep a unit
  // dimension other than the first), every other one of size 1.
  ArrayRef<int64_t> sizes = view.getStaticSizes();
  auto [fullStrides, fullOffset] = fullType.getStridesAndOffset();
  auto [resultStrides, resultOffset] = resultType.getStridesAndOffset();
  int64_t rank = sizes.size(), resultRank = resultType.getRank();
  llvm::SmallBitVector keep(rank);
  std::function<bool(int64_t, int64_t)> match = [&](int64_t dim,
                                                    int64_t position) {
    if (position == resultRank)
      return llvm::all_of(llvm::seq<int64_t>(dim, rank),
                          [&](int64_t d) { return sizes[d] == 1; });
    if (dim == rank)
      return false;
    int64_t a = fullStrides[dim], b = resultStrides[position];
    if (sizes[dim] == resultType.getDimSize(position) &&
        (a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b))) {
      keep.set(dim);
      if (match(dim + 1, position + 1))
        return true;
      keep.reset(dim);
    }
    return sizes[dim] == 1 && match(dim + 1, position);
  };
  if (!match(0, 0))
    return view.getResult();
  llvm::SmallDenseSet<unsigned> droppedSet;
  for (int64_t dim = 0; dim < rank; ++dim)
    if (!keep.test(dim))
      droppedSet.insert(dim);
  std::optional<llvm::SmallDenseSet<unsigned>> dropped = droppedSet;
  Location loc = view.getLoc();
  rewriter.setInsertionPoint(view);
  Value full = memref::SubViewOp::create(
      rewriter, loc, fullType, view.getSource(), view.getMixedOffsets(),
      view.getMixedSizes(), view.getMixedStrides());
  SmallVector<ReassociationIndices> groups = groupsDropping(
      fullType.getRank(), [&](int64_t dim) { return dropped->contains(dim); });
  Value collapsed =
      memref::CollapseShapeOp::create(rewriter, loc, full, groups);
  if (collapsed.getType() != resultType) {
    if (!memref::CastOp::areCastCompatible(collapsed.getType(), resultType)) {
      rewriter.eraseOp(collapsed.getDefiningOp());
      rewriter.eraseOp(full.getDefiningOp());
      return view.getResult();
    }
    collapsed = memref::CastOp::create(rewriter, loc, resultType, collapsed);
  }
  rewriter.replaceOp(view, collapsed);
  return collapsed;
}

namespace {

struct ADLegalizeViewsPass
    : mlir::ad::impl::ADLegalizeViewsPassBase<ADLegalizeViewsPass> {
  void runOnOperation() override {
    SmallVector<memref::SubViewOp> views;
    getOperation()->walk([&](memref::SubViewOp view) {
      if (misreadDroppedDims(view))
        views.push_back(view);
    });
    IRRewriter rewriter(&getContext());
    for (memref::SubViewOp view : views)
      ad::legalizeRankReducingView(rewriter, view);
  }
};

struct ADLegalizeForLLVMPass
    : mlir::ad::impl::ADLegalizeForLLVMPassBase<ADLegalizeForLLVMPass> {
  void runOnOperation() override {
    getOperation()->walk([](Operation *op) {
      if (isa<arith::ExtFOp, arith::TruncFOp>(op))
        op->removeAttr("fastmath");
      // A private function with a body is internal to the module: LLVM may
      // then drop its unused arguments and results, propagate constant
      // ones and inline it everywhere (func-to-llvm ignores the symbol
      // visibility and gives every function external linkage). A linkage
      // the user chose stays.
      auto function = dyn_cast<func::FuncOp>(op);
      if (function && function.isPrivate() && !function.isExternal() &&
          !function->hasAttr("llvm.linkage"))
        function->setAttr(
            "llvm.linkage",
            LLVM::LinkageAttr::get(op->getContext(), LLVM::Linkage::Internal));
    });
  }
};

/// expm1(x) by Kahan's formula from exp and log, accurate to a few ulp
/// where exp(x) - 1 cancels.
struct AccurateExpM1 : OpRewritePattern<math::ExpM1Op> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::ExpM1Op op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    auto floatType = dyn_cast<FloatType>(getElementTypeOrSelf(type));
    if (!floatType || !(floatType.isF32() || floatType.isF64()))
      return failure();
    Location loc = op.getLoc();
    Value x = op.getOperand();
    auto constant = [&](double value) -> Value {
      TypedAttr scalar = rewriter.getFloatAttr(floatType, value);
      if (auto shaped = dyn_cast<ShapedType>(type))
        return arith::ConstantOp::create(
            rewriter, loc, type, DenseElementsAttr::get(shaped, scalar));
      return arith::ConstantOp::create(rewriter, loc, type, scalar);
    };
    Value one = constant(1.0);
    Value minusOne = constant(-1.0);
    Value inf = constant(std::numeric_limits<double>::infinity());
    Value u = math::ExpOp::create(rewriter, loc, x);
    Value um1 = arith::SubFOp::create(rewriter, loc, u, one);
    Value logU = math::LogOp::create(rewriter, loc, u);
    Value general = arith::DivFOp::create(
        rewriter, loc, arith::MulFOp::create(rewriter, loc, um1, x), logU);
    auto eq = [&](Value a, Value b) -> Value {
      return arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OEQ,
                                   a, b);
    };
    Value result = arith::SelectOp::create(rewriter, loc, eq(u, inf), inf,
                                           general);
    result = arith::SelectOp::create(rewriter, loc, eq(um1, minusOne),
                                     minusOne, result);
    result = arith::SelectOp::create(rewriter, loc, eq(u, one), x, result);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// `math.fpowi` on vectors, one element at a time: its LLVM intrinsic
/// takes one exponent for the whole vector.
struct ScalarizeVectorFPowI : OpRewritePattern<math::FPowIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::FPowIOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<VectorType>(op.getType());
    if (!type || type.isScalable())
      return failure();
    Location loc = op.getLoc();
    SmallVector<Value> elements;
    SmallVector<int64_t> strides = computeStrides(type.getShape());
    for (int64_t linear = 0; linear < type.getNumElements(); ++linear) {
      SmallVector<int64_t> position = delinearize(linear, strides);
      Value base = vector::ExtractOp::create(rewriter, loc, op.getLhs(),
                                             position);
      Value power = vector::ExtractOp::create(rewriter, loc, op.getRhs(),
                                              position);
      elements.push_back(math::FPowIOp::create(rewriter, loc, base, power,
                                               op.getFastmathAttr()));
    }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, type, elements);
    return success();
  }
};

struct ADLegalizeMathPass
    : mlir::ad::impl::ADLegalizeMathPassBase<ADLegalizeMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AccurateExpM1, ScalarizeVectorFPowI>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
