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
#include "mlir/Transforms/CFGToSCF.h"
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

    bool failedAny = false;
    for (Operation *request : requests)
      failedAny |= failed(rewriteRequest(generator, request));
    generator.finalize();
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
