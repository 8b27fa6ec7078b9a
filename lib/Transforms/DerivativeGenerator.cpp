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
// This file creates the functions (getOrCreate, generate, generateRecursive,
// user-written rules); the sweeps are in ForwardSweep.h and ReverseSweep.h
// (what they share in Sweep.h), the call graph and the recursions' tape
// widths in Recursions.cpp, the packing of tapes into records in
// TapePacking.cpp.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/DerivativeGenerator.h"
#include "ad/IR/TapeUtils.h"
#include "ad/Transforms/ActivityAnalysis.h"
#include "ad/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "ad/IR/ADDialect.h"

#include "llvm/ADT/SmallBitVector.h"
#include <numeric>

using namespace mlir;
using namespace mlir::ad;

#include "ReverseSweep.h"

using namespace mlir::ad::sweeps;

DerivativeGenerator::DerivativeGenerator(ModuleOp module)
    : ownedSymbols(std::make_unique<SymbolTable>(module)),
      symbolTable(*ownedSymbols) {}

DerivativeGenerator::DerivativeGenerator(SymbolTable &symbols)
    : symbolTable(symbols) {}

InFlightDiagnostic DerivativeGenerator::emitError(Operation *op,
                                                  const Twine &message) {
  return emitErrorWithCallChain(op, message, requesters);
}

/// Whether `requester` (a call or an ad op) uses the entry points of its
/// callee, as opposed to the recursive versions a call inside a loop or a
/// recursion uses (ForwardSweep::usesSharedTape).
static bool usesEntryPoints(Operation *requester,
                            function_ref<bool(func::FuncOp)> isRecursive) {
  auto function = requester->getParentOfType<func::FuncOp>();
  if (!function)
    return true;
  if (isRecursive(function))
    return false;
  if (!isa<func::CallOp>(requester))
    return true;
  for (Operation *parent = requester->getParentOp(); parent != function;
       parent = parent->getParentOp())
    if (isa<scf::ForOp, scf::WhileOp>(parent))
      return false;
  return true;
}

FailureOr<DerivativeFunctions>
DerivativeGenerator::getOrCreate(func::FuncOp callee, ArrayRef<int64_t> varied,
                                 Operation *requester) {
  FailureOr<DerivativeFunctions> functions =
      getOrCreateWhole(callee, varied, requester);
  // Not from a copy of a level: the levels of a recursion end in the
  // recursion itself, whatever member they call.
  auto caller = requester->getParentOfType<func::FuncOp>();
  if (failed(functions) || !functions->recursiveForward ||
      checkpointLevels == 0 || (caller && isCheckpointedLevel(caller)) ||
      !usesEntryPoints(requester, [&](func::FuncOp function) {
        return inSameRecursion(function, function);
      }))
    return functions;
  return withCheckpointedLevels(callee, varied, *functions, requester);
}

FailureOr<DerivativeFunctions>
DerivativeGenerator::getOrCreateWhole(func::FuncOp callee,
                                      ArrayRef<int64_t> varied,
                                      Operation *requester) {
  auto key = std::make_pair(callee.getOperation(),
                            std::vector<int64_t>(varied.begin(), varied.end()));
  auto it = generated.find(key);
  if (it != generated.end())
    return it->second;
  if (CustomVjpOp rule = customRules.getVjp(callee)) {
    if (failed(checkRuleSeesNoFloatBits(callee, varied, requester)))
      return failure();
    DerivativeFunctions functions = createFromCustomVjp(callee, varied, rule);
    generated[key] = functions;
    return functions;
  }
  if (callee.isExternal()) {
    emitError(requester, "cannot differentiate this call: '" +
                             callee.getSymName() +
                             "' has no body in this module");
    return failure();
  }
  // A recursive callee registers its functions before generating their
  // bodies, so the recursion ends at the cache above.
  requesters.push_back(requester);
  if (!callee.getBody().hasOneBlock()) {
    emitError(callee, "cannot differentiate '" + callee.getSymName() +
                          "': it has several blocks (unstructured control "
                          "flow that was not lifted to scf)");
    requesters.pop_back();
    return failure();
  }
  FailureOr<DerivativeFunctions> functions =
      inSameRecursion(callee, callee) ? generateRecursive(callee, varied)
                                      : generate(callee, varied);
  requesters.pop_back();
  if (succeeded(functions))
    generated[key] = *functions;
  return functions;
}

func::FuncOp mlir::ad::lookupFunction(SymbolTable &symbols,
                                      SymbolRefAttr symbol) {
  if (!symbol || !symbol.getNestedReferences().empty())
    return nullptr;
  return symbols.lookup<func::FuncOp>(symbol.getRootReference());
}

func::FuncOp DerivativeGenerator::lookupFunction(SymbolRefAttr symbol) {
  return ad::lookupFunction(symbolTable, symbol);
}

memref::GlobalOp DerivativeGenerator::createTapeRowsHint(func::FuncOp function,
                                                         Location loc) {
  return ad::createTapeRowsHint(symbolTable, function, loc,
                                (function.getSymName() + "_tape_rows").str());
}

/// Replaces each tensor of `tape` that the pullback (body `pullbackBody`,
/// whose first arguments are the tape) reads only for its sizes, as the
/// shape of a cotangent, by those sizes, built in the forward function at
/// `forwardBuilder`: a caller or a loop then keeps a scalar per size
/// instead of the tensor.
static void passSizesOnly(SmallVectorImpl<Value> &tape, Block *pullbackBody,
                          OpBuilder &forwardBuilder) {
  unsigned numTensors = tape.size();
  llvm::BitVector replaced(numTensors);
  for (unsigned i = 0; i < numTensors; ++i) {
    BlockArgument argument = pullbackBody->getArgument(i);
    if (!isa<RankedTensorType>(argument.getType()) || argument.use_empty() ||
        !llvm::all_of(argument.getUsers(), [](Operation *user) {
          auto dim = dyn_cast<tensor::DimOp>(user);
          return dim && dim.getConstantIndex();
        }))
      continue;
    DenseMap<int64_t, Value> sizes;
    for (Operation *user : llvm::make_early_inc_range(argument.getUsers())) {
      auto dim = cast<tensor::DimOp>(user);
      int64_t position = *dim.getConstantIndex();
      Value &size = sizes[position];
      if (!size) {
        tape.push_back(tensor::DimOp::create(forwardBuilder, dim.getLoc(),
                                             tape[i], position));
        size = pullbackBody->insertArgument(tape.size() - 1,
                                            forwardBuilder.getIndexType(),
                                            dim.getLoc());
      }
      dim.replaceAllUsesWith(size);
      dim.erase();
    }
    replaced.set(i);
  }
  if (replaced.none())
    return;
  SmallVector<Value> kept;
  for (auto [i, value] : llvm::enumerate(tape))
    if (i >= numTensors || !replaced.test(i))
      kept.push_back(value);
  replaced.resize(pullbackBody->getNumArguments());
  pullbackBody->eraseArguments(replaced);
  tape.assign(kept);
}

/// Erases `buffer` when it is a buffer the forward function allocates and
/// only writes (a per-iteration tape the simplified pullback no longer
/// reads), together with the writes.
static void eraseWriteOnlyBuffer(Value buffer) {
  auto alloc = buffer.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return;
  SmallVector<Operation *> writes;
  for (Operation *user : buffer.getUsers()) {
    if (auto store = dyn_cast<memref::StoreOp>(user);
        store && store.getMemRef() == buffer) {
      writes.push_back(user);
      continue;
    }
    auto slice = dyn_cast<memref::SubViewOp>(user);
    if (!slice || !llvm::all_of(slice->getUsers(), [&](Operation *sliceUser) {
          auto write =
              dyn_cast<bufferization::MaterializeInDestinationOp>(sliceUser);
          return write && write.getDest() == slice.getResult();
        }))
      return;
    llvm::append_range(writes, slice->getUsers());
    writes.push_back(slice);
  }
  for (Operation *write : writes)
    write->erase();
  alloc.erase();
}

std::string mlir::ad::getDerivativeName(func::FuncOp callee, StringRef kind,
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
  // Until the function moves to the user's module: a derivative being
  // differentiated (second order) is recognized in diagnostics.
  function->setAttr(kGeneratedAttrName, UnitAttr::get(function.getContext()));
  symbolTable.insert(function);
  function.addEntryBlock();
  return function;
}

LogicalResult mlir::ad::checkRuleSeesNoFloatBits(
    func::FuncOp callee, ArrayRef<int64_t> varied,
    function_ref<InFlightDiagnostic(Operation *, const Twine &)> emitError) {
  SmallVector<int64_t> integers = llvm::filter_to_vector(
      varied, [&](int64_t position) {
        return !isDifferentiableType(callee.getArgumentTypes()[position]);
      });
  Operation *bitcast = findBitsBecomingFloats(callee, integers);
  if (!bitcast)
    return success();
  emitError(bitcast, "a float's bits reach '" + callee.getSymName() +
                         "' through an integer argument here, but its "
                         "user-written rule takes integers as constants");
  return failure();
}

LogicalResult DerivativeGenerator::checkRuleSeesNoFloatBits(
    func::FuncOp callee, ArrayRef<int64_t> varied, Operation *requester) {
  requesters.push_back(requester);
  LogicalResult result = ad::checkRuleSeesNoFloatBits(
      callee, varied, [&](Operation *op, const Twine &message) {
        return emitError(op, message);
      });
  requesters.pop_back();
  return result;
}

DerivativeFunctions
DerivativeGenerator::createFromCustomVjp(func::FuncOp callee,
                                         ArrayRef<int64_t> varied,
                                         CustomVjpOp rule) {
  func::FuncOp forward = lookupFunction(rule.getForwardAttr());
  func::FuncOp userPullback = lookupFunction(rule.getPullbackAttr());
  SmallVector<int64_t> wrt = getDifferentiablePositions(callee, varied);
  // The user's pullback returns a gradient per float argument; the
  // generated one, those of `wrt`.
  SmallVector<Type> gradientTypes;
  SmallVector<unsigned> picked;
  unsigned index = 0;
  for (auto [position, type] : llvm::enumerate(callee.getArgumentTypes())) {
    if (!isDifferentiableType(type))
      continue;
    if (llvm::is_contained(wrt, (int64_t)position)) {
      gradientTypes.push_back(type);
      picked.push_back(index);
    }
    ++index;
  }
  OpBuilder builder(callee);
  builder.setInsertionPointAfter(callee);
  Location loc = rule.getLoc();
  auto pullback = func::FuncOp::create(
      builder, loc, getDerivativeName(callee, "pb", varied),
      builder.getFunctionType(userPullback.getArgumentTypes(), gradientTypes));
  pullback.setPrivate();
  pullback->setAttr(kGeneratedAttrName, builder.getUnitAttr());
  symbolTable.insert(pullback);
  Block *body = pullback.addEntryBlock();
  builder.setInsertionPointToStart(body);
  auto call = func::CallOp::create(builder, loc, userPullback,
                                   body->getArguments());
  SmallVector<Value> gradients;
  for (unsigned k : picked)
    gradients.push_back(call.getResult(k));
  func::ReturnOp::create(builder, loc, gradients);

  DerivativeFunctions functions;
  functions.forward = forward;
  functions.pullback = pullback;
  functions.wrt = wrt;
  functions.numTapeValues =
      forward.getNumResults() - callee.getNumResults();
  return functions;
}

FailureOr<DerivativeFunctions>
DerivativeGenerator::generate(func::FuncOp callee,
                              ArrayRef<int64_t> varied) {
  ActivityAnalysis activity(callee, varied);
  SmallVector<int64_t> wrt = getDifferentiablePositions(callee, varied);
  Block &original = callee.getBody().front();
  FunctionType type = callee.getFunctionType();

  ArrayRef<Type> cotangentTypes =
      getPullbackTypeOf(callee, wrt).getCotangentTypes();

  func::FuncOp forwardFunction =
      createCompanion(symbolTable, callee, callee,
                      getDerivativeName(callee, "fwd", varied), type.getInputs());
  func::FuncOp pullbackFunction =
      createCompanion(symbolTable, callee, forwardFunction,
                      getDerivativeName(callee, "pb", varied), cotangentTypes);
  auto discard = [&]() {
    symbolTable.erase(forwardFunction);
    symbolTable.erase(pullbackFunction);
    return failure();
  };

  // Forward sweep: every op in program order.
  ForwardSweep forward(*this, activity, callee,
                       &forwardFunction.getBody().front());
  forward.mapping.map(original.getArguments(),
                      forwardFunction.getArguments());
  if (failed(forward.emitOps(original, /*withTerminator=*/false)))
    return discard();

  // Reverse sweep: seed the returned values, then every active op backwards.
  Block *pullbackBody = &pullbackFunction.getBody().front();
  ReverseSweep reverse(*this, activity, callee, forward, pullbackBody);
  Operation *terminator = original.getTerminator();
  FailureOr<SmallVector<Value>> gradients = reverse.reverseFunction(
      original, pullbackBody->getArguments(), wrt);
  if (failed(gradients))
    return discard();
  forward.finalizeTapes();
  SmallVector<Type> gradientTypes(ValueRange(*gradients).getTypes());
  // Simplify the adjoint as a whole (sparse cotangents, zero accumulators,
  // unread operands), then drop the tape values it no longer reads.
  simplifyAdjoints(pullbackFunction);
  {
    llvm::BitVector unread(pullbackBody->getNumArguments());
    SmallVector<Value> kept, dropped;
    for (auto [i, value] : llvm::enumerate(reverse.tape)) {
      if (pullbackBody->getArgument(i).use_empty()) {
        unread.set(i);
        dropped.push_back(value);
      } else {
        kept.push_back(value);
      }
    }
    pullbackBody->eraseArguments(unread);
    reverse.tape = std::move(kept);
    llvm::DenseSet<Value> stillRead(reverse.tape.begin(), reverse.tape.end());
    for (Value value : dropped)
      if (!stillRead.contains(value))
        eraseWriteOnlyBuffer(value);
  }
  passSizesOnly(reverse.tape, pullbackBody, forward.getBuilder());
  // The branch tape leaves the forward function as a tensor of static
  // shape, which a caller can keep per loop iteration, in a row, or in its
  // record, like any other; the pullback reads it with tensor.extract.
  SmallVector<std::pair<unsigned, unsigned>> ownRecords;
  if (Value buffer = forward.branchTape.getBuffer()) {
    auto position = llvm::find(reverse.tape, buffer);
    if (position != reverse.tape.end()) {
      unsigned index = position - reverse.tape.begin();
      reverse.tape[index] = forward.branchTape.passAsTensor(
          pullbackBody->getArgument(index), forward.getBuilder());
      ownRecords.push_back({index, forward.branchTape.getWidth()});
    }
  }
  pullbackFunction.setType(FunctionType::get(
      callee.getContext(), pullbackBody->getArgumentTypes(), gradientTypes));

  // The forward function returns the original results, then the tape.
  SmallVector<Value> forwardResults;
  for (Value returned : terminator->getOperands())
    forwardResults.push_back(forward.lookup(returned));
  llvm::append_range(forwardResults, reverse.tape);
  OpBuilder &forwardBuilder = forward.getBuilder();
  forward.recordTapeRows(reverse.tape);
  func::ReturnOp::create(forwardBuilder, terminator->getLoc(), forwardResults);
  forwardFunction.setType(FunctionType::get(
      callee.getContext(), type.getInputs(),
      ValueRange(forwardResults).getTypes()));
  forward.finalizeEscapes();
  // The pullback is simplified already (its constants uniqued): the slots
  // stay as they are.
  forward.rows.mergeSlots({forwardFunction, pullbackFunction},
                          /*merge=*/false);

  // Values of different branches carried out in one result (see carryOut)
  // make tape entries that were distinct placeholders the same value: the
  // pullback takes it once.
  unsigned numTapeValues = reverse.tape.size();
  {
    auto returnOp = cast<func::ReturnOp>(
        forwardFunction.getBody().front().getTerminator());
    unsigned numResults = terminator->getNumOperands();
    DenseMap<Value, unsigned> first;
    llvm::BitVector duplicate(pullbackBody->getNumArguments());
    SmallVector<Value> kept(returnOp.getOperands().take_front(numResults));
    SmallVector<std::pair<unsigned, unsigned>> keptRecords;
    for (unsigned i = 0; i < numTapeValues; ++i) {
      Value value = returnOp.getOperand(numResults + i);
      auto [it, inserted] = first.try_emplace(value, i);
      if (inserted) {
        for (auto [position, slots] : ownRecords)
          if (position == i)
            keptRecords.push_back({kept.size() - numResults, slots});
        kept.push_back(value);
        continue;
      }
      pullbackBody->getArgument(i).replaceAllUsesWith(
          pullbackBody->getArgument(it->second));
      duplicate.set(i);
    }
    if (duplicate.any()) {
      pullbackBody->eraseArguments(duplicate);
      pullbackFunction.setType(FunctionType::get(
          callee.getContext(), pullbackBody->getArgumentTypes(),
          pullbackFunction.getResultTypes()));
      returnOp->setOperands(kept);
      forwardFunction.setType(FunctionType::get(
          callee.getContext(), type.getInputs(),
          ValueRange(kept).getTypes()));
      numTapeValues = kept.size() - numResults;
      ownRecords = std::move(keptRecords);
    }
  }

  DerivativeFunctions functions;
  functions.forward = forwardFunction;
  functions.pullback = pullbackFunction;
  functions.wrt.assign(wrt.begin(), wrt.end());
  functions.numTapeValues =
      packTape(forwardFunction, pullbackFunction, terminator->getNumOperands(),
               numTapeValues, ownRecords);
  return functions;
}

FailureOr<DerivativeFunctions>
DerivativeGenerator::generateRecursive(func::FuncOp callee,
                                       ArrayRef<int64_t> varied) {
  ActivityAnalysis activity(callee, varied);
  SmallVector<int64_t> wrt = getDifferentiablePositions(callee, varied);
  Block &original = callee.getBody().front();
  FunctionType type = callee.getFunctionType();
  MLIRContext *context = callee.getContext();
  Location loc = callee.getLoc();
  OpBuilder types(context);
  Type tapeType = MemRefType::get({ShapedType::kDynamic}, types.getF64Type());
  Type indexType = types.getIndexType();
  PullbackType closureType = getPullbackTypeOf(callee, wrt);
  ArrayRef<Type> cotangentTypes = closureType.getCotangentTypes();
  ArrayRef<Type> gradientTypes = closureType.getGradientTypes();
  unsigned numArgs = type.getNumInputs();
  unsigned numResults = type.getNumResults();

  // All four functions exist, with their final types, before any body is
  // generated: calls inside the recursion find them in the cache.
  SmallVector<Type> recursiveInputs(type.getInputs());
  recursiveInputs.append({tapeType, indexType});
  // A recursion that can be run again takes the tape but returns only the
  // next row (see DerivativeFunctions::restartable).
  bool restartable = isRecomputableRecursion(callee);
  SmallVector<Type> recursiveResults(type.getResults());
  if (!restartable)
    recursiveResults.push_back(tapeType);
  recursiveResults.push_back(indexType);
  // Tensor gradients are threaded through the recursive pullback (see
  // DerivativeFunctions::threaded); the entry points pass the dynamically
  // shaped arguments, which size their zeros.
  // Invariant tensor arguments are passed to the recursive pullback (see
  // DerivativeFunctions::invariants).
  SmallVector<unsigned> threaded, invariants = invariantArguments(callee);
  SmallVector<Type> accumulatorTypes;
  llvm::SmallBitVector isPassed(numArgs);
  for (unsigned position : invariants)
    isPassed.set(position);
  for (auto [index, gradientType] : llvm::enumerate(gradientTypes))
    if (auto tensorType = dyn_cast<RankedTensorType>(gradientType)) {
      threaded.push_back(index);
      accumulatorTypes.push_back(tensorType);
      if (!tensorType.hasStaticShape())
        isPassed.set(wrt[index]);
    }
  SmallVector<unsigned> passed = llvm::to_vector(isPassed.set_bits());
  SmallVector<Type> passedTypes, invariantTypes;
  for (unsigned position : passed)
    passedTypes.push_back(type.getInput(position));
  for (unsigned position : invariants)
    invariantTypes.push_back(type.getInput(position));
  SmallVector<Type> pullbackInputs = {tapeType, indexType};
  llvm::append_range(pullbackInputs, invariantTypes);
  llvm::append_range(pullbackInputs, accumulatorTypes);
  llvm::append_range(pullbackInputs, cotangentTypes);
  // The entry points pass the tape and the first invocation's row (the
  // last row).
  SmallVector<Type> entryResults(type.getResults());
  entryResults.append({tapeType, indexType});
  llvm::append_range(entryResults, passedTypes);
  SmallVector<Type> entryPullbackInputs = {tapeType, indexType};
  llvm::append_range(entryPullbackInputs, passedTypes);
  llvm::append_range(entryPullbackInputs, cotangentTypes);

  func::FuncOp forwardFunction = createCompanion(
      symbolTable, callee, callee, getDerivativeName(callee, "fwd", varied),
      type.getInputs());
  func::FuncOp pullbackFunction = createCompanion(
      symbolTable, callee, forwardFunction, getDerivativeName(callee, "pb", varied),
      entryPullbackInputs);
  func::FuncOp recursiveForward = createCompanion(
      symbolTable, callee, pullbackFunction,
      getDerivativeName(callee, "fwdrec", varied), recursiveInputs);
  func::FuncOp recursivePullback = createCompanion(
      symbolTable, callee, recursiveForward,
      getDerivativeName(callee, "pbrec", varied), pullbackInputs);
  forwardFunction.setType(
      FunctionType::get(context, type.getInputs(), entryResults));
  pullbackFunction.setType(
      FunctionType::get(context, entryPullbackInputs, gradientTypes));
  recursiveForward.setType(
      FunctionType::get(context, recursiveInputs, recursiveResults));
  recursivePullback.setType(
      FunctionType::get(context, pullbackInputs, gradientTypes));

  DerivativeFunctions functions;
  functions.forward = forwardFunction;
  functions.pullback = pullbackFunction;
  functions.recursiveForward = recursiveForward;
  functions.recursivePullback = recursivePullback;
  functions.wrt.assign(wrt.begin(), wrt.end());
  functions.numTapeValues = 2 + passed.size();
  functions.restartable = restartable;
  functions.threaded = threaded;
  functions.invariants = invariants;
  functions.passed = passed;
  auto key = std::make_pair(callee.getOperation(),
                            std::vector<int64_t>(varied.begin(), varied.end()));
  generated[key] = functions;
  auto discard = [&]() {
    generated.erase(key);
    for (func::FuncOp function : {forwardFunction, pullbackFunction,
                                  recursiveForward, recursivePullback})
      symbolTable.erase(function);
    return failure();
  };

  // The recursive forward: this invocation's callees (and loops) take rows
  // from `firstRow` on; the invocation then takes the next free row and
  // stores its values there at its end (rows in post-order: the pullback,
  // which reverses the last callee first, reads them at decreasing
  // addresses instead of jumping between subtrees).
  Block *forwardEntry = &recursiveForward.getBody().front();
  ForwardSweep forward(*this, activity, callee, forwardEntry);
  forward.beginRecursion(callee);
  forward.mapping.map(original.getArguments(),
                      forwardEntry->getArguments().take_front(numArgs));
  GrowableTape &tape = forward.rows.tape(callee);
  tape.restartable = restartable;
  Value firstRow = forwardEntry->getArgument(numArgs + 1);
  OpBuilder &forwardBuilder = forward.getBuilder();
  tape.buffer = forwardEntry->getArgument(numArgs);
  tape.nextRow = firstRow;
  forward.beginRows(forwardEntry, callee, firstRow, tape.buffer);
  if (failed(forward.emitOps(original, /*withTerminator=*/false)))
    return discard();
  Value row = tape.nextRow;
  if (!restartable)
    tape.buffer = growTapeIfFull(forwardBuilder, loc, tape.buffer, row,
                                 tape.forwardWidth->getResult(0));
  if (!forward.rows.storeRowsAtEnd(forwardEntry, row, tape.buffer)) {
    emitError(callee, "internal error: a value of '" + callee.getSymName() +
                          "' was stored in its recursion's tape before the "
                          "invocation's row was known");
    return discard();
  }
  tape.nextRow = arith::AddIOp::create(
      forwardBuilder, loc, row,
      arith::ConstantIndexOp::create(forwardBuilder, loc, 1));

  // The recursive pullback reads row `row` of the final tape.
  Block *pullbackEntry = &recursivePullback.getBody().front();
  ReverseSweep reverse(*this, activity, callee, forward, pullbackEntry);
  reverse.recursionTape = pullbackEntry->getArgument(0);
  tape.pullbackBuffer = pullbackEntry->getArgument(0);
  reverse.beginRows(&original, callee, pullbackEntry->getArgument(1));
  Operation *terminator = original.getTerminator();
  unsigned numInvariants = invariants.size(), numThreaded = threaded.size();
  for (auto [index, position] : llvm::enumerate(invariants))
    reverse.passArgument(original.getArgument(position),
                         pullbackEntry->getArgument(2 + index));
  if (failed(reverse.reverseFunction(
          original,
          pullbackEntry->getArguments().drop_front(2 + numInvariants +
                                                   numThreaded),
          wrt, threaded,
          pullbackEntry->getArguments().slice(2 + numInvariants,
                                              numThreaded))))
    return discard();
  if (!reverse.tape.empty()) {
    emitError(callee, "cannot differentiate '" + callee.getSymName() +
                          "' yet: its adjoint needs values that do not fit "
                          "in the rows of a recursive function's tape");
    return discard();
  }
  forward.finalizeTapes();

  SmallVector<Value> forwardResults;
  for (Value returned : terminator->getOperands())
    forwardResults.push_back(forward.lookup(returned));
  if (!restartable)
    forwardResults.push_back(tape.buffer);
  forwardResults.push_back(tape.nextRow);
  func::ReturnOp::create(forwardBuilder, terminator->getLoc(), forwardResults);
  forward.finalizeEscapes();
  forward.rows.mergeSlots({recursiveForward, recursivePullback});
  {
    GrowableTape &merged = forward.rows.tape(callee);
    addRecursionWidth(callee, merged.forwardWidth, merged.width);
    addRecursionWidth(callee, merged.pullbackWidth, merged.width);
  }

  // Entry points for callers outside the recursion: a fresh tape; the
  // pullback starts at the first invocation's row.
  {
    OpBuilder b = OpBuilder::atBlockEnd(&forwardFunction.getBody().front());
    auto width = arith::ConstantIndexOp::create(b, loc, 0);
    addRecursionWidth(callee, width, 0);
    memref::GlobalOp rowsHint = createTapeRowsHint(forwardFunction, loc);
    SmallVector<Value> operands(forwardFunction.getArguments());
    operands.push_back(createGrowableTape(b, loc, width, rowsHint));
    operands.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    auto call = func::CallOp::create(b, loc, recursiveForward, operands);
    Value buffer, nextRow;
    if (restartable) {
      nextRow = call.getResult(numResults);
      buffer = rerunIfOverflowed(b, loc, operands[numArgs], nextRow, width,
                                 [&](OpBuilder &inner, Value larger) {
                                   operands[numArgs] = larger;
                                   func::CallOp::create(inner, loc,
                                                        recursiveForward,
                                                        operands);
                                 });
    } else {
      buffer = call.getResult(numResults);
      nextRow = call.getResult(numResults + 1);
    }
    recordTapeRows(b, loc, buffer, width, rowsHint);
    SmallVector<Value> results(call.getResults().take_front(numResults));
    results.push_back(buffer);
    results.push_back(lastRowFilled(b, loc, nextRow));
    for (unsigned position : passed)
      results.push_back(forwardFunction.getArgument(position));
    func::ReturnOp::create(b, loc, results);
  }
  {
    // The accumulators start at zero.
    Block *entry = &pullbackFunction.getBody().front();
    OpBuilder b = OpBuilder::atBlockEnd(entry);
    auto passedArgument = [&](unsigned position) {
      return entry->getArgument(2 + llvm::find(passed, position) -
                                passed.begin());
    };
    SmallVector<Value> operands(entry->getArguments().take_front(2));
    for (unsigned position : invariants)
      operands.push_back(passedArgument(position));
    for (unsigned index : threaded) {
      Type accumulatorType = gradientTypes[index];
      Value like = cast<RankedTensorType>(accumulatorType).hasStaticShape()
                       ? Value()
                       : passedArgument(wrt[index]);
      operands.push_back(createZerosLike(b, loc, accumulatorType, like));
    }
    llvm::append_range(operands,
                       entry->getArguments().drop_front(2 + passed.size()));
    auto call = func::CallOp::create(b, loc, recursivePullback, operands);
    func::ReturnOp::create(b, loc, call.getResults());
  }
  return functions;
}
