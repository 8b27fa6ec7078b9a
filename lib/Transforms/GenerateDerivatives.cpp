//===- GenerateDerivatives.cpp - the ad-generate-derivatives pass -*- C++ -*-=//
//
// Rewrites ad.grad, ad.value_and_grad and ad.forward into calls of generated
// forward functions and pullback closures.
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADDialect.h"
#include "ad/Transforms/DerivativeGenerator.h"
#include "ad/Transforms/Passes.h"

#include "ad/Transforms/Preparation.h"
#include "ad/Transforms/TangentGenerator.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringSet.h"
#include <map>
#include "llvm/Support/thread.h"

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
                      func::FuncOp callee, ValueRange operands,
                      ArrayRef<int64_t> wrt) {
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
emitValueAndGrad(DerivativeGenerator &generator, RequestOp request,
                 func::FuncOp callee) {
  SmallVector<int64_t> wrt = request.getWrtPositions();
  FailureOr<SmallVector<Value>> forward = emitForwardAndClosure(
      generator, request, callee, request.getOperands(), wrt);
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

/// `ad.jvp`: a call of the tangent function of `callee`; its results, then
/// the tangents of the float results (the shadows of returned buffers are
/// not part of the contract).
static FailureOr<SmallVector<Value>>
emitJvp(TangentGenerator &tangents, Operation *request, func::FuncOp callee,
        ValueRange operands, ValueRange tangentOperands,
        ArrayRef<int64_t> wrt) {
  FailureOr<func::FuncOp> function =
      tangents.getOrCreate(callee, wrt, request);
  if (failed(function))
    return failure();
  SmallVector<Value> callOperands(operands);
  llvm::append_range(callOperands, tangentOperands);
  OpBuilder builder(request);
  auto call = func::CallOp::create(builder, request->getLoc(), *function,
                                   callOperands);
  unsigned numResults = callee.getNumResults();
  SmallVector<Value> results(call.getResults().take_front(numResults));
  ValueRange resultTangents = call.getResults().drop_front(numResults);
  for (Type type : callee.getResultTypes()) {
    if (!hasTangentType(type))
      continue;
    if (isDifferentiableType(type))
      results.push_back(resultTangents.front());
    resultTangents = resultTangents.drop_front();
  }
  return results;
}

/// Rewrites request `op` (ad.grad, ad.value_and_grad, ad.forward or ad.jvp)
/// into calls of the derivative functions of `callee`.
static LogicalResult rewriteRequest(DerivativeGenerator &generator,
                                    TangentGenerator &tangents, Operation *op,
                                    func::FuncOp callee) {
  FailureOr<SmallVector<Value>> replacement = failure();
  if (auto jvp = dyn_cast<JvpOp>(op)) {
    replacement = emitJvp(tangents, op, callee, jvp.getArgs(),
                          jvp.getTangents(), jvp.getWrtPositions());
  } else if (auto forward = dyn_cast<ForwardOp>(op)) {
    replacement = emitForwardAndClosure(generator, op, callee,
                                        forward.getOperands(),
                                        forward.getWrtPositions());
  } else if (auto grad = dyn_cast<GradOp>(op)) {
    replacement = emitValueAndGrad(generator, grad, callee);
    if (succeeded(replacement))
      replacement->erase(replacement->begin());
  } else {
    replacement = emitValueAndGrad(generator, cast<ValueAndGradOp>(op), callee);
  }
  if (failed(replacement))
    return failure();
  op->replaceAllUsesWith(*replacement);
  op->erase();
  return success();
}

/// The derivative requests (ad.grad, ad.value_and_grad, ad.forward, ad.jvp,
/// ad.hvp) in
/// `root`, in program order.
static SmallVector<Operation *> collectRequests(Operation *root) {
  SmallVector<Operation *> requests;
  root->walk([&](Operation *op) {
    if (isa<GradOp, ValueAndGradOp, ForwardOp, JvpOp, HvpOp>(op))
      requests.push_back(op);
  });
  return requests;
}

/// Differentiation works on a copy of the module, where the functions to
/// differentiate are prepared (lifted, generalized, inlined) and the
/// derivative functions are generated; only the latter move to the user's
/// module, whose own functions stay exactly as they were. Calls the
/// generated code makes to user functions name them, and the prepared
/// copies are equivalent to them, so the names resolve to the originals.
class Differentiation {
public:
  Differentiation(ModuleOp module, unsigned checkpointLevels)
      : module(module), scratch(cast<ModuleOp>(module->clone())),
        scratchSymbols(*scratch), generator(scratchSymbols),
        tangents(scratchSymbols) {
    generator.setCheckpointLevels(checkpointLevels);
  }

  /// Rewrites every request of the module, and then the requests the
  /// generated functions inherit from the functions they were made from
  /// (an inactive ad.grad inside a differentiated function), until none is
  /// left; moves the generated functions into the module.
  LogicalResult run() {
    // Several requests may meet the same obstacle (two requests of one
    // function): each error is reported once.
    llvm::StringSet<> reported;
    ScopedDiagnosticHandler deduplicate(
        module.getContext(), [&](Diagnostic &diagnostic) {
          std::string key;
          llvm::raw_string_ostream os(key);
          os << diagnostic.getLocation() << ": " << diagnostic.str();
          // Handled (dropped) when seen before; otherwise passed on.
          return success(!reported.insert(key).second);
        });
    llvm::StringSet<> userSymbols;
    for (Operation &op : *module.getBody())
      if (auto symbol = dyn_cast<SymbolOpInterface>(op))
        userSymbols.insert(symbol.getName());
    bool failedAny = false;
    SmallVector<Operation *> requests = collectRequests(module);
    while (!requests.empty()) {
      for (Operation *request : requests)
        failedAny |= failed(rewrite(request));
      // A request that failed stays where it is: do not try it again.
      if (failedAny)
        break;
      requests.clear();
      for (Operation &op : *scratch->getBody()) {
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        if (symbol && !userSymbols.contains(symbol.getName()))
          llvm::append_range(requests, collectRequests(&op));
      }
    }
    generator.finalize();
    moveGeneratedFunctions(userSymbols);
    return failure(failedAny);
  }

private:
  LogicalResult rewrite(Operation *request) {
    auto calleeAttr = request->getAttrOfType<FlatSymbolRefAttr>("callee");
    Operation *table = SymbolTable::getNearestSymbolTable(request);
    if (table != module.getOperation() && table != scratch->getOperation())
      return request->emitError()
             << "cannot differentiate " << calleeAttr
             << " yet: requests are supported in the top-level module only";
    auto callee = scratchSymbols.lookup<func::FuncOp>(calleeAttr.getAttr());
    if (!callee)
      return request->emitError()
             << "cannot differentiate " << calleeAttr
             << ": it is not a function of the top-level module";
    if (failed(ensurePrepared(callee)))
      return failure();
    if (auto hvp = dyn_cast<HvpOp>(request))
      return rewriteHvp(hvp, callee);
    return rewriteRequest(generator, tangents, request, callee);
  }

  /// ad.hvp is forward over reverse: the jvp of a function that returns
  /// the gradient of the callee, generated once per (callee, wrt).
  LogicalResult rewriteHvp(HvpOp hvp, func::FuncOp callee) {
    SmallVector<int64_t> wrt = hvp.getWrtPositions();
    func::FuncOp &gradient = gradientFunctions[std::make_pair(
        callee.getOperation(), std::vector<int64_t>(wrt.begin(), wrt.end()))];
    if (!gradient) {
      OpBuilder builder(callee);
      builder.setInsertionPointAfter(callee);
      FunctionType type = callee.getFunctionType();
      SmallVector<Type> gradientTypes;
      for (int64_t position : wrt)
        gradientTypes.push_back(type.getInput(position));
      gradient = func::FuncOp::create(
          builder, hvp.getLoc(), getDerivativeName(callee, "gradient", wrt),
          builder.getFunctionType(type.getInputs(), gradientTypes));
      gradient.setPrivate();
      // Renamed if the module has a function of that name already.
      scratchSymbols.insert(gradient);
      Block *body = gradient.addEntryBlock();
      builder.setInsertionPointToStart(body);
      auto grad = GradOp::create(
          builder, hvp.getLoc(), gradientTypes,
          FlatSymbolRefAttr::get(callee.getSymNameAttr()),
          body->getArguments(), hvp.getWrtAttr());
      func::ReturnOp::create(builder, hvp.getLoc(), grad.getResults());
      if (failed(ensurePrepared(gradient)))
        return failure();
    }
    FailureOr<SmallVector<Value>> results =
        emitJvp(tangents, hvp, gradient, hvp.getArgs(), hvp.getTangents(),
                wrt);
    if (failed(results))
      return failure();
    hvp.replaceAllUsesWith(ArrayRef<Value>(*results).drop_front(wrt.size()));
    hvp.erase();
    return success();
  }

  /// Rewrites the requests inside `function` (innermost derivatives first,
  /// so an outer derivative differentiates ordinary code) and lowers their
  /// closures, which then are plain calls of generated functions. Returns
  /// whether there were any.
  FailureOr<bool> rewriteNestedRequests(func::FuncOp function) {
    if (!nestedRewritten.insert(function).second)
      return false;
    SmallVector<Operation *> requests = collectRequests(function);
    if (requests.empty())
      return false;
    for (Operation *request : requests)
      if (failed(rewrite(request)))
        return failure();
    generator.invalidateCallGraph();
    generator.getMemoryWriteCheck().invalidate();
    tangents.getMemoryWriteCheck().invalidate();
    if (failed(lowerClosures(function)))
      return failure();
    return true;
  }

  /// Prepares `callee` and every function it reaches, once each.
  LogicalResult ensurePrepared(func::FuncOp callee) {
    SmallVector<func::FuncOp> fresh;
    auto consider = [&](Operation *op) {
      auto function = cast<func::FuncOp>(op);
      if (!function.isExternal() && prepared.insert(op).second)
        fresh.push_back(function);
    };
    consider(callee);
    for (Operation *reached : generator.reachableFrom(callee))
      consider(reached);
    for (func::FuncOp function : fresh)
      if (failed(prepareForDifferentiation(function)))
        return failure();
    // Derivatives taken inside: generated first, they become calls of
    // generated functions, which are prepared in turn.
    bool rewroteAny = false;
    for (func::FuncOp function : fresh) {
      FailureOr<bool> rewrote = rewriteNestedRequests(function);
      if (failed(rewrote))
        return failure();
      rewroteAny |= *rewrote;
    }
    if (rewroteAny) {
      SmallVector<func::FuncOp> more;
      for (Operation *reached : generator.reachableFrom(callee)) {
        auto function = cast<func::FuncOp>(reached);
        if (!function.isExternal() && prepared.insert(reached).second)
          more.push_back(function);
      }
      for (func::FuncOp function : more)
        if (failed(prepareForDifferentiation(function)))
          return failure();
      llvm::append_range(fresh, more);
    }
    for (func::FuncOp function : fresh)
      if (failed(inlineLoopCallsWithLoops(function, generator)))
        return failure();
    return success();
  }

  /// Moves the functions generated in the scratch module into the module,
  /// each after the op that precedes it in the scratch module.
  void moveGeneratedFunctions(const llvm::StringSet<> &userSymbols) {
    SymbolTable moduleSymbols(module);
    Operation *anchor = nullptr;
    for (Operation &op : llvm::make_early_inc_range(*scratch->getBody())) {
      auto symbol = dyn_cast<SymbolOpInterface>(op);
      if (!symbol)
        continue;
      if (userSymbols.contains(symbol.getName())) {
        anchor = moduleSymbols.lookup(symbol.getName());
        continue;
      }
      op.remove();
      op.removeAttr(kGeneratedAttrName);
      if (anchor)
        module.getBody()->getOperations().insertAfter(anchor->getIterator(),
                                                      &op);
      else
        module.getBody()->push_front(&op);
      anchor = &op;
    }
  }

  ModuleOp module;
  OwningOpRef<ModuleOp> scratch;
  SymbolTable scratchSymbols;
  DerivativeGenerator generator;
  TangentGenerator tangents;
  llvm::SmallPtrSet<Operation *, 16> prepared;
  /// Per (callee, wrt) of an ad.hvp: the function returning the gradient.
  std::map<std::pair<Operation *, std::vector<int64_t>>, func::FuncOp>
      gradientFunctions;
  /// Functions whose own requests have been rewritten.
  llvm::SmallPtrSet<Operation *, 16> nestedRewritten;
};

struct ADGenerateDerivativesPass
    : mlir::ad::impl::ADGenerateDerivativesPassBase<ADGenerateDerivativesPass> {
  using Base::Base;
  static constexpr unsigned kStackBytes = 1u << 30;

  void runOnOperation() override {
    if (collectRequests(getOperation()).empty())
      return;
    // Differentiating a call differentiates its callee first, a native
    // recursion as deep as the chain of calls: it runs on a thread whose
    // stack (reserved, committed only as used) holds chains of about a
    // hundred thousand calls.
    LogicalResult result = failure();
    llvm::thread worker(std::optional<unsigned>(kStackBytes), [&] {
      result = Differentiation(getOperation(), checkpointLevels).run();
    });
    worker.join();
    if (failed(result))
      signalPassFailure();
  }
};

} // namespace
