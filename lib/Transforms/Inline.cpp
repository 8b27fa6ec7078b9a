//===- Inline.cpp - the ad-inline pass --------------------------*- C++ -*-===//
//
// Inlining whose cost grows linearly with the module: private functions
// called once are moved (not cloned) into their callers, outermost first;
// upstream's inliner then inlines the remaining calls to small callees.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "mlir/Analysis/CallGraph.h"
#include "mlir/Transforms/Inliner.h"
#include "mlir/Transforms/InliningUtils.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/SCCIterator.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADINLINEPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;
using namespace mlir::ad;

namespace {

/// The functions of `module` that are part of a recursion (call themselves,
/// directly or through others).
static DenseSet<Operation *> recursiveFunctions(CallGraph &callGraph) {
  DenseSet<Operation *> recursive;
  for (auto scc = llvm::scc_begin(static_cast<const CallGraph *>(&callGraph)); !scc.isAtEnd(); ++scc) {
    const auto &nodes = *scc;
    bool cycle = nodes.size() > 1;
    if (!cycle && !nodes.front()->isExternal())
      cycle = llvm::any_of(*nodes.front(), [&](const CallGraphNode::Edge &e) {
        return e.getTarget() == nodes.front();
      });
    if (!cycle)
      continue;
    for (CallGraphNode *node : nodes)
      if (!node->isExternal())
        recursive.insert(node->getCallableRegion()->getParentOp());
  }
  return recursive;
}

/// Moves the body of `callee`, a function with one block, in place of
/// `call`: its ops go right before the call (moving only them: splitting
/// the caller's block, as upstream's inlining does, would move everything
/// after the call each time, quadratic along a chain), its arguments become
/// the call's operands and its returned values the call's results. Fails,
/// changing nothing, when a dialect does not allow inlining an op.
static LogicalResult moveCallee(InlinerInterface &interface, func::CallOp call,
                                func::FuncOp callee) {
  Region &body = callee.getBody();
  if (!body.hasOneBlock())
    return failure();
  Block &block = body.front();
  auto returnOp = dyn_cast<func::ReturnOp>(block.getTerminator());
  if (!returnOp || returnOp.getNumOperands() != call.getNumResults() ||
      block.getNumArguments() != call.getNumOperands())
    return failure();
  IRMapping mapping;
  Region *destination = call->getParentRegion();
  if (!interface.isLegalToInline(call, callee, /*wouldBeCloned=*/false) ||
      !interface.isLegalToInline(destination, &body, /*wouldBeCloned=*/false,
                                 mapping))
    return failure();
  bool legal = !block
                    .walk([&](Operation *op) {
                      if (op == returnOp ||
                          interface.isLegalToInline(op, destination,
                                                    /*wouldBeCloned=*/false,
                                                    mapping))
                        return WalkResult::advance();
                      return WalkResult::interrupt();
                    })
                    .wasInterrupted();
  if (!legal)
    return failure();
  for (auto [argument, operand] :
       llvm::zip(block.getArguments(), call.getOperands()))
    argument.replaceAllUsesWith(operand);
  call->getBlock()->getOperations().splice(call->getIterator(),
                                           block.getOperations(), block.begin(),
                                           returnOp->getIterator());
  call.replaceAllUsesWith(returnOp.getOperands());
  call.erase();
  returnOp.erase();
  return success();
}

/// Moves every private, non-recursive function with a one-block body that
/// one func.call (and nothing else) refers to into that call, outermost
/// callers first: each body moves once, into the function that is never
/// inlined at the top of its chain. (Multi-block callees are left to step
/// 2, which inlines them only where the caller's region may hold blocks.)
static void inlineSingleUseCallees(ModuleOp module, CallGraph &callGraph) {
  DenseSet<Operation *> recursive = recursiveFunctions(callGraph);
  SymbolTable symbolTable(module);
  DenseMap<StringAttr, unsigned> uses, callUses;
  if (std::optional<SymbolTable::UseRange> symbolUses =
          SymbolTable::getSymbolUses(&module.getBodyRegion())) {
    for (const SymbolTable::SymbolUse &use : *symbolUses) {
      StringAttr root = use.getSymbolRef().getRootReference();
      ++uses[root];
      auto call = dyn_cast<func::CallOp>(use.getUser());
      if (call && call.getCalleeAttr() == use.getSymbolRef() &&
          call->getParentOfType<ModuleOp>() == module)
        ++callUses[root];
    }
  }
  auto movable = [&](func::FuncOp function) {
    StringAttr name = function.getSymNameAttr();
    return function.isPrivate() && !function.isExternal() &&
           uses.lookup(name) == 1 && callUses.lookup(name) == 1 &&
           !recursive.contains(function);
  };

  InlinerInterface interface(module.getContext());
  SmallVector<func::FuncOp> roots;
  for (auto function : module.getOps<func::FuncOp>())
    if (!function.isExternal() && !movable(function))
      roots.push_back(function);
  for (func::FuncOp root : roots) {
    SmallVector<func::CallOp> worklist;
    root.walk([&](func::CallOp call) { worklist.push_back(call); });
    while (!worklist.empty()) {
      func::CallOp call = worklist.pop_back_val();
      auto callee = symbolTable.lookup<func::FuncOp>(call.getCallee());
      if (!callee || !movable(callee))
        continue;
      SmallVector<func::CallOp> inner;
      callee.walk([&](func::CallOp nested) { inner.push_back(nested); });
      if (failed(moveCallee(interface, call, callee)))
        continue;
      symbolTable.erase(callee);
      llvm::append_range(worklist, inner);
    }
  }
}

/// Whether `region` holds at most `limit` operations.
static bool isSmall(Region &region, unsigned limit) {
  unsigned count = 0;
  return !region
              .walk([&](Operation *) {
                return ++count > limit ? WalkResult::interrupt()
                                       : WalkResult::advance();
              })
              .wasInterrupted();
}

struct ADInlinePass : mlir::ad::impl::ADInlinePassBase<ADInlinePass> {
  using ADInlinePassBase::ADInlinePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    {
      CallGraph callGraph(module);
      inlineSingleUseCallees(module, callGraph);
    }

    CallGraph &callGraph = getAnalysis<CallGraph>();
    InlinerConfig config;
    config.setDefaultPipeline([](OpPassManager &pm) {
      pm.addPass(createCanonicalizerPass());
    });
    config.setMaxInliningIterations(4);
    unsigned limit = maxCalleeOps;
    auto profitable = [limit](const Inliner::ResolvedCall &resolved) {
      Region *region = resolved.targetNode->getCallableRegion();
      return region && isSmall(*region, limit);
    };
    auto runPipeline = [](Pass &pass, OpPassManager &pipeline, Operation *op) {
      return static_cast<ADInlinePass &>(pass).runPipeline(pipeline, op);
    };
    Inliner inliner(module, callGraph, *this, getAnalysisManager(),
                    runPipeline, config, profitable);
    if (failed(inliner.doInlining()))
      signalPassFailure();
  }
};

} // namespace
