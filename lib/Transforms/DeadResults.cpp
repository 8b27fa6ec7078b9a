//===- DeadResults.cpp - results of linalg.generic nobody reads -----------===//
//
// A generic's result that nothing reads still costs its whole computation:
// upstream drops such a result only when the body does not read its init,
// or reads it once to yield it. Merged and fused generics carry longer
// chains: the forward of a Hessian-vector product computes a tangent of
// every forward value in the same loop nest as the value, and when the
// pullback reads no tangent of some value (a comparison's operands), that
// output still accumulates its tangent over the whole iteration space.
//
// EraseDeadResultChains drops an unused result together with the body ops
// only it needs, provided no op the kept results need reads its init. The
// body ops dropped are free of memory effects; anything else stays.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace {

struct EraseDeadResultChains : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const override {
    if (!generic.hasPureTensorSemantics() || generic.getNumResults() < 2 ||
        llvm::all_of(generic->getResults(),
                     [](Value result) { return !result.use_empty(); }))
      return failure();
    Block *body = generic.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    unsigned numInputs = generic.getNumDpsInputs();

    // The values the read results need, and the ops computing them: every
    // op with a memory effect is needed too.
    llvm::DenseSet<Value> needed;
    llvm::DenseSet<Operation *> kept;
    for (OpResult result : generic->getResults())
      if (!result.use_empty())
        needed.insert(yield.getOperand(result.getResultNumber()));
    for (Operation &op :
         llvm::reverse(body->without_terminator())) {
      bool isNeeded = !isMemoryEffectFree(&op) ||
                      llvm::any_of(op.getResults(), [&](Value value) {
                        return needed.contains(value);
                      });
      if (!isNeeded)
        continue;
      kept.insert(&op);
      op.walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          needed.insert(operand);
      });
    }

    SmallVector<unsigned> keptOutputs;
    for (OpResult result : generic->getResults()) {
      unsigned i = result.getResultNumber();
      if (!result.use_empty() ||
          needed.contains(body->getArgument(numInputs + i)))
        keptOutputs.push_back(i);
    }
    if (keptOutputs.size() == generic.getNumResults())
      return rewriter.notifyMatchFailure(generic, "every init is read");
    // The outputs that stay must still give every loop its range.
    SmallVector<OpOperand *> dropped;
    for (OpOperand &init : generic.getDpsInitsMutable())
      if (!llvm::is_contained(keptOutputs,
                              init.getOperandNumber() - numInputs))
        dropped.push_back(&init);
    if (!generic.canOpOperandsBeDropped(dropped))
      return rewriter.notifyMatchFailure(generic, "a loop would lose its range");

    SmallVector<Value> inits;
    SmallVector<Type> resultTypes;
    SmallVector<AffineMap> maps;
    for (OpOperand *input : generic.getDpsInputOperands())
      maps.push_back(generic.getMatchingIndexingMap(input));
    for (unsigned i : keptOutputs) {
      OpOperand *init = generic.getDpsInitOperand(i);
      inits.push_back(init->get());
      resultTypes.push_back(generic->getResult(i).getType());
      maps.push_back(generic.getMatchingIndexingMap(init));
    }
    rewriter.setInsertionPoint(generic);
    auto replacement = linalg::GenericOp::create(
        rewriter, generic.getLoc(), resultTypes, generic.getDpsInputs(), inits,
        maps, generic.getIteratorTypesArray(),
        [&](OpBuilder &b, Location loc, ValueRange arguments) {
          IRMapping mapping;
          for (unsigned i = 0; i < numInputs; ++i)
            mapping.map(body->getArgument(i), arguments[i]);
          for (auto [position, i] : llvm::enumerate(keptOutputs))
            mapping.map(body->getArgument(numInputs + i),
                        arguments[numInputs + position]);
          for (Operation &op : body->without_terminator())
            if (kept.contains(&op))
              b.clone(op, mapping);
          SmallVector<Value> yielded;
          for (unsigned i : keptOutputs)
            yielded.push_back(mapping.lookupOrDefault(yield.getOperand(i)));
          linalg::YieldOp::create(b, loc, yielded);
        });
    replacement->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
    if (generic.getDocAttr())
      replacement.setDocAttr(generic.getDocAttr());
    if (generic.getLibraryCallAttr())
      replacement.setLibraryCallAttr(generic.getLibraryCallAttr());
    SmallVector<Value> replacements(generic.getNumResults(), Value());
    for (auto [position, i] : llvm::enumerate(keptOutputs))
      replacements[i] = replacement->getResult(position);
    for (OpResult result : generic->getResults())
      if (!replacements[result.getResultNumber()])
        // Unused: any value of the type will do for the replacement.
        replacements[result.getResultNumber()] =
            generic.getDpsInits()[result.getResultNumber()];
    rewriter.replaceOp(generic, replacements);
    return success();
  }
};

} // namespace

void mlir::ad::populateEraseDeadResultPatterns(RewritePatternSet &patterns) {
  patterns.add<EraseDeadResultChains>(patterns.getContext());
}
