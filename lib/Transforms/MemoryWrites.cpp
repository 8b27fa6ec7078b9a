//===- MemoryWrites.cpp - values that must not go through memory -*- C++ -*-=//
//
// A pre-order walk over the ops of a function (and, through calls, of the
// functions it calls with varied arguments) looking for an op that may
// write a varied value of differentiable type to memory: one that declares
// such a write, one that declares no memory effects at all, or a call of a
// function without a body.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/MemoryWrites.h"
#include "ad/IR/ADDialect.h"
#include "ad/IR/ADInterfaces.h"
#include "ad/Transforms/ActivityAnalysis.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::ad;

/// Whether `op` reads, as an operand or from inside its regions, a varied
/// value. Of any type: a buffer or vector holding floats, or an integer
/// holding a float's bits (arith.bitcast), carries the derivative as well.
static bool readsVaried(Operation *op, MemoryWriteCheck::VariedFn isVaried) {
  auto varied = [&](Value value) { return isVaried(value); };
  if (llvm::any_of(op->getOperands(), varied))
    return true;
  if (op->getNumRegions() == 0)
    return false;
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  return llvm::any_of(captured, varied);
}

/// The callee of `op` (a call, or an ad op requesting a derivative) and the
/// operands it passes as the callee's arguments; a null callee when `op`
/// calls nothing or calls indirectly.
static std::pair<SymbolRefAttr, OperandRange> calleeOf(Operation *op) {
  if (auto call = dyn_cast<CallOpInterface>(op))
    return {dyn_cast<SymbolRefAttr>(call.getCallableForCallee()),
            call.getArgOperands()};
  if (isa_and_nonnull<ADDialect>(op->getDialect()))
    if (auto callee = op->getAttrOfType<FlatSymbolRefAttr>("callee"))
      return {callee, op->getOperands()};
  return {SymbolRefAttr(), op->getOperands().take_front(0)};
}

/// Whether `op` calls something (directly, indirectly, or through an ad op).
static bool isCallLike(Operation *op) {
  return isa<CallOpInterface>(op) || calleeOf(op).first;
}

bool MemoryWriteCheck::writesVaried(Operation *op, VariedFn isVaried) {
  // Forward mode follows what an op with a rule writes to buffers: a
  // buffer of floats has a shadow; reads from any varied buffer are varied,
  // so a float's bits read back from a buffer of integers meet a bitcast,
  // which has no rule.
  if (followsMemory && isa<TangentRuleOpInterface>(op) &&
      !getWrittenBuffers(op).empty())
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects) {
    // Nested ops speak for a region op with recursive effects; an op that
    // declares nothing may do anything.
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
        isa<FunctionOpInterface>(op) ||
        isa_and_nonnull<ADDialect>(op->getDialect()))
      return false;
    return readsVaried(op, isVaried);
  }
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  bool writesMemory = llvm::any_of(instances, [](auto &instance) {
    return isa<MemoryEffects::Write>(instance.getEffect()) &&
           (instance.getValue() || instance.getSymbolRef());
  });
  return writesMemory && readsVaried(op, isVaried);
}

Operation *MemoryWriteCheck::findWrite(Operation *op, VariedFn isVaried,
                                       llvm::DenseSet<Operation *> &skip,
                                       SmallVectorImpl<Operation *> &via) {
  Operation *found = nullptr;
  op->walk<WalkOrder::PreOrder>([&](Operation *nested) {
    if (!skip.insert(nested).second)
      return WalkResult::skip();
    if (!isCallLike(nested)) {
      if (!writesVaried(nested, isVaried))
        return WalkResult::advance();
      found = nested;
      return WalkResult::interrupt();
    }
    auto [symbol, arguments] = calleeOf(nested);
    SmallVector<int64_t> positions;
    for (auto [position, argument] : llvm::enumerate(arguments))
      if (isVaried(argument))
        positions.push_back(position);
    if (positions.empty())
      return WalkResult::advance();
    SymbolRefAttr calleeSymbol = symbol;
    auto lookupCallee = [&] {
      return calleeSymbol ? dyn_cast_or_null<func::FuncOp>(
                                symbolTables->lookupNearestSymbolFrom(
                                    nested, calleeSymbol))
                          : func::FuncOp();
    };
    auto callee = lookupCallee();
    if (isa_and_nonnull<FlatSymbolRefAttr>(symbol) && !callee) {
      // A function created after the symbol tables were cached (the
      // checkpointed levels of a recursion) is found once they are built
      // again.
      symbolTables = std::make_unique<SymbolTableCollection>();
      callee = lookupCallee();
    }
    // A user-written rule replaces the derivative of the callee's results,
    // not of what it writes to memory its caller may read: that is still
    // an error (a declaration is trusted to write nothing).
    if (callee && (followsMemory ? bool(customRules.getJvp(callee))
                                 : bool(customRules.getVjp(callee)))) {
      if (callee.isExternal())
        return WalkResult::advance();
      SmallVector<Operation *> inner;
      if (Operation *writer = findEscapingWrite(callee, positions, inner)) {
        via.push_back(nested);
        via.append(inner.begin(), inner.end());
        found = writer;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    }
    // A function without a body here may do anything with the value.
    if (!callee || callee.isExternal()) {
      found = nested;
      return WalkResult::interrupt();
    }
    SmallVector<Operation *> inner;
    if (Operation *writer = findWriteInCallee(callee, positions, inner)) {
      via.push_back(nested);
      via.append(inner.begin(), inner.end());
      found = writer;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

Operation *
MemoryWriteCheck::findEscapingWrite(func::FuncOp callee,
                                    ArrayRef<int64_t> positions,
                                    SmallVectorImpl<Operation *> &via) {
  auto key = std::make_pair(
      callee.getOperation(),
      std::vector<int64_t>(positions.begin(), positions.end()));
  auto [it, inserted] = escaping.try_emplace(key);
  if (!inserted) {
    via.append(it->second.via.begin(), it->second.via.end());
    return it->second.writer;
  }
  MemoryWriteCheck *strict = this;
  if (followsMemory) {
    if (!strictCheck)
      strictCheck = std::make_unique<MemoryWriteCheck>();
    strict = strictCheck.get();
  }
  // Buffers followed: a varied buffer argument or global is written with a
  // varied value (the writer is any write of one to a varied buffer).
  ActivityAnalysis activity(callee, positions, /*followsMemory=*/true);
  auto varied = [&](Value value) { return activity.isVaried(value); };
  bool escapes =
      llvm::any_of(callee.getArguments(),
                   [&](BlockArgument argument) {
                     return isa<BaseMemRefType>(argument.getType()) &&
                            varied(argument);
                   }) ||
      callee
          .walk([&](memref::GetGlobalOp global) {
            return varied(global.getResult()) ? WalkResult::interrupt()
                                              : WalkResult::advance();
          })
          .wasInterrupted();
  Operation *writer = nullptr;
  SmallVector<Operation *> foundVia;
  callee.walk([&](Operation *op) {
    // A call given a varied value: anything its callees write counts.
    if (isCallLike(op) && llvm::any_of(op->getOperands(), varied)) {
      llvm::DenseSet<Operation *> skip;
      SmallVector<Operation *> inner;
      ActivityAnalysis plain(callee, positions);
      if (Operation *found = strict->findWrite(
              op, [&](Value value) { return plain.isVaried(value); }, skip,
              inner)) {
        foundVia.append(inner.begin(), inner.end());
        writer = found;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    }
    if (escapes && llvm::any_of(op->getOperands(), varied) &&
        llvm::any_of(getWrittenBuffers(op), varied)) {
      writer = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  CalleeResult &result = escaping[key];
  result.writer = writer;
  result.via = foundVia;
  via.append(foundVia.begin(), foundVia.end());
  return writer;
}

Operation *MemoryWriteCheck::findWriteInCallee(
    Operation *callee, ArrayRef<int64_t> positions,
    SmallVectorImpl<Operation *> &via) {
  auto key = std::make_pair(
      callee, std::vector<int64_t>(positions.begin(), positions.end()));
  auto [it, inserted] = callees.try_emplace(key);
  if (!inserted) {
    via.append(it->second.via.begin(), it->second.via.end());
    return it->second.writer;
  }
  auto function = cast<func::FuncOp>(callee);
  ActivityAnalysis activity(function, positions, followsMemory);
  llvm::DenseSet<Operation *> skip;
  SmallVector<Operation *> inner;
  Operation *writer = findWrite(
      function, [&](Value value) { return activity.isVaried(value); }, skip,
      inner);
  CalleeResult &result = callees[key];
  result.writer = writer;
  result.via = inner;
  via.append(inner.begin(), inner.end());
  return writer;
}

LogicalResult MemoryWriteCheck::check(
    Operation *op, VariedFn isVaried, llvm::DenseSet<Operation *> &skip,
    function_ref<InFlightDiagnostic(Operation *, const Twine &)> emitError) {
  SmallVector<Operation *> via;
  Operation *writer = findWrite(op, isVaried, skip, via);
  if (!writer)
    return success();
  InFlightDiagnostic diag = emitError(writer, describeWrite(writer));
  for (Operation *call : via)
    diag.attachNote(call->getLoc()) << "reached through this call";
  return failure();
}

std::string mlir::ad::describeWrite(Operation *writer) {
  auto function = writer->getParentOfType<FunctionOpInterface>();
  if (function && function->hasAttr(kGeneratedAttrName))
    return "cannot take the gradient of a derivative that keeps its tape in "
           "memory (the tape of a loop, a while loop, a recursion or deeply "
           "nested branches; a linalg op differentiated as its loop nest, "
           "such as a gather, a product reduction or a body with control "
           "flow, is a loop too): reverse over reverse works for "
           "straight-line code, branches, calls and the other linalg ops "
           "only; forward over reverse (ad.hvp, or ad.jvp of a function "
           "taking a gradient) works everywhere";
  if (isa<CallOpInterface>(writer))
    return "cannot differentiate through memory: this call passes a value "
           "that depends on a differentiated argument to a function without "
           "a body here, which may write it to memory";
  std::string name = writer->getName().getStringRef().str();
  if (!isa<MemoryEffectOpInterface>(writer))
    return "cannot differentiate through memory: '" + name +
           "' declares no memory effects and reads a value that depends on "
           "a differentiated argument, so it may write it to memory";
  return "cannot differentiate through memory: '" + name +
         "' writes a value that depends on a differentiated argument";
}

std::string mlir::ad::describeUncarriedOperand(Operation *op, Value operand) {
  std::string message;
  llvm::raw_string_ostream os(message);
  os << "cannot differentiate '" << op->getName()
     << "': its operand of type '" << operand.getType()
     << "' depends on a differentiated argument, but values of that type "
        "cannot carry a derivative";
  return message;
}

InFlightDiagnostic
mlir::ad::emitErrorWithCallChain(Operation *op, const Twine &message,
                                 ArrayRef<Operation *> requesters) {
  InFlightDiagnostic diag = op->emitError(message);
  for (Operation *requester : llvm::reverse(requesters)) {
    Diagnostic &note = diag.attachNote(requester->getLoc());
    note << "while differentiating this call";
    if (auto callee = requester->getAttrOfType<FlatSymbolRefAttr>("callee"))
      note << " of " << callee;
  }
  return diag;
}

Value mlir::ad::findUncarriedOperand(Operation *op,
                                     MemoryWriteCheck::VariedFn isVaried,
                                     function_ref<bool(Type)> carries) {
  for (Value operand : op->getOperands()) {
    Type type = operand.getType();
    if (isVaried(operand) && !carries(type) &&
        !getElementTypeOrSelf(type).isIntOrIndex())
      return operand;
  }
  return nullptr;
}
