//===- GenerateDerivatives.cpp - the ad-generate-derivatives pass -*- C++ -*-=//
//
// Rewrites ad.grad, ad.value_and_grad and ad.forward into calls of generated
// forward functions and pullback closures.
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADDialect.h"
#include "ad/Transforms/DerivativeGenerator.h"
#include "ad/Transforms/Passes.h"

#include "mlir/Conversion/ControlFlowToSCF/ControlFlowToSCF.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/CFGToSCF.h"
#include "mlir/Transforms/Inliner.h"
#include "mlir/Transforms/InliningUtils.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADGENERATEDERIVATIVESPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;
using namespace mlir::ad;

namespace {

/// Emits `call forward` + `ad.make_pullback` for a derivative request and
/// returns the callee's results followed by the closure.
static FailureOr<SmallVector<Value>>
emitForwardAndClosure(DerivativeGenerator &generator, Operation *request,
                      FlatSymbolRefAttr calleeAttr, ValueRange operands,
                      ArrayRef<int64_t> wrt) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      request, calleeAttr);
  FailureOr<DerivativeFunctions> functions =
      generator.getOrCreate(callee, wrt, request);
  if (failed(functions))
    return failure();

  OpBuilder builder(request);
  Location loc = request->getLoc();
  auto call = func::CallOp::create(builder, loc, functions->forward, operands);
  unsigned numResults = callee.getNumResults();
  SmallVector<Value> values(call.getResults().take_front(numResults));
  auto closureType = getPullbackTypeOf(callee, wrt);
  auto closure = MakePullbackOp::create(
      builder, loc, closureType, functions->pullback.getSymName(),
      call.getResults().drop_front(numResults));
  values.push_back(closure);
  return values;
}

/// `ad.grad`/`ad.value_and_grad`: the closure applied to a cotangent of one.
/// Returns the callee's value followed by the gradients.
template <typename RequestOp>
static FailureOr<SmallVector<Value>>
emitValueAndGrad(DerivativeGenerator &generator, RequestOp request) {
  SmallVector<int64_t> wrt = request.getWrtPositions();
  FailureOr<SmallVector<Value>> forward = emitForwardAndClosure(
      generator, request, request.getCalleeAttr(), request.getOperands(), wrt);
  if (failed(forward))
    return failure();
  Value value = forward->front();
  Value closure = forward->back();
  OpBuilder builder(request);
  Value one =
      createFilledConstant(builder, request.getLoc(), value.getType(), 1.0);
  auto apply = PullbackOp::create(
      builder, request.getLoc(),
      cast<PullbackType>(closure.getType()).getGradientTypes(), closure, one);
  SmallVector<Value> results = {value};
  llvm::append_range(results, apply.getGradients());
  return results;
}

static LogicalResult rewriteRequest(DerivativeGenerator &generator,
                                    Operation *op) {
  FailureOr<SmallVector<Value>> replacement = failure();
  if (auto forward = dyn_cast<ForwardOp>(op)) {
    replacement = emitForwardAndClosure(generator, op, forward.getCalleeAttr(),
                                        forward.getOperands(),
                                        forward.getWrtPositions());
  } else if (auto grad = dyn_cast<GradOp>(op)) {
    replacement = emitValueAndGrad(generator, grad);
    if (succeeded(replacement))
      replacement->erase(replacement->begin());
  } else {
    replacement = emitValueAndGrad(generator, cast<ValueAndGradOp>(op));
  }
  if (failed(replacement))
    return failure();
  op->replaceAllUsesWith(*replacement);
  op->erase();
  return success();
}

/// Brings `function` into the form the rules are written for: unstructured
/// control flow lifted to scf (upstream's semantics-preserving
/// transformation) and named linalg ops generalized to linalg.generic.
static LogicalResult prepareForDifferentiation(func::FuncOp function) {
  if (!function.getBody().hasOneBlock()) {
    ControlFlowToSCFTransformation transformation;
    DominanceInfo dominance(function);
    if (failed(transformCFGToSCF(function.getBody(), transformation,
                                 dominance)))
      return function.emitError()
             << "cannot differentiate '" << function.getSymName()
             << "': its control flow could not be structured";
  }
  RewritePatternSet patterns(function.getContext());
  linalg::populateLinalgNamedOpsGeneralizationPatterns(patterns);
  walkAndApplyPatterns(function, std::move(patterns));
  return success();
}

/// Whether `function` runs a loop, itself or through the functions it calls
/// (then its tape holds buffers or rows). `seen` guards against cycles.
static bool runsLoops(func::FuncOp function,
                      llvm::SmallPtrSetImpl<Operation *> &seen) {
  if (function.isExternal() || !seen.insert(function).second)
    return false;
  bool loops = false;
  function.walk([&](Operation *op) {
    if (isa<LoopLikeOpInterface>(op)) {
      loops = true;
      return WalkResult::interrupt();
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (callee && runsLoops(callee, seen)) {
        loops = true;
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return loops;
}

/// Inlines, into `function`, the calls made inside its loops to
/// non-recursive functions that run loops: their tapes are buffers, which a
/// loop cannot store per iteration, while their inlined loops nest like
/// any other. Inlining is semantics-preserving.
static LogicalResult inlineLoopCallsWithLoops(func::FuncOp function,
                                              DerivativeGenerator &generator) {
  InlinerInterface interface(function.getContext());
  InlinerConfig config;
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<func::CallOp> calls;
    function.walk([&](func::CallOp call) {
      if (call->getParentOp() != function)
        calls.push_back(call);
    });
    for (func::CallOp call : calls) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      llvm::SmallPtrSet<Operation *, 8> seen;
      if (!callee || callee.isExternal() ||
          generator.inSameRecursion(callee, callee) ||
          !callee.getBody().hasOneBlock() || !runsLoops(callee, seen))
        continue;
      if (failed(inlineCall(interface, config.getCloneCallback(), call,
                            callee, &callee.getBody())))
        return call.emitError() << "cannot inline " << call.getCalleeAttr()
                                << " into the loop that calls it";
      call.erase();
      changed = true;
      break;
    }
  }
  return success();
}

struct ADGenerateDerivativesPass
    : mlir::ad::impl::ADGenerateDerivativesPassBase<ADGenerateDerivativesPass> {
  void runOnOperation() override {
    SmallVector<Operation *> requests;
    getOperation().walk([&](Operation *op) {
      if (isa<GradOp, ValueAndGradOp, ForwardOp>(op))
        requests.push_back(op);
    });
    DerivativeGenerator generator(getOperation());

    // Only the functions that get differentiated are rewritten.
    llvm::SetVector<Operation *> differentiated;
    for (Operation *request : requests) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          request, request->getAttrOfType<FlatSymbolRefAttr>("callee"));
      if (!callee || callee.isExternal())
        continue;
      differentiated.insert(callee);
      for (Operation *reached : generator.reachableFrom(callee))
        differentiated.insert(reached);
    }
    for (Operation *function : differentiated) {
      auto func = cast<func::FuncOp>(function);
      if (!func.isExternal() && failed(prepareForDifferentiation(func)))
        return signalPassFailure();
    }
    for (Operation *function : differentiated) {
      auto func = cast<func::FuncOp>(function);
      if (!func.isExternal() &&
          failed(inlineLoopCallsWithLoops(func, generator)))
        return signalPassFailure();
    }

    bool failedAny = false;
    for (Operation *request : requests)
      failedAny |= failed(rewriteRequest(generator, request));
    generator.finalize();
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
