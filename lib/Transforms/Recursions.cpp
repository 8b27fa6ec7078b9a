//===- Recursions.cpp - the call graph of a module --------------*- C++ -*-===//
//
// What DerivativeGenerator knows of calls between functions: reachability,
// the recursions (strongly connected components of upstream's CallGraph),
// the row width of the tape each recursion shares, set once every
// function of the recursion is generated, and the checkpointed levels of
// tree recursions.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/DerivativeGenerator.h"

#include "mlir/Analysis/CallGraph.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SCCIterator.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::ad;

CallGraph &DerivativeGenerator::getCallGraph(func::FuncOp function) {
  // Built on demand; rebuilt for a function generated after it.
  if (!callGraph ||
      (!function.isExternal() && !callGraph->lookupNode(&function.getBody())))
    callGraph = std::make_unique<CallGraph>(symbolTable.getOp());
  return *callGraph;
}

const llvm::SmallPtrSetImpl<Operation *> &
DerivativeGenerator::reachableFrom(func::FuncOp function) {
  auto it = reachable.find(function);
  if (it != reachable.end())
    return it->second;
  // Through calls, and from a function with user-written rules to the
  // rules' functions, which replace its differentiation.
  llvm::SmallPtrSet<Operation *, 8> found;
  CallGraph &graph = getCallGraph(function);
  SmallVector<func::FuncOp> worklist = {function};
  auto reach = [&](func::FuncOp reached) {
    if (reached && found.insert(reached).second)
      worklist.push_back(reached);
  };
  while (!worklist.empty()) {
    func::FuncOp current = worklist.pop_back_val();
    if (CustomVjpOp rule = customRules.getVjp(current)) {
      reach(lookupFunction(rule.getForwardAttr()));
      reach(lookupFunction(rule.getPullbackAttr()));
    }
    if (CustomJvpOp rule = customRules.getJvp(current))
      reach(lookupFunction(rule.getTangentAttr()));
    if (current.isExternal())
      continue;
    CallGraphNode *node = graph.lookupNode(&current.getBody());
    if (!node)
      continue;
    for (const CallGraphNode::Edge &edge : *node)
      if (!edge.getTarget()->isExternal())
        reach(cast<func::FuncOp>(
            edge.getTarget()->getCallableRegion()->getParentOp()));
  }
  return reachable[function] = std::move(found);
}

void DerivativeGenerator::invalidateCallGraph() {
  callGraph.reset();
  reachable.clear();
  componentOf.clear();
}

/// The strongly connected components of the module's call graph (upstream
/// CallGraph; llvm::scc_iterator keeps its own stack, so call chains
/// thousands deep are fine). A component is a recursion when it has a
/// cycle (a self call included).
void DerivativeGenerator::computeRecursions() {
  callGraph = std::make_unique<CallGraph>(symbolTable.getOp());
  componentOf.clear();
  componentIsRecursion.clear();
  componentRoot.clear();
  for (auto scc = llvm::scc_begin<const CallGraph *>(callGraph.get());
       !scc.isAtEnd(); ++scc) {
    // The first member by name: the same whichever member asks.
    Operation *root = nullptr;
    unsigned id = componentIsRecursion.size();
    for (CallGraphNode *node : *scc) {
      if (node->isExternal())
        continue;
      auto function =
          dyn_cast<func::FuncOp>(node->getCallableRegion()->getParentOp());
      if (!function)
        continue;
      componentOf[function] = id;
      if (!root ||
          function.getSymName() < cast<func::FuncOp>(root).getSymName())
        root = function;
    }
    if (!root)
      continue;
    componentIsRecursion.push_back(scc.hasCycle());
    componentRoot.push_back(root);
  }
}

bool DerivativeGenerator::inSameRecursion(func::FuncOp a, func::FuncOp b) {
  if (componentOf.empty())
    computeRecursions();
  auto itA = componentOf.find(a), itB = componentOf.find(b);
  if (itA == componentOf.end() || itB == componentOf.end())
    return false;
  return itA->second == itB->second && componentIsRecursion[itA->second];
}

Operation *DerivativeGenerator::recursionRoot(func::FuncOp function) {
  if (componentOf.empty())
    computeRecursions();
  auto it = componentOf.find(function);
  return it == componentOf.end() ? function.getOperation()
                                 : componentRoot[it->second];
}

SmallVector<unsigned>
DerivativeGenerator::invariantArguments(func::FuncOp function) {
  if (componentOf.empty())
    computeRecursions();
  auto it = componentOf.find(function);
  if (it == componentOf.end())
    return {};
  unsigned id = it->second;
  // Every member's ranked tensor and scalar arguments, then those a call
  // within the recursion passes something else for are dropped, until none
  // is.
  llvm::DenseMap<Operation *, llvm::SmallBitVector> invariant;
  for (auto &[member, component] : componentOf) {
    auto memberFunction = cast<func::FuncOp>(member);
    if (component != id || memberFunction.isExternal())
      continue;
    llvm::SmallBitVector values(memberFunction.getNumArguments());
    for (auto [position, type] :
         llvm::enumerate(memberFunction.getArgumentTypes()))
      if (isa<RankedTensorType, IntegerType, IndexType, FloatType>(type))
        values.set(position);
    invariant[member] = values;
  }
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto &[member, positions] : invariant) {
      Region &body = cast<func::FuncOp>(member).getBody();
      body.walk([&](func::CallOp call) {
        auto callee =
            symbolTable.lookup<func::FuncOp>(call.getCalleeAttr().getValue());
        auto calleeIt = callee ? invariant.find(callee) : invariant.end();
        if (calleeIt == invariant.end())
          return;
        for (unsigned position : calleeIt->second.set_bits()) {
          auto argument = dyn_cast<BlockArgument>(call.getOperand(position));
          if (argument && argument.getOwner() == &body.front() &&
              invariant[member].test(argument.getArgNumber()))
            continue;
          calleeIt->second.reset(position);
          changed = true;
        }
      });
    }
  }
  auto found = invariant.find(function);
  if (found == invariant.end())
    return {};
  return llvm::to_vector(found->second.set_bits());
}

Operation *DerivativeGenerator::widthGroup(Operation *root) {
  while (Operation *merged = mergedWidths.lookup(root))
    root = merged;
  return root;
}

void DerivativeGenerator::shareRecursionTape(func::FuncOp a, func::FuncOp b) {
  Operation *groupA = widthGroup(recursionRoot(a));
  Operation *groupB = widthGroup(recursionRoot(b));
  if (groupA == groupB)
    return;
  unsigned moved = recursionWidths.lookup(groupB);
  recursionWidths.erase(groupB);
  unsigned &width = recursionWidths[groupA];
  width = std::max(width, moved);
  mergedWidths[groupB] = groupA;
}

void DerivativeGenerator::addRecursionWidth(func::FuncOp function,
                                            Operation *placeholder,
                                            unsigned slots) {
  Operation *root = recursionRoot(function);
  unsigned &width = recursionWidths[widthGroup(root)];
  width = std::max(width, slots);
  if (placeholder)
    placeholder->setAttr(kRowWidthAttrName,
                         cast<func::FuncOp>(root).getSymNameAttr());
}

void DerivativeGenerator::finalize() {
  // Placeholders in functions discarded after a failure went with them;
  // copies made by forward mode are found like the originals.
  symbolTable.getOp()->walk([&](arith::ConstantOp placeholder) {
    auto root = placeholder->getAttrOfType<StringAttr>(kRowWidthAttrName);
    if (!root)
      return;
    Operation *group = widthGroup(symbolTable.lookup(root));
    placeholder.setValueAttr(IntegerAttr::get(
        placeholder.getType(), recursionWidths.lookup(group)));
    placeholder->removeAttr(kRowWidthAttrName);
  });
}

//===----------------------------------------------------------------------===//
// Checkpointed levels of a tree recursion
//===----------------------------------------------------------------------===//

/// Whether running `op` again gives the same values and does nothing else:
/// it computes with values only (tensors, scalars), or allocates. Ops with
/// regions that have the effects of their nested ops, and calls (whose
/// callees the caller checks), are judged by what they hold.
static bool isRecomputable(Operation *op) {
  auto isMemRef = [](Type type) { return isa<BaseMemRefType>(type); };
  if (llvm::any_of(op->getOperandTypes(), isMemRef) ||
      llvm::any_of(op->getResultTypes(), isMemRef))
    return false;
  // An assertion checked again holds again (the runtime's bounds checks).
  if (isa<func::CallOp, cf::AssertOp>(op) ||
      op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
    return true;
  auto interface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!interface)
    return false;
  SmallVector<MemoryEffects::EffectInstance> effects;
  interface.getEffects(effects);
  return llvm::all_of(effects, [](const MemoryEffects::EffectInstance &effect) {
    return isa<MemoryEffects::Allocate>(effect.getEffect());
  });
}

bool DerivativeGenerator::isRecomputableRecursion(func::FuncOp callee) {
  auto [it, inserted] = recomputable.try_emplace(callee, false);
  if (!inserted)
    return it->second;
  if (componentOf.empty())
    computeRecursions();
  auto component = componentOf.find(callee);
  if (component == componentOf.end() ||
      !componentIsRecursion[component->second])
    return false;
  for (auto &[member, id] : componentOf) {
    if (id != component->second)
      continue;
    // A rule replaces the member's derivative everywhere; the copies of
    // tree levels would differentiate its body.
    auto function = cast<func::FuncOp>(member);
    if (customRules.getVjp(function) || customRules.getJvp(function) ||
        function.isExternal())
      return false;
  }
  SmallVector<func::FuncOp> functions = {callee};
  for (Operation *reached : reachableFrom(callee))
    functions.push_back(cast<func::FuncOp>(reached));
  for (func::FuncOp function : functions) {
    auto isMemRef = [](Type type) { return isa<BaseMemRefType>(type); };
    if (function.isExternal() ||
        llvm::any_of(function.getArgumentTypes(), isMemRef) ||
        llvm::any_of(function.getResultTypes(), isMemRef))
      return false;
    // Another recursion it reaches must be restartable too: one that is
    // not would reallocate the tape under this one, whose callers keep
    // the buffer they passed.
    if (inSameRecursion(function, function) &&
        !inSameRecursion(function, callee) &&
        !isRecomputableRecursion(function))
      return false;
    WalkResult walk = function.getBody().walk([&](Operation *op) {
      // A function without a body (reachableFrom does not list them) may do
      // anything when run again (libc's rand).
      if (auto call = dyn_cast<func::CallOp>(op)) {
        func::FuncOp target = lookupFunction(call.getCalleeAttr());
        if (!target || target.isExternal())
          return WalkResult::interrupt();
      }
      return isRecomputable(op) ? WalkResult::advance()
                                : WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return false;
  }
  return recomputable[callee] = true;
}

bool DerivativeGenerator::isRecomputableTreeRecursion(func::FuncOp callee) {
  if (!isRecomputableRecursion(callee))
    return false;
  unsigned id = componentOf.lookup(callee);
  auto isMember = [&](func::CallOp call) {
    func::FuncOp target = lookupFunction(call.getCalleeAttr());
    auto it = target ? componentOf.find(target) : componentOf.end();
    return it != componentOf.end() && it->second == id;
  };
  for (auto &[member, memberId] : componentOf) {
    if (memberId != id)
      continue;
    WalkResult walk = member->walk([&](func::CallOp call) {
      return isMember(call) && call->getParentOfType<LoopLikeOpInterface>()
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return true;
  }
  return false;
}

func::FuncOp DerivativeGenerator::createCheckpointedLevels(func::FuncOp callee) {
  if (func::FuncOp existing = levelZero.lookup(callee))
    return existing;
  unsigned id = componentOf.lookup(callee);
  auto isMember = [&](func::FuncOp function) {
    auto it = componentOf.find(function);
    return it != componentOf.end() && it->second == id;
  };
  // Level i's copy of each member calls level i + 1's copies, checkpointed;
  // the last level calls the recursion itself, checkpointed too: the
  // pullback of an invocation of the last level tapes one subtree below
  // it at a time.
  std::map<std::pair<Operation *, unsigned>, func::FuncOp> copies;
  std::function<func::FuncOp(func::FuncOp, unsigned)> copyAt =
      [&](func::FuncOp member, unsigned level) -> func::FuncOp {
    if (level == checkpointLevels)
      return member;
    func::FuncOp &copy = copies[{member.getOperation(), level}];
    if (copy)
      return copy;
    copy = cast<func::FuncOp>(member->clone());
    copy.setSymName(
        (member.getSymName() + "_ad_level" + Twine(level)).str());
    copy.setPrivate();
    copy->setAttr(kGeneratedAttrName, UnitAttr::get(copy.getContext()));
    levelCopies.insert(copy);
    // Renamed on a clash; placed after the member.
    symbolTable.insert(copy, std::next(member->getIterator()));
    // Only the calls marked here are checkpointed (a user's marker is
    // dropped).
    SmallVector<func::CallOp> calls;
    copy.walk([&](func::CallOp call) {
      call->removeAttr(kCheckpointAttrName);
      func::FuncOp target = lookupFunction(call.getCalleeAttr());
      if (target && isMember(target))
        calls.push_back(call);
    });
    for (func::CallOp call : calls) {
      func::FuncOp target =
          copyAt(lookupFunction(call.getCalleeAttr()), level + 1);
      call.setCallee(target.getSymName());
      call->setAttr(kCheckpointAttrName, UnitAttr::get(call.getContext()));
    }
    return copy;
  };
  func::FuncOp top = copyAt(callee, 0);
  // The copies are not part of any recursion.
  invalidateCallGraph();
  levelZero[callee] = top;
  return top;
}

DerivativeFunctions DerivativeGenerator::withCheckpointedLevels(
    func::FuncOp callee, ArrayRef<int64_t> varied,
    DerivativeFunctions functions, Operation *requester) {
  auto key = std::make_pair(callee.getOperation(),
                            std::vector<int64_t>(varied.begin(), varied.end()));
  auto it = withLevels.find(key);
  if (it != withLevels.end())
    return it->second;
  withLevels[key] = functions;
  if (!isRecomputableTreeRecursion(callee))
    return functions;
  func::FuncOp top = createCheckpointedLevels(callee);
  // The recursion itself was differentiated: its copies differ only in
  // calls. Should they fail all the same (a value a loop's tape cannot
  // keep), the whole tree's tape is used, without a word.
  FailureOr<DerivativeFunctions> levels;
  {
    ScopedDiagnosticHandler silence(callee.getContext(),
                                    [](Diagnostic &) { return success(); });
    levels = getOrCreateWhole(top, varied, requester);
  }
  if (failed(levels) || levels->recursiveForward)
    return functions;
  functions.forward = levels->forward;
  functions.pullback = levels->pullback;
  functions.numTapeValues = levels->numTapeValues;
  functions.passed.clear();
  return withLevels[key] = functions;
}
