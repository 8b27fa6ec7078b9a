//===- CustomRules.cpp - ad.custom_vjp and ad.custom_jvp --------*- C++ -*-===//
//
// Verifiers of the user-written rules and their lookup: a rule replaces the
// differentiation of a function's body (DerivativeGenerator,
// TangentGenerator), so a function has at most one rule of each kind and
// the rule's signatures follow from the function's.
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADDialect.h"
#include "ad/IR/ADInterfaces.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::ad;

/// The types of `types` of differentiable type.
static SmallVector<Type> differentiableTypes(TypeRange types) {
  return llvm::filter_to_vector(types, isDifferentiableType);
}

/// `(t0, t1, ...)`.
static std::string listTypes(TypeRange types) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "(";
  llvm::interleaveComma(types, os);
  os << ")";
  return text;
}

/// The func.func `symbol` names, or an error at `op` naming `role`.
static FailureOr<func::FuncOp> lookupRuleFunction(Operation *op,
                                                  FlatSymbolRefAttr symbol,
                                                  StringRef role,
                                                  SymbolTableCollection &table) {
  auto function = table.lookupNearestSymbolFrom<func::FuncOp>(op, symbol);
  if (!function)
    return op->emitOpError() << role << " " << symbol
                             << " does not reference a 'func.func'";
  return function;
}

/// Fails (at `op`) when a rule of the same kind before it names its
/// function.
template <typename RuleOp>
static LogicalResult verifyOnlyRule(RuleOp op) {
  auto module = op->template getParentOfType<ModuleOp>();
  for (auto other : module.template getOps<RuleOp>()) {
    if (other == op)
      return success();
    if (other.getFunctionAttr() == op.getFunctionAttr())
      return op.emitOpError()
             << "is a second rule for " << op.getFunctionAttr()
             << " (a function has at most one '" << op->getName() << "')";
  }
  return success();
}

/// Whether a residual of type `type` can be kept on a tape.
static bool isTapeableResidual(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.getElementType().isIntOrIndexOrFloat();
  return type.isIntOrIndexOrFloat();
}

LogicalResult
CustomVjpOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<func::FuncOp> function =
      lookupRuleFunction(*this, getFunctionAttr(), "function", symbolTable);
  FailureOr<func::FuncOp> forward =
      lookupRuleFunction(*this, getForwardAttr(), "forward", symbolTable);
  FailureOr<func::FuncOp> pullback =
      lookupRuleFunction(*this, getPullbackAttr(), "pullback", symbolTable);
  if (failed(function) || failed(forward) || failed(pullback))
    return failure();
  if (*forward == *function || *pullback == *function)
    return emitOpError() << "names " << getFunctionAttr()
                         << " as its own forward or pullback function";
  FunctionType type = function->getFunctionType();
  FunctionType forwardType = forward->getFunctionType();
  if (forwardType.getInputs() != type.getInputs())
    return emitOpError() << "forward " << getForwardAttr()
                         << " must take the arguments of "
                         << getFunctionAttr() << ", "
                         << listTypes(type.getInputs()) << ", but takes "
                         << listTypes(forwardType.getInputs());
  unsigned numResults = type.getNumResults();
  if (forwardType.getNumResults() < numResults ||
      forwardType.getResults().take_front(numResults) != type.getResults())
    return emitOpError() << "forward " << getForwardAttr()
                         << " must return the results of "
                         << getFunctionAttr() << ", "
                         << listTypes(type.getResults())
                         << ", followed by residuals, but returns "
                         << listTypes(forwardType.getResults());
  ArrayRef<Type> residuals = forwardType.getResults().drop_front(numResults);
  for (auto [index, residual] : llvm::enumerate(residuals))
    if (!isTapeableResidual(residual))
      return emitOpError() << "residual " << index << " of forward "
                           << getForwardAttr() << " has type " << residual
                           << ", but residuals are float, integer or index "
                              "scalars or ranked tensors of them";
  SmallVector<Type> pullbackInputs(residuals);
  llvm::append_range(pullbackInputs, differentiableTypes(type.getResults()));
  FunctionType pullbackType = pullback->getFunctionType();
  if (pullbackType.getInputs() != ArrayRef<Type>(pullbackInputs))
    return emitOpError() << "pullback " << getPullbackAttr()
                         << " must take the residuals of " << getForwardAttr()
                         << " and a cotangent per float result of "
                         << getFunctionAttr() << ", "
                         << listTypes(pullbackInputs) << ", but takes "
                         << listTypes(pullbackType.getInputs());
  SmallVector<Type> gradients = differentiableTypes(type.getInputs());
  if (pullbackType.getResults() != ArrayRef<Type>(gradients))
    return emitOpError() << "pullback " << getPullbackAttr()
                         << " must return a gradient per float argument of "
                         << getFunctionAttr() << ", " << listTypes(gradients)
                         << ", but returns "
                         << listTypes(pullbackType.getResults());
  return verifyOnlyRule(*this);
}

LogicalResult
CustomJvpOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<func::FuncOp> function =
      lookupRuleFunction(*this, getFunctionAttr(), "function", symbolTable);
  FailureOr<func::FuncOp> tangent =
      lookupRuleFunction(*this, getTangentAttr(), "tangent", symbolTable);
  if (failed(function) || failed(tangent))
    return failure();
  if (*tangent == *function)
    return emitOpError() << "names " << getFunctionAttr()
                         << " as its own tangent function";
  FunctionType type = function->getFunctionType();
  SmallVector<Type> inputs(type.getInputs());
  llvm::append_range(inputs, differentiableTypes(type.getInputs()));
  SmallVector<Type> results(type.getResults());
  llvm::append_range(results, differentiableTypes(type.getResults()));
  FunctionType tangentType = tangent->getFunctionType();
  if (tangentType.getInputs() != ArrayRef<Type>(inputs))
    return emitOpError() << "tangent " << getTangentAttr()
                         << " must take the arguments of " << getFunctionAttr()
                         << " and a tangent per float argument, "
                         << listTypes(inputs) << ", but takes "
                         << listTypes(tangentType.getInputs());
  if (tangentType.getResults() != ArrayRef<Type>(results))
    return emitOpError() << "tangent " << getTangentAttr()
                         << " must return the results of " << getFunctionAttr()
                         << " and a tangent per float result, "
                         << listTypes(results) << ", but returns "
                         << listTypes(tangentType.getResults());
  return verifyOnlyRule(*this);
}

void CustomRuleIndex::indexModuleOf(func::FuncOp function) {
  auto module = function->getParentOfType<ModuleOp>();
  if (module == indexed)
    return;
  indexed = module;
  vjps.clear();
  jvps.clear();
  if (!module)
    return;
  for (Operation &op : *module.getBody()) {
    // The verifier keeps the first rule of each kind for a function.
    if (auto rule = dyn_cast<CustomVjpOp>(op))
      vjps.try_emplace(rule.getFunctionAttr().getAttr(), rule);
    else if (auto rule = dyn_cast<CustomJvpOp>(op))
      jvps.try_emplace(rule.getFunctionAttr().getAttr(), rule);
  }
}

CustomVjpOp CustomRuleIndex::getVjp(func::FuncOp function) {
  indexModuleOf(function);
  return vjps.lookup(function.getSymNameAttr());
}

CustomJvpOp CustomRuleIndex::getJvp(func::FuncOp function) {
  indexModuleOf(function);
  return jvps.lookup(function.getSymNameAttr());
}
