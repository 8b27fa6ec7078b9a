//===- TangentGenerator.cpp - forward-mode tangent functions ----*- C++ -*-===//
//
// Differentiates one function in a single sweep, in program order: every op
// is emitted into the tangent function, and each active op's
// TangentRuleOpInterface rule follows its primal with the tangents of its
// results. Region ops rebuild themselves with the tangents carried next to
// the primal values; calls call the callee's tangent function, which makes
// recursion work without a tape.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/TangentGenerator.h"
#include "ad/IR/ADDialect.h"
#include "ad/Transforms/DerivativeGenerator.h"
#include "ad/Rules/ShadowBuffers.h"
#include "ad/Transforms/ActivityAnalysis.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/Support/ScopedPrinter.h"
#include "mlir/Interfaces/CallInterfaces.h"

using namespace mlir;
using namespace mlir::ad;

FunctionType mlir::ad::getTangentFunctionType(func::FuncOp callee,
                                              ArrayRef<int64_t> wrt) {
  FunctionType type = callee.getFunctionType();
  SmallVector<Type> inputs(type.getInputs());
  for (int64_t position : getTangentPositions(callee, wrt))
    inputs.push_back(type.getInput(position));
  SmallVector<Type> results(type.getResults());
  for (Type result : type.getResults())
    if (hasTangentType(result))
      results.push_back(result);
  return FunctionType::get(callee.getContext(), inputs, results);
}

namespace {

/// The sweep over one function.
class TangentSweep : public TangentEmitter {
public:
  TangentSweep(TangentGenerator &generator, func::FuncOp function,
               ArrayRef<int64_t> wrt, Block *body)
      : generator(generator), activity(function, wrt, /*followsMemory=*/true),
        builder(OpBuilder::atBlockEnd(body)) {}

  OpBuilder &getBuilder() override { return builder; }
  bool isActive(Value original) const override {
    return activity.isActive(original);
  }
  bool isVaried(Value original) const override {
    return activity.isVaried(original);
  }
  Value lookup(Value original) override {
    Value value = mapping.lookupOrNull(original);
    assert(value && "primal value used before it was emitted");
    return value;
  }
  LogicalResult cloneOp(Operation *original) override {
    builder.clone(*original, mapping);
    return success();
  }
  void mapResults(Operation *original, ValueRange values) override {
    mapping.map(original->getResults(), values);
  }
  void mapValues(ValueRange originals, ValueRange values) override {
    mapping.map(originals, values);
  }
  Value getTangent(Value original) override {
    if (Value tangent = tangents.lookup(original))
      return tangent;
    Type type = original.getType();
    if (!isa<MemRefType, RankedTensorType>(type))
      return createZerosLike(builder, original.getLoc(), type,
                             lookup(original));
    // A buffer nothing differentiable was written to gets one zero shadow,
    // which every later read and write of the buffer shares; an inactive
    // tensor read by an active op one zero tensor (not filled again at
    // every iteration of a loop that reads it). Either is made where the
    // value is defined, so that it dominates every use.
    Value primal = lookup(original);
    OpBuilder::InsertionGuard guard(builder);
    if (Operation *definition = primal.getDefiningOp())
      builder.setInsertionPointAfter(definition);
    else
      builder.setInsertionPointToStart(primal.getParentBlock());
    Value zero = isa<MemRefType>(type)
                     ? createZeroShadow(builder, original.getLoc(), primal)
                     : createZerosLike(builder, original.getLoc(), type, primal);
    tangents[original] = zero;
    return zero;
  }
  Value lookupTangent(Value original) override {
    return tangents.lookup(original);
  }
  void setTangent(Value original, Value tangent) override {
    assert(tangent.getType() == original.getType() &&
           "a tangent has its primal's type");
    tangents[original] = tangent;
  }
  /// Fails with a diagnostic when `op` passes on a value that depends on a
  /// differentiated argument in a type that carries no tangent.
  LogicalResult checkOperandsCarryTangents(Operation &op) {
    Value operand = findUncarriedOperand(
        &op, [&](Value value) { return activity.isVaried(value); },
        hasTangentType);
    if (!operand)
      return success();
    generator.emitError(&op, describeUncarriedOperand(&op, operand));
    return failure();
  }

  /// Whether `op` or an op nested in it may write a buffer with a shadow,
  /// or is a call given a varied value.
  bool needsTangentInside(Operation &op) {
    auto varied = [&](Value value) { return activity.isVaried(value); };
    return op
        .walk([&](Operation *nested) {
          bool needs =
              llvm::any_of(getWrittenBuffers(nested),
                           [&](Value buffer) {
                             return activity.isActive(buffer);
                           }) ||
              (isa<CallOpInterface>(nested) &&
               llvm::any_of(nested->getOperands(), varied));
          return needs ? WalkResult::interrupt() : WalkResult::advance();
        })
        .wasInterrupted();
  }

  /// Fails with a diagnostic when an operand of `op` is a buffer of floats
  /// without a shadow whose zero shadow cannot be allocated (a rule may ask
  /// for it).
  LogicalResult checkShadowsCanBeCreated(Operation &op) {
    for (Value operand : op.getOperands()) {
      auto type = dyn_cast<MemRefType>(operand.getType());
      if (!type || !hasTangentType(type) || !activity.isActive(operand) ||
          tangents.contains(operand) || canCreateZeroShadow(type))
        continue;
      generator.emitError(&op, "cannot differentiate '" +
                                   op.getName().getStringRef() +
                                   "': its buffer operand of type '" +
                                   llvm::to_string(type) +
                                   "' would need a zero shadow buffer, which "
                                   "no allocation of that layout gives");
      return failure();
    }
    return success();
  }

  LogicalResult emitOps(Block &original) override {
    for (Operation &op : original.without_terminator())
      if (failed(emitOp(op)))
        return failure();
    return success();
  }
  FailureOr<func::FuncOp> getTangentFunction(func::FuncOp callee,
                                             ArrayRef<int64_t> wrt,
                                             Operation *requester) override {
    return generator.getOrCreate(callee, wrt, requester);
  }
  func::FuncOp lookupCallee(func::CallOp call) override {
    return generator.lookupFunction(call.getCalleeAttr());
  }
  InFlightDiagnostic emitError(Operation *op, const Twine &message) override {
    return generator.emitError(op, message);
  }

private:
  LogicalResult emitOp(Operation &op) {
    // An op writing a buffer with a shadow (itself or an op in its regions)
    // writes the shadow too; a call given a varied value is differentiated
    // even when nothing it returns or is given is active: it may write the
    // value to memory the caller reads (a global), which only its own
    // differentiation sees.
    bool active = activity.isActive(&op) || needsTangentInside(op);
    auto rule = dyn_cast<TangentRuleOpInterface>(&op);
    if (active && !rule && isa_and_nonnull<ADDialect>(op.getDialect())) {
      generator.emitError(&op, kOwnDerivativeMessage);
      return failure();
    }
    if (active && !rule) {
      generator.emitError(&op, "no tangent rule for '" +
                                   op.getName().getStringRef() + "', " +
                                   (activity.isActive(&op)
                                        ? "whose result depends on a "
                                          "differentiated argument"
                                        : "which writes a buffer holding "
                                          "values that depend on a "
                                          "differentiated argument"));
      return failure();
    }
    // An active call's rule differentiates its callee, whose ops are
    // checked then (a callee with a user-written rule is checked here).
    auto call = dyn_cast<func::CallOp>(op);
    func::FuncOp callee = call ? lookupCallee(call) : func::FuncOp();
    bool checkedInCallee =
        active && isa<CallOpInterface>(op) &&
        !(callee && generator.getCustomRules().getJvp(callee));
    if (!checkedInCallee && failed(checkNoDifferentiableStore(op)))
      return failure();
    if (!active)
      return cloneOp(&op);
    if (failed(checkOperandsCarryTangents(op)) ||
        failed(checkShadowsCanBeCreated(op)))
      return failure();
    return rule.emitTangent(*this);
  }

  /// Values that depend on a differentiated argument must not go through
  /// memory, which the sweep does not follow.
  LogicalResult checkNoDifferentiableStore(Operation &op) {
    return generator.getMemoryWriteCheck().check(
        &op, [&](Value value) { return activity.isVaried(value); },
        memoryChecked, [&](Operation *at, const Twine &message) {
          return generator.emitError(at, message);
        });
  }

  TangentGenerator &generator;
  ActivityAnalysis activity;
  OpBuilder builder;
  IRMapping mapping;
  DenseMap<Value, Value> tangents;
  llvm::DenseSet<Operation *> memoryChecked;
};

} // namespace

TangentGenerator::TangentGenerator(ModuleOp module)
    : ownedSymbols(std::make_unique<SymbolTable>(module)),
      symbolTable(*ownedSymbols) {}

TangentGenerator::TangentGenerator(SymbolTable &symbols)
    : symbolTable(symbols) {}

InFlightDiagnostic TangentGenerator::emitError(Operation *op,
                                               const Twine &message) {
  return emitErrorWithCallChain(op, message, requesters);
}

func::FuncOp TangentGenerator::lookupFunction(SymbolRefAttr symbol) {
  return ad::lookupFunction(symbolTable, symbol);
}

FailureOr<func::FuncOp>
TangentGenerator::getOrCreate(func::FuncOp callee, ArrayRef<int64_t> wrt,
                              Operation *requester) {
  auto key = std::make_pair(callee.getOperation(),
                            std::vector<int64_t>(wrt.begin(), wrt.end()));
  auto it = generated.find(key);
  if (it != generated.end())
    return it->second;
  CustomJvpOp rule = customRules.getJvp(callee);
  if (rule) {
    requesters.push_back(requester);
    LogicalResult bits = checkRuleSeesNoFloatBits(
        callee, wrt, [&](Operation *op, const Twine &message) {
          return emitError(op, message);
        });
    requesters.pop_back();
    if (failed(bits))
      return failure();
  }
  if (!rule && callee.isExternal()) {
    emitError(requester, "cannot differentiate this call: '" +
                             callee.getSymName() +
                             "' has no body in this module");
    return failure();
  }
  if (!rule && !callee.getBody().hasOneBlock()) {
    emitError(callee, "cannot differentiate '" + callee.getSymName() +
                          "': it has several blocks (unstructured control "
                          "flow that was not lifted to scf)");
    return failure();
  }
  OpBuilder builder(callee);
  builder.setInsertionPointAfter(callee);
  auto tangent = func::FuncOp::create(builder, callee.getLoc(),
                                      getDerivativeName(callee, "jvp", wrt),
                                      getTangentFunctionType(callee, wrt));
  tangent.setPrivate();
  tangent->setAttr(kGeneratedAttrName, builder.getUnitAttr());
  symbolTable.insert(tangent);
  tangent.addEntryBlock();
  // Registered before its body is emitted: a recursive call finds it here.
  generated[key] = tangent;
  requesters.push_back(requester);
  LogicalResult result =
      rule ? generateFromCustomJvp(callee, wrt, tangent, rule, requester)
           : generate(callee, wrt, tangent);
  requesters.pop_back();
  if (failed(result)) {
    generated.erase(key);
    symbolTable.erase(tangent);
    return failure();
  }
  return tangent;
}

LogicalResult TangentGenerator::generateFromCustomJvp(
    func::FuncOp callee, ArrayRef<int64_t> wrt, func::FuncOp tangent,
    CustomJvpOp rule, Operation *requester) {
  // The rule's tangents are those of the float arguments and results; a
  // buffer would need a shadow, which it does not take.
  auto isBuffer = [](Type type) {
    return isa<MemRefType>(type) && hasTangentType(type);
  };
  if (llvm::any_of(callee.getArgumentTypes(), isBuffer) ||
      llvm::any_of(callee.getResultTypes(), isBuffer)) {
    emitError(requester, "cannot use the ad.custom_jvp of '" +
                             callee.getSymName() +
                             "' in forward mode: it takes or returns a buffer "
                             "of floats, whose shadow the rule cannot take");
    return failure();
  }
  func::FuncOp userTangent = lookupFunction(rule.getTangentAttr());
  Block *body = &tangent.getBody().front();
  OpBuilder builder = OpBuilder::atBlockEnd(body);
  Location loc = rule.getLoc();
  unsigned numArguments = callee.getNumArguments();
  SmallVector<Value> operands(body->getArguments().take_front(numArguments));
  SmallVector<int64_t> differentiated = getTangentPositions(callee, wrt);
  for (auto [position, type] : llvm::enumerate(callee.getArgumentTypes())) {
    if (!isDifferentiableType(type))
      continue;
    const auto *found = llvm::find(differentiated, (int64_t)position);
    operands.push_back(
        found != differentiated.end()
            ? body->getArgument(numArguments + (found - differentiated.begin()))
            : createZerosLike(builder, loc, type, body->getArgument(position)));
  }
  auto call = func::CallOp::create(builder, loc, userTangent, operands);
  func::ReturnOp::create(builder, loc, call.getResults());
  return success();
}

LogicalResult TangentGenerator::generate(func::FuncOp callee,
                                         ArrayRef<int64_t> wrt,
                                         func::FuncOp tangent) {
  Block &original = callee.getBody().front();
  Block *body = &tangent.getBody().front();
  TangentSweep sweep(*this, callee, wrt, body);
  unsigned numArguments = callee.getNumArguments();
  sweep.mapValues(original.getArguments(),
                  body->getArguments().take_front(numArguments));
  SmallVector<int64_t> withTangents = getTangentPositions(callee, wrt);
  for (auto [index, position] : llvm::enumerate(withTangents))
    sweep.setTangent(original.getArgument(position),
                     body->getArgument(numArguments + index));
  // A buffer argument given without a shadow (the caller differentiates
  // nothing it holds) to which the function writes a differentiable value:
  // its shadow would be a fresh one, not shared with the arguments that
  // may alias it.
  for (BlockArgument argument : original.getArguments())
    if (isa<MemRefType>(argument.getType()) && sweep.isActive(argument) &&
        !llvm::is_contained(withTangents, argument.getArgNumber())) {
      emitError(callee, "cannot differentiate '" + callee.getSymName() +
                            "': it writes a value that depends on a "
                            "differentiated argument to its buffer argument " +
                            Twine(argument.getArgNumber()) +
                            ", whose tangent forward mode cannot return");
      return failure();
    }
  if (failed(sweep.emitOps(original)))
    return failure();
  Operation *terminator = original.getTerminator();
  // A returned unranked tensor (or vector) that depends on a tangent would
  // silently get none.
  if (failed(sweep.checkOperandsCarryTangents(*terminator)))
    return failure();
  SmallVector<Value> results;
  for (Value returned : terminator->getOperands())
    results.push_back(sweep.lookup(returned));
  for (Value returned : terminator->getOperands())
    if (hasTangentType(returned.getType()))
      results.push_back(sweep.getTangent(returned));
  func::ReturnOp::create(sweep.getBuilder(), terminator->getLoc(), results);
  return success();
}
