//===- BodyReverseEmitter.h - reverse sweep over a scalar body --*- C++ -*-===//
//
// The reverse sweep over the scalar body of a linalg.generic or of a tensor
// op's element region (tensor.generate, tensor.pad), shared by the linalg
// and tensor rules. Private to lib/Rules.
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_RULES_BODYREVERSEEMITTER_H
#define AD_LIB_RULES_BODYREVERSEEMITTER_H

#include "ad/IR/ADInterfaces.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::ad {

/// The reverse sweep over the scalar body of a linalg.generic, for the
/// derivative with respect to one block argument. Primal values are the
/// body's recomputation inside the adjoint generic.
class BodyReverseEmitter : public ReverseEmitter {
public:
  BodyReverseEmitter(OpBuilder &builder, IRMapping &mapping, Block &body,
                     Value wrt)
      : builder(builder), mapping(mapping) {
    SmallVector<Value> worklist = {wrt};
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      if (!varied.insert(value).second)
        continue;
      // A use nested in a region op of the body varies that op.
      for (Operation *user : value.getUsers())
        if (Operation *inBody = body.findAncestorOpInBlock(*user))
          llvm::append_range(worklist, inBody->getResults());
    }
  }

  OpBuilder &getBuilder() override { return builder; }
  bool isActive(Value original) const override {
    return varied.contains(original) && isDifferentiableType(original.getType());
  }
  bool isVaried(Value original) const override {
    return varied.contains(original);
  }
  FailureOr<DerivativeFunctions> getDerivativeFunctions(func::FuncOp,
                                                        ArrayRef<int64_t>,
                                                        Operation *requester) override {
    return requester->emitError(
        "cannot differentiate a call inside a linalg.generic body");
  }
  bool isSameRecursion(func::FuncOp) override { return false; }
  bool inRecursion() override { return false; }
  // Bodies hold no calls (Preparation rewrites such generics as loops).
  bool usesSharedTape(func::CallOp) override { return false; }
  bool isCheckpointed(func::CallOp) override { return false; }
  func::FuncOp lookupCallee(func::CallOp call) override {
    return SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
  }

  Value getPrimal(Value original) override { return mapping.lookup(original); }
  Value getPrimalShape(Value original) override { return getPrimal(original); }
  Value tryGetPrimal(Value original) override { return getPrimal(original); }
  SmallVector<Value> getResiduals(Operation *) override { return {}; }
  Value getCotangent(Value original) override {
    if (Value cotangent = cotangents.lookup(original))
      return cotangent;
    return createFilledConstant(builder, original.getLoc(), original.getType(),
                                0.0);
  }
  void addCotangent(Value original, Value contribution) override {
    if (isActive(original))
      cotangents.add(builder, original, contribution);
  }
  Value lookupCotangent(Value original) override {
    return cotangents.lookup(original);
  }
  void setCotangent(Value original, Value cotangent) override {
    cotangents.set(original, cotangent);
  }
  LogicalResult emitReverseOps(Block &original) override {
    for (Operation &op : llvm::reverse(original.without_terminator())) {
      bool hasCotangent = llvm::any_of(op.getResults(), [&](Value result) {
        return cotangents.contains(result);
      });
      if (!hasCotangent ||
          llvm::none_of(op.getResults(),
                        [&](Value result) { return isActive(result); }))
        continue;
      // Region ops and calls would need the tape of a function-level sweep.
      if (op.getNumRegions() > 0 || isa<CallOpInterface>(op))
        return op.emitError()
               << "cannot differentiate '" << op.getName()
               << "' inside the body of a linalg or tensor op "
                  "(ad-generate-derivatives writes such bodies as loop nests)";
      auto rule = dyn_cast<ReverseRuleOpInterface>(op);
      if (!rule)
        return op.emitError() << "no derivative rule for '" << op.getName()
                              << "', whose result depends on a "
                                 "differentiated argument";
      if (failed(rule.emitReverse(*this)))
        return failure();
    }
    return success();
  }
  void mapPrimal(Value original, Value pullbackValue) override {
    mapping.map(original, pullbackValue);
  }
  void beginLoop(Block *, Value, Value) override {}
  void endLoop(Block *) override {}
  void beginRows(Block *, Operation *, Value) override {}
  void endRows(Block *) override {}
  void resetCotangents(Block &) override {}
  Value getRecursionTape() override { return nullptr; }
  Value getGrowableTape(Operation *) override { return nullptr; }

private:
  OpBuilder &builder;
  IRMapping &mapping;
  llvm::DenseSet<Value> varied;
  CotangentMap cotangents;
};


} // namespace mlir::ad

#endif // AD_LIB_RULES_BODYREVERSEEMITTER_H
