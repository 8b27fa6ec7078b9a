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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
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

/// A forward loop body whose values may be stored per iteration.
struct ForwardLoopScope {
  /// Position of the current iteration among all iterations of the loop nest
  /// (defined at the start of the body).
  Value linearIndex;
  /// Number of iterations of the whole nest, available before `entryOp`.
  Value capacity;
  /// The op of the forward entry block that contains the loop.
  Operation *entryOp = nullptr;
};

/// The forward sweep over one function.
class ForwardSweep : public Sweep<ForwardEmitter> {
public:
  ForwardSweep(DerivativeGenerator &generator,
               const ActivityAnalysis &activity, Block *entry)
      : Sweep(generator, activity, entry), entry(entry) {}

  Value lookup(Value original) override { return mapping.lookup(original); }
  LogicalResult cloneOp(Operation *original) override {
    builder.clone(*original, mapping);
    return success();
  }
  void mapResults(Operation *original, ValueRange forwardValues) override {
    mapping.map(original->getResults(), forwardValues);
  }
  void mapValues(ValueRange originals, ValueRange forwardValues) override {
    mapping.map(originals, forwardValues);
  }
  void setResiduals(Operation *original, ValueRange forwardValues) override {
    residuals[original].assign(forwardValues.begin(), forwardValues.end());
  }

  LogicalResult emitOps(Block &original, bool withTerminator) override {
    originalOf[builder.getInsertionBlock()] = &original;
    for (Operation &op : original) {
      if (&op == original.getTerminator() && !withTerminator)
        break;
      if (failed(emitOp(op)))
        return failure();
    }
    return success();
  }

  void mapEscape(Value inner, Value outer) override { escapes[inner] = outer; }

  FailureOr<OpBuilder>
  getLoopEntryBuilder(Operation *op, SmallVectorImpl<Value> &values) override {
    Operation *entryOp = entryOpAt(builder.getInsertionBlock());
    OpBuilder entryBuilder = builder;
    if (entryOp)
      entryBuilder.setInsertionPoint(entryOp);
    for (Value &value : values) {
      if (value.getParentBlock() == entry)
        continue;
      Operation *def = value.getDefiningOp();
      if (def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
          def->hasTrait<OpTrait::ConstantLike>()) {
        value = entryBuilder.clone(*def)->getResult(
            cast<OpResult>(value).getResultNumber());
        continue;
      }
      generator.emitError(op, "cannot differentiate this loop yet: its "
                              "bounds change inside an enclosing loop or "
                              "branch");
      return failure();
    }
    return entryBuilder;
  }

  void beginLoop(Block *forwardBody, Value iteration,
                 Value tripCount) override {
    ForwardLoopScope scope;
    scope.entryOp = entryOpAt(forwardBody);
    Location loc = iteration.getLoc();
    OpBuilder entryBuilder(scope.entryOp);
    const ForwardLoopScope *parent = enclosingScope(forwardBody);
    if (parent) {
      scope.capacity =
          arith::MulIOp::create(entryBuilder, loc, parent->capacity, tripCount);
      Value scaled =
          arith::MulIOp::create(builder, loc, parent->linearIndex, tripCount);
      scope.linearIndex = arith::AddIOp::create(builder, loc, scaled, iteration);
    } else {
      scope.capacity = tripCount;
      scope.linearIndex = iteration;
    }
    loopScopes[forwardBody] = scope;
  }

  /// The loop scope whose body is `block`, or null outside loops.
  const ForwardLoopScope *scopeOf(Block *block) const {
    auto it = loopScopes.find(block);
    return it == loopScopes.end() ? nullptr : &it->second;
  }

  /// Where `value` (a forward value) can be read from outside the branches
  /// that define it.
  Value escape(Value value) const {
    while (Value outer = escapes.lookup(value))
      value = outer;
    return value;
  }

  /// A buffer of `scope.capacity` elements, filled with `value` at each
  /// iteration of the loop nest (created once per value).
  Value storePerIteration(Value value, const ForwardLoopScope &scope) {
    if (Value buffer = perIterationBuffers.lookup(value))
      return buffer;
    Location loc = value.getLoc();
    OpBuilder entryBuilder(scope.entryOp);
    auto type = MemRefType::get({ShapedType::kDynamic}, value.getType());
    Value buffer =
        memref::AllocOp::create(entryBuilder, loc, type, scope.capacity);
    // Store once both the value and the iteration's index exist.
    OpBuilder storeBuilder(value.getContext());
    Operation *def = value.getDefiningOp();
    Operation *indexDef = scope.linearIndex.getDefiningOp();
    if (!def || (indexDef && indexDef->getBlock() == def->getBlock() &&
                 def->isBeforeInBlock(indexDef)))
      storeBuilder.setInsertionPointAfterValue(scope.linearIndex);
    else
      storeBuilder.setInsertionPointAfter(def);
    memref::StoreOp::create(storeBuilder, loc, value, buffer,
                            scope.linearIndex);
    perIterationBuffers[value] = buffer;
    return buffer;
  }

  Block *getEntry() const { return entry; }
  /// The original block whose ops were emitted into forward block `block`.
  Block *originalBlockOf(Block *block) const { return originalOf.lookup(block); }

  IRMapping mapping;
  DenseMap<Operation *, SmallVector<Value>> residuals;

private:
  LogicalResult emitOp(Operation &op) {
    if (!activity.isActive(&op))
      return cloneOp(&op);
    auto rule = dyn_cast<ReverseRuleOpInterface>(&op);
    if (!rule) {
      generator.emitError(&op, "no derivative rule for '" +
                                   op.getName().getStringRef() +
                                   "', whose result depends on a "
                                   "differentiated argument");
      return failure();
    }
    return rule.emitForward(*this);
  }

  /// The op of the entry block containing `block`, or null for the entry.
  Operation *entryOpAt(Block *block) const {
    if (block == entry)
      return nullptr;
    return entry->findAncestorOpInBlock(*block->getParentOp());
  }

  /// The nearest loop scope strictly enclosing `block`.
  const ForwardLoopScope *enclosingScope(Block *block) const {
    for (Operation *op = block->getParentOp(); op && op->getBlock() != entry;
         op = op->getParentOp())
      if (const ForwardLoopScope *scope = scopeOf(op->getBlock()))
        return scope;
    return nullptr;
  }

  Block *entry;
  DenseMap<Block *, Block *> originalOf;
  DenseMap<Value, Value> escapes;
  DenseMap<Block *, ForwardLoopScope> loopScopes;
  DenseMap<Value, Value> perIterationBuffers;
};

/// One iteration of a reverse loop being emitted.
struct ReverseLoopScope {
  Block *originalBody = nullptr;
  Value linearIndex;
  /// Per-iteration values already loaded in this iteration.
  DenseMap<Value, Value> loaded;
  /// Primal values rebuilt for this iteration (induction variables).
  SmallVector<Value> mappedPrimals;
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
    if (Value mapped = primalOverrides.lookup(original))
      return mapped;
    return materialize(forward.lookup(original));
  }
  SmallVector<Value> getResiduals(Operation *original) override {
    SmallVector<Value> values;
    for (Value residual : forward.residuals.lookup(original))
      values.push_back(materialize(residual));
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
  Value lookupCotangent(Value original) override {
    return cotangents.lookup(original);
  }
  void setCotangent(Value original, Value cotangent) override {
    cotangents[original] = cotangent;
  }

  LogicalResult emitReverseOps(Block &original) override {
    for (Operation &op : llvm::reverse(original.without_terminator())) {
      if (!activity.isActive(&op) || !hasCotangent(&op))
        continue;
      currentOp = &op;
      if (failed(cast<ReverseRuleOpInterface>(op).emitReverse(*this)) ||
          materializeFailed)
        return failure();
    }
    return success();
  }

  void mapPrimal(Value original, Value pullbackValue) override {
    primalOverrides[original] = pullbackValue;
    if (!loops.empty())
      loops.back().mappedPrimals.push_back(original);
  }

  void beginLoop(Block *originalBody, Value iteration,
                 Value tripCount) override {
    Value linear = iteration;
    if (!loops.empty()) {
      Location loc = iteration.getLoc();
      Value scaled =
          arith::MulIOp::create(builder, loc, loops.back().linearIndex,
                                tripCount);
      linear = arith::AddIOp::create(builder, loc, scaled, iteration);
    }
    ReverseLoopScope scope;
    scope.originalBody = originalBody;
    scope.linearIndex = linear;
    loops.push_back(std::move(scope));
  }

  void endLoop(Block *originalBody) override {
    for (Value original : loops.back().mappedPrimals)
      primalOverrides.erase(original);
    loops.pop_back();
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
  /// Makes forward value `value` available at the builder's position:
  /// rebuilds constants, tapes values of the entry block (once), loads
  /// values of loop bodies from their per-iteration buffers.
  Value materialize(Value value) {
    Operation *def = value.getDefiningOp();
    if (def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
        def->hasTrait<OpTrait::ConstantLike>())
      return rebuildConstant(value);
    value = forward.escape(value);
    Block *home = value.getParentBlock();
    if (home == forward.getEntry())
      return tapeEntryValue(value);
    const ForwardLoopScope *scope = forward.scopeOf(home);
    if (!scope || !BaseMemRefType::isValidElementType(value.getType()))
      return failMaterialization(value);
    Block *originalHome = forward.originalBlockOf(home);
    for (ReverseLoopScope &loop : llvm::reverse(loops)) {
      if (loop.originalBody != originalHome)
        continue;
      if (Value loaded = loop.loaded.lookup(value))
        return loaded;
      Value buffer = tapeEntryValue(forward.storePerIteration(value, *scope));
      OpBuilder loadBuilder(value.getContext());
      loadBuilder.setInsertionPointAfterValue(loop.linearIndex);
      Value loaded = memref::LoadOp::create(loadBuilder, value.getLoc(),
                                            buffer, loop.linearIndex);
      loop.loaded[value] = loaded;
      return loaded;
    }
    return failMaterialization(value);
  }

  Value rebuildConstant(Value value) {
    if (Value available = availableInPullback.lookup(value))
      return available;
    OpBuilder prologue = OpBuilder::atBlockBegin(body);
    Operation *copy = prologue.clone(*value.getDefiningOp());
    Value result = copy->getResult(cast<OpResult>(value).getResultNumber());
    availableInPullback[value] = result;
    return result;
  }

  Value tapeEntryValue(Value value) {
    if (Value available = availableInPullback.lookup(value))
      return available;
    Value result =
        body->insertArgument(tape.size(), value.getType(), value.getLoc());
    tape.push_back(value);
    availableInPullback[value] = result;
    return result;
  }

  /// Reports a value the adjoint needs but cannot be kept yet, and returns a
  /// placeholder so that the rule can finish.
  Value failMaterialization(Value value) {
    if (!materializeFailed)
      generator.emitError(currentOp, "cannot keep a value of type ")
          << value.getType()
          << " for the adjoint of this op yet (only scalars can be stored "
             "per loop iteration)";
    materializeFailed = true;
    OpBuilder prologue = OpBuilder::atBlockBegin(body);
    return ub::PoisonOp::create(prologue, value.getLoc(), value.getType());
  }

  ForwardSweep &forward;
  Block *body;
  DenseMap<Value, Value> availableInPullback;
  DenseMap<Value, Value> cotangents;
  DenseMap<Value, Value> primalOverrides;
  SmallVector<ReverseLoopScope> loops;
  Operation *currentOp = nullptr;
  bool materializeFailed = false;
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
  if (failed(forward.emitOps(original, /*withTerminator=*/false)))
    return discard();

  // Reverse sweep: seed the returned values, then every active op backwards.
  Block *pullbackBody = &pullbackFunction.getBody().front();
  ReverseSweep reverse(*this, activity, forward, pullbackBody);
  Operation *terminator = original.getTerminator();
  unsigned cotangentIndex = 0;
  for (Value returned : terminator->getOperands())
    if (isDifferentiableType(returned.getType()))
      reverse.addCotangent(returned,
                           pullbackBody->getArgument(cotangentIndex++));
  if (failed(reverse.emitReverseOps(original)))
    return discard();

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
