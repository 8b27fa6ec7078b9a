//===- DerivativeGenerator.cpp - forward and pullback functions -*- C++ -*-===//
//
// Differentiates one function in two sweeps. The forward sweep emits the
// augmented forward function: the original ops, with each active op emitted
// by its rule (calls become calls of the callee's forward function). The
// reverse sweep walks the ops backwards and lets each active op's rule emit
// its adjoint into the pullback function. Whatever a rule reads from the
// forward run becomes a tape value: returned by the forward function, taken
// as an argument by the pullback. Constants are rebuilt, not taped.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/DerivativeGenerator.h"
#include "ad/Transforms/ActivityAnalysis.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::ad;

namespace {

/// What both sweeps answer the same way: a builder appending to the body of
/// the function being emitted, activity, and derivatives of callees.
template <typename EmitterT>
class Sweep : public EmitterT {
public:
  Sweep(DerivativeGenerator &generator, const ActivityAnalysis &activity,
        Block *body)
      : generator(generator), activity(activity),
        builder(OpBuilder::atBlockEnd(body)) {}

  OpBuilder &getBuilder() override { return builder; }
  bool isActive(Value original) const override {
    return activity.isActive(original);
  }
  FailureOr<DerivativeFunctions>
  getDerivativeFunctions(func::FuncOp callee, ArrayRef<int64_t> wrt,
                         Operation *requester) override {
    return generator.getOrCreate(callee, wrt, requester);
  }

protected:
  DerivativeGenerator &generator;
  const ActivityAnalysis &activity;
  OpBuilder builder;
};

/// The forward sweep over one function.
class ForwardSweep : public Sweep<ForwardEmitter> {
public:
  using Sweep::Sweep;

  Value lookup(Value original) override { return mapping.lookup(original); }
  LogicalResult cloneOp(Operation *original) override {
    builder.clone(*original, mapping);
    return success();
  }
  void mapResults(Operation *original, ValueRange forwardValues) override {
    mapping.map(original->getResults(), forwardValues);
  }
  void setResiduals(Operation *original, ValueRange forwardValues) override {
    residuals[original].assign(forwardValues.begin(), forwardValues.end());
  }

  IRMapping mapping;
  DenseMap<Operation *, SmallVector<Value>> residuals;
};

/// The reverse sweep over one function. Tape arguments are inserted at the
/// front of the pullback's entry block as rules ask for primal values.
class ReverseSweep : public Sweep<ReverseEmitter> {
public:
  ReverseSweep(DerivativeGenerator &generator,
               const ActivityAnalysis &activity, ForwardSweep &forward,
               Block *pullbackBody)
      : Sweep(generator, activity, pullbackBody), forward(forward),
        body(pullbackBody) {}

  Value getPrimal(Value original) override {
    return fromForward(forward.lookup(original));
  }
  SmallVector<Value> getResiduals(Operation *original) override {
    SmallVector<Value> values;
    for (Value residual : forward.residuals.lookup(original))
      values.push_back(fromForward(residual));
    return values;
  }
  Value getCotangent(Value originalResult) override {
    if (Value cotangent = cotangents.lookup(originalResult))
      return cotangent;
    return createFilledConstant(builder, originalResult.getLoc(),
                                originalResult.getType(), 0.0);
  }
  void addCotangent(Value originalOperand, Value contribution) override {
    if (!activity.isActive(originalOperand))
      return;
    Value &slot = cotangents[originalOperand];
    slot = slot ? createCotangentAdd(builder, contribution.getLoc(), slot,
                                     contribution)
                : contribution;
  }

  /// Whether some result of `op` has received a cotangent.
  bool hasCotangent(Operation *op) const {
    return llvm::any_of(op->getResults(), [&](Value result) {
      return cotangents.contains(result);
    });
  }

  /// Forward-function values the pullback reads, in tape order.
  SmallVector<Value> tape;

private:
  /// Makes forward value `value` available in the pullback: rebuilds
  /// constants, tapes everything else (once).
  Value fromForward(Value value) {
    if (Value available = availableInPullback.lookup(value))
      return available;
    Value result;
    Operation *def = value.getDefiningOp();
    if (def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
        def->hasTrait<OpTrait::ConstantLike>()) {
      OpBuilder prologue = OpBuilder::atBlockBegin(body);
      Operation *copy = prologue.clone(*def);
      result = copy->getResult(cast<OpResult>(value).getResultNumber());
    } else {
      result = body->insertArgument(tape.size(), value.getType(),
                                    value.getLoc());
      tape.push_back(value);
    }
    availableInPullback[value] = result;
    return result;
  }

  ForwardSweep &forward;
  Block *body;
  DenseMap<Value, Value> availableInPullback;
  DenseMap<Value, Value> cotangents;
};

} // namespace

DerivativeGenerator::DerivativeGenerator(ModuleOp module)
    : symbolTable(module) {}

InFlightDiagnostic DerivativeGenerator::emitError(Operation *op,
                                                  const Twine &message) {
  InFlightDiagnostic diag = op->emitError(message);
  for (Operation *requester : llvm::reverse(requesters)) {
    Diagnostic &note = diag.attachNote(requester->getLoc());
    note << "while differentiating this call";
    if (auto callee = requester->getAttrOfType<FlatSymbolRefAttr>("callee"))
      note << " of " << callee;
  }
  return diag;
}

FailureOr<DerivativeFunctions>
DerivativeGenerator::getOrCreate(func::FuncOp callee, ArrayRef<int64_t> wrt,
                                 Operation *requester) {
  auto key = std::make_pair(callee.getOperation(),
                            std::vector<int64_t>(wrt.begin(), wrt.end()));
  auto it = generated.find(key);
  if (it != generated.end())
    return it->second;
  if (callee.isExternal()) {
    emitError(requester, "cannot differentiate this call: '" +
                             callee.getSymName() +
                             "' has no body in this module");
    return failure();
  }
  if (inProgress.contains(callee)) {
    emitError(requester, "cannot differentiate the recursive call of '" +
                             callee.getSymName() +
                             "': reverse mode through recursion is not "
                             "supported yet");
    return failure();
  }
  requesters.push_back(requester);
  inProgress.insert(callee);
  FailureOr<DerivativeFunctions> functions = generate(callee, wrt);
  inProgress.erase(callee);
  requesters.pop_back();
  if (succeeded(functions))
    generated[key] = *functions;
  return functions;
}

/// `<callee>_ad_<kind>_<wrt positions joined by '_'>`.
static std::string derivativeName(func::FuncOp callee, StringRef kind,
                                  ArrayRef<int64_t> wrt) {
  std::string name = (callee.getSymName() + "_ad_" + kind).str();
  for (int64_t position : wrt)
    name += "_" + std::to_string(position);
  return name;
}

/// A private function with an entry block taking `inputs`, inserted right
/// after `anchor` and located at `callee`.
static func::FuncOp createCompanion(SymbolTable &symbolTable,
                                    func::FuncOp callee, Operation *anchor,
                                    StringRef name, TypeRange inputs) {
  OpBuilder builder(anchor);
  builder.setInsertionPointAfter(anchor);
  auto function = func::FuncOp::create(
      builder, callee.getLoc(), name, builder.getFunctionType(inputs, {}));
  function.setPrivate();
  symbolTable.insert(function);
  function.addEntryBlock();
  return function;
}

FailureOr<DerivativeFunctions>
DerivativeGenerator::generate(func::FuncOp callee, ArrayRef<int64_t> wrt) {
  if (!callee.getBody().hasOneBlock()) {
    emitError(callee, "cannot differentiate '" + callee.getSymName() +
                          "': functions with several blocks (unstructured "
                          "control flow) are not supported yet");
    return failure();
  }
  ActivityAnalysis activity(callee, wrt);
  Block &original = callee.getBody().front();
  FunctionType type = callee.getFunctionType();

  SmallVector<Type> cotangentTypes;
  for (Type result : type.getResults())
    if (isDifferentiableType(result))
      cotangentTypes.push_back(result);

  func::FuncOp forwardFunction =
      createCompanion(symbolTable, callee, callee,
                      derivativeName(callee, "fwd", wrt), type.getInputs());
  func::FuncOp pullbackFunction =
      createCompanion(symbolTable, callee, forwardFunction,
                      derivativeName(callee, "pb", wrt), cotangentTypes);
  auto discard = [&]() {
    symbolTable.erase(forwardFunction);
    symbolTable.erase(pullbackFunction);
    return failure();
  };

  // Forward sweep: every op in program order.
  ForwardSweep forward(*this, activity, &forwardFunction.getBody().front());
  forward.mapping.map(original.getArguments(),
                      forwardFunction.getArguments());
  for (Operation &op : original.without_terminator()) {
    if (!activity.isActive(&op)) {
      (void)forward.cloneOp(&op);
      continue;
    }
    auto rule = dyn_cast<ReverseRuleOpInterface>(&op);
    if (!rule) {
      emitError(&op, "no derivative rule for '" +
                         op.getName().getStringRef() +
                         "', whose result depends on a differentiated "
                         "argument");
      return discard();
    }
    if (failed(rule.emitForward(forward)))
      return discard();
  }

  // Reverse sweep: seed the returned values, then every active op backwards.
  Block *pullbackBody = &pullbackFunction.getBody().front();
  ReverseSweep reverse(*this, activity, forward, pullbackBody);
  Operation *terminator = original.getTerminator();
  unsigned cotangentIndex = 0;
  for (Value returned : terminator->getOperands())
    if (isDifferentiableType(returned.getType()))
      reverse.addCotangent(returned,
                           pullbackBody->getArgument(cotangentIndex++));
  for (Operation &op : llvm::reverse(original.without_terminator())) {
    if (!activity.isActive(&op) || !reverse.hasCotangent(&op))
      continue;
    if (failed(cast<ReverseRuleOpInterface>(op).emitReverse(reverse)))
      return discard();
  }

  SmallVector<Value> gradients;
  OpBuilder &pullbackBuilder = reverse.getBuilder();
  for (int64_t position : wrt) {
    BlockArgument argument = callee.getArgument(position);
    Value gradient = reverse.getCotangent(argument);
    if (!gradient) {
      emitError(callee, "cannot build a zero gradient for argument #" +
                            Twine(position) + " of dynamic shape yet");
      return discard();
    }
    gradients.push_back(gradient);
  }
  func::ReturnOp::create(pullbackBuilder, terminator->getLoc(), gradients);
  pullbackFunction.setType(FunctionType::get(
      callee.getContext(), pullbackBody->getArgumentTypes(),
      ValueRange(gradients).getTypes()));

  // The forward function returns the original results, then the tape.
  SmallVector<Value> forwardResults;
  for (Value returned : terminator->getOperands())
    forwardResults.push_back(forward.lookup(returned));
  llvm::append_range(forwardResults, reverse.tape);
  OpBuilder &forwardBuilder = forward.getBuilder();
  func::ReturnOp::create(forwardBuilder, terminator->getLoc(), forwardResults);
  forwardFunction.setType(FunctionType::get(
      callee.getContext(), type.getInputs(),
      ValueRange(forwardResults).getTypes()));

  DerivativeFunctions functions;
  functions.forward = forwardFunction;
  functions.pullback = pullbackFunction;
  functions.wrt.assign(wrt.begin(), wrt.end());
  functions.numTapeValues = reverse.tape.size();
  return functions;
}
