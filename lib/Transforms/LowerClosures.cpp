//===- LowerClosures.cpp - the ad-lower-closures pass -----------*- C++ -*-===//
//
// A closure built by ad.make_pullback is the pullback function plus its
// captured tape; applying it is calling the function with the tape first.
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADDialect.h"
#include "ad/Transforms/Passes.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADLOWERCLOSURESPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;
using namespace mlir::ad;

namespace {

static LogicalResult lowerApplication(PullbackOp apply) {
  auto closure = apply.getPullback().getDefiningOp<MakePullbackOp>();
  if (!closure)
    return apply.emitOpError()
           << "applies a closure that does not come from an ad.forward in "
              "the same function; closures passed through arguments, "
              "results or control flow are not supported yet";
  OpBuilder builder(apply);
  SmallVector<Value> operands(closure.getCaptures());
  llvm::append_range(operands, apply.getCotangents());
  auto call = func::CallOp::create(builder, apply.getLoc(),
                                   closure.getCalleeAttr(),
                                   apply.getResultTypes(), operands);
  apply.replaceAllUsesWith(call.getResults());
  apply.erase();
  return success();
}

} // namespace

LogicalResult mlir::ad::lowerClosures(Operation *root) {
  SmallVector<PullbackOp> applications;
  root->walk([&](PullbackOp op) { applications.push_back(op); });
  bool failedAny = false;
  for (PullbackOp apply : applications)
    failedAny |= failed(lowerApplication(apply));

  SmallVector<MakePullbackOp> closures;
  root->walk([&](MakePullbackOp op) { closures.push_back(op); });
  for (MakePullbackOp closure : closures) {
    if (closure->use_empty()) {
      closure.erase();
      continue;
    }
    // Applications that failed to lower were reported above.
    auto escaping = llvm::find_if(closure->getUsers(), [](Operation *user) {
      return !isa<PullbackOp>(user);
    });
    if (escaping == closure->user_end())
      continue;
    (*escaping)->emitOpError()
        << "uses a pullback closure, which cannot leave the function that "
           "created it yet; apply it with ad.pullback there";
    failedAny = true;
  }
  return failure(failedAny);
}

namespace {

struct ADLowerClosuresPass
    : mlir::ad::impl::ADLowerClosuresPassBase<ADLowerClosuresPass> {
  void runOnOperation() override {
    if (failed(lowerClosures(getOperation())))
      return signalPassFailure();
    // Derivatives are generated: a stopped gradient is its operand again.
    getOperation().walk([](StopGradientOp stop) {
      stop.replaceAllUsesWith(stop.getInput());
      stop.erase();
    });
    // So are the user-written rules, which only derivatives used.
    getOperation().walk([](Operation *op) {
      if (isa<CustomVjpOp, CustomJvpOp>(op))
        op->erase();
    });
  }
};

} // namespace
