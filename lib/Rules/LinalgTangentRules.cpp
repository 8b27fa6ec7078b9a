//===- LinalgTangentRules.cpp - forward-mode rules of linalg and tensor ---===//
//
// linalg.generic is differentiated by rebuilding it with one more input per
// active input (its tangent, under the same indexing map) and one more
// output per active result (the result's tangent, under the output's map;
// on buffers, per output buffer with a shadow, which it writes),
// and emitting its body with the scalar ops' own tangent rules: a
// contraction's tangent is the sum of the contractions with each tangent,
// a max reduction's tangent follows the selected element, all in one pass.
// The tensor ops' tangent rules are in TensorRules.cpp.
//
//===----------------------------------------------------------------------===//

#include "ad/Rules/ElementwiseRule.h"
#include "ad/Rules/Rules.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::ad;

namespace {

struct GenericTangentRule
    : TangentRuleOpInterface::ExternalModel<GenericTangentRule,
                                            linalg::GenericOp> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    auto generic = cast<linalg::GenericOp>(op);
    // On buffers the outputs with shadows are carried (the op writes them);
    // on tensors the active results.
    bool onBuffers = generic.hasPureBufferSemantics();
    if (!onBuffers && !generic.hasPureTensorSemantics())
      return emitter.emitError(op, "cannot differentiate a linalg.generic "
                                   "that mixes tensors and buffers");
    Block &body = *generic.getBody();
    unsigned numInputs = generic.getNumDpsInputs();
    unsigned numOutputs = generic.getNumDpsInits();
    SmallVector<AffineMap> inputMaps, outputMaps;
    for (unsigned i = 0; i < numInputs; ++i)
      inputMaps.push_back(generic.getIndexingMapsArray()[i]);
    for (unsigned i = 0; i < numOutputs; ++i)
      outputMaps.push_back(generic.getIndexingMapsArray()[numInputs + i]);

    SmallVector<unsigned> activeInputs, carriedOutputs;
    for (auto [index, input] : llvm::enumerate(generic.getDpsInputs()))
      if (hasTangentType(input.getType()) && emitter.isActive(input))
        activeInputs.push_back(index);
    for (unsigned index = 0; index < numOutputs; ++index)
      if (onBuffers ? emitter.isActive(generic.getDpsInits()[index])
                    : emitter.isActive(generic.getResult(index)))
        carriedOutputs.push_back(index);

    SmallVector<Value> inputs, outputs;
    SmallVector<AffineMap> maps;
    for (Value input : generic.getDpsInputs())
      inputs.push_back(emitter.lookup(input));
    for (unsigned index : activeInputs)
      inputs.push_back(emitter.getTangent(generic.getDpsInputs()[index]));
    for (Value output : generic.getDpsInits())
      outputs.push_back(emitter.lookup(output));
    for (unsigned index : carriedOutputs)
      outputs.push_back(emitter.getTangent(generic.getDpsInits()[index]));
    llvm::append_range(maps, inputMaps);
    for (unsigned index : activeInputs)
      maps.push_back(inputMaps[index]);
    llvm::append_range(maps, outputMaps);
    for (unsigned index : carriedOutputs)
      maps.push_back(outputMaps[index]);
    SmallVector<Type> resultTypes;
    if (!onBuffers)
      for (Value output : outputs)
        resultTypes.push_back(output.getType());

    OpBuilder &b = emitter.getBuilder();
    Location loc = generic.getLoc();
    auto rebuilt = linalg::GenericOp::create(
        b, loc, resultTypes, inputs, outputs, maps,
        generic.getIteratorTypesArray());
    SmallVector<Type> argumentTypes;
    for (Value value : llvm::concat<Value>(inputs, outputs))
      argumentTypes.push_back(getElementTypeOrSelf(value.getType()));
    Block *target = b.createBlock(
        &rebuilt.getRegion(), {}, argumentTypes,
        SmallVector<Location>(argumentTypes.size(), loc));
    b.setInsertionPointAfter(rebuilt);

    // Block arguments: inputs, input tangents, outputs, output tangents.
    unsigned numActive = activeInputs.size();
    ValueRange arguments = target->getArguments();
    for (unsigned i = 0; i < numInputs; ++i)
      emitter.mapValues(body.getArgument(i), arguments[i]);
    for (auto [k, index] : llvm::enumerate(activeInputs))
      emitter.setTangent(body.getArgument(index), arguments[numInputs + k]);
    unsigned firstOutput = numInputs + numActive;
    for (unsigned i = 0; i < numOutputs; ++i)
      emitter.mapValues(body.getArgument(numInputs + i),
                        arguments[firstOutput + i]);
    for (auto [k, index] : llvm::enumerate(carriedOutputs))
      emitter.setTangent(body.getArgument(numInputs + index),
                         arguments[firstOutput + numOutputs + k]);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(target);
      if (failed(emitter.emitOps(body)))
        return failure();
      Operation *yield = body.getTerminator();
      SmallVector<Value> yielded;
      for (Value value : yield->getOperands())
        yielded.push_back(emitter.lookup(value));
      for (unsigned index : carriedOutputs)
        yielded.push_back(emitter.getTangent(yield->getOperand(index)));
      linalg::YieldOp::create(b, yield->getLoc(), yielded);
    }
    if (onBuffers)
      return success();
    emitter.mapResults(op, rebuilt.getResults().take_front(numOutputs));
    for (auto [k, index] : llvm::enumerate(carriedOutputs))
      emitter.setTangent(generic.getResult(index),
                         rebuilt.getResult(numOutputs + k));
    return success();
  }
};

} // namespace

void mlir::ad::registerLinalgTangentRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    linalg::GenericOp::attachInterface<GenericTangentRule>(*context);
  });
}
