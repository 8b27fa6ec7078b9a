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
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/CFGToSCF.h"
#include "mlir/Transforms/Inliner.h"
#include "mlir/Transforms/InliningUtils.h"
#include "mlir/Transforms/RegionUtils.h"
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

/// Whether `region` reads a tensor defined outside it (a gather:
/// `tensor.extract %table[%id]`).
static bool readsOuterTensor(Region &region) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(region, captured);
  return llvm::any_of(captured, [](Value value) {
    return isa<RankedTensorType>(value.getType());
  });
}

/// Rewrites `generate` as a loop nest over its positions inserting each
/// element into an uninitialized tensor (see rewriteAsLoops).
static void rewriteAsLoops(tensor::GenerateOp generate) {
  OpBuilder b(generate);
  Location loc = generate.getLoc();
  RankedTensorType type = generate.getType();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> lbs, ubs, steps;
  auto dynamicSize = generate.getDynamicExtents().begin();
  for (int64_t size : type.getShape()) {
    lbs.push_back(zero);
    steps.push_back(one);
    ubs.push_back(ShapedType::isDynamic(size)
                      ? *dynamicSize++
                      : arith::ConstantIndexOp::create(b, loc, size));
  }
  Value empty = tensor::EmptyOp::create(b, loc, type,
                                        generate.getDynamicExtents());
  Block *body = &generate.getBody().front();
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, ValueRange{empty},
      [&](OpBuilder &nested, Location nestedLoc, ValueRange ivs,
          ValueRange tensors) -> scf::ValueVector {
        IRMapping mapping;
        mapping.map(body->getArguments(), ivs);
        for (Operation &op : body->without_terminator())
          nested.clone(op, mapping);
        Value element =
            mapping.lookupOrDefault(body->getTerminator()->getOperand(0));
        return {tensor::InsertOp::create(nested, nestedLoc, element,
                                         tensors[0], ivs)};
      });
  generate->replaceAllUsesWith(nest.results);
  generate->erase();
}

/// Rewrites `generic` (on tensors) as the loop nest it denotes: one scf.for
/// per dimension, in order, carrying the outputs; each iteration extracts
/// the elements its maps select, runs the body and inserts the results.
/// The adjoint of a gather is then a scatter-add in the reverse loop, which
/// a linalg.generic cannot express.
static void rewriteAsLoops(linalg::GenericOp generic) {
  OpBuilder b(generic);
  Location loc = generic.getLoc();
  SmallVector<Value> lbs, ubs, steps;
  for (Range range : cast<linalg::LinalgOp>(generic.getOperation())
                         .createLoopRanges(b, loc)) {
    lbs.push_back(getValueOrCreateConstantIndexOp(b, loc, range.offset));
    ubs.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
    steps.push_back(getValueOrCreateConstantIndexOp(b, loc, range.stride));
  }
  Block *body = generic.getBody();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  unsigned numInputs = generic.getNumDpsInputs();
  auto elementAt = [&](OpBuilder &nested, Location nestedLoc, Value tensor,
                       AffineMap map, ValueRange ivs) {
    SmallVector<Value> indices;
    for (AffineExpr expr : map.getResults())
      indices.push_back(
          affine::expandAffineExpr(nested, nestedLoc, expr, ivs, {}));
    return tensor::ExtractOp::create(nested, nestedLoc, tensor, indices)
        .getResult();
  };
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, generic.getDpsInits(),
      [&](OpBuilder &nested, Location nestedLoc, ValueRange ivs,
          ValueRange outputs) -> scf::ValueVector {
        IRMapping mapping;
        for (auto [index, input] : llvm::enumerate(generic.getDpsInputs()))
          mapping.map(body->getArgument(index),
                      isa<RankedTensorType>(input.getType())
                          ? elementAt(nested, nestedLoc, input, maps[index],
                                      ivs)
                          : input);
        for (auto [index, output] : llvm::enumerate(outputs))
          mapping.map(body->getArgument(numInputs + index),
                      elementAt(nested, nestedLoc, output,
                                maps[numInputs + index], ivs));
        for (Operation &op : body->without_terminator()) {
          if (auto index = dyn_cast<linalg::IndexOp>(op)) {
            mapping.map(index.getResult(), ivs[index.getDim()]);
            continue;
          }
          nested.clone(op, mapping);
        }
        scf::ValueVector results;
        for (auto [index, yielded] :
             llvm::enumerate(body->getTerminator()->getOperands())) {
          SmallVector<Value> indices;
          for (AffineExpr expr : maps[numInputs + index].getResults())
            indices.push_back(
                affine::expandAffineExpr(nested, nestedLoc, expr, ivs, {}));
          results.push_back(tensor::InsertOp::create(
              nested, nestedLoc, mapping.lookupOrDefault(yielded),
              outputs[index], indices));
        }
        return results;
      });
  generic->replaceAllUsesWith(nest.results);
  generic->erase();
}

/// Brings `function` into the form the rules are written for: unstructured
/// control flow lifted to scf (upstream's semantics-preserving
/// transformation), named linalg ops generalized to linalg.generic, and
/// generics and tensor.generate ops whose body reads a tensor from outside
/// written as loops.
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
  SmallVector<Operation *> gathers;
  function.walk([&](Operation *op) {
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if ((generic && generic.hasPureTensorSemantics() &&
         readsOuterTensor(generic.getRegion())) ||
        (isa<tensor::GenerateOp>(op) && readsOuterTensor(op->getRegion(0))))
      gathers.push_back(op);
  });
  for (Operation *op : gathers) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op))
      rewriteAsLoops(generic);
    else
      rewriteAsLoops(cast<tensor::GenerateOp>(op));
  }
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
