//===- ADOps.cpp - verifiers of the ad ops ----------------------*- C++ -*-===//
//
// Every type of an ad op is checked against its callee's signature; the
// messages say which operand or result is wrong and what was expected.
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADDialect.h"
#include "ad/IR/ADInterfaces.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ad;

#define GET_OP_CLASSES
#include "ad/IR/ADOps.cpp.inc"

/// Positions of `wrt` when given, else of every differentiable type.
static SmallVector<int64_t> wrtPositions(std::optional<ArrayRef<int64_t>> wrt,
                                         TypeRange argumentTypes) {
  if (wrt)
    return SmallVector<int64_t>(wrt->begin(), wrt->end());
  SmallVector<int64_t> positions;
  for (auto [index, type] : llvm::enumerate(argumentTypes))
    if (isDifferentiableType(type))
      positions.push_back(index);
  return positions;
}

SmallVector<int64_t> GradOp::getWrtPositions() {
  return wrtPositions(getWrt(), getOperands().getTypes());
}
SmallVector<int64_t> ValueAndGradOp::getWrtPositions() {
  return wrtPositions(getWrt(), getOperands().getTypes());
}
SmallVector<int64_t> ForwardOp::getWrtPositions() {
  return wrtPositions(getWrt(), getOperands().getTypes());
}

/// Resolves the callee and checks the operands and `wrt` against it. On
/// success returns the callee and the types the gradients must have.
static FailureOr<func::FuncOp>
verifyDerivativeRequest(Operation *op, FlatSymbolRefAttr calleeAttr,
                        OperandRange operands,
                        std::optional<ArrayRef<int64_t>> wrt,
                        SymbolTableCollection &symbolTable,
                        SmallVectorImpl<Type> &gradientTypes) {
  Operation *symbol =
      symbolTable.lookupNearestSymbolFrom(op, calleeAttr.getAttr());
  if (!symbol)
    return op->emitOpError() << "callee " << calleeAttr
                             << " does not reference a symbol in this module";
  auto callee = dyn_cast<func::FuncOp>(symbol);
  if (!callee)
    return op->emitOpError() << "callee " << calleeAttr << " is a '"
                             << symbol->getName()
                             << "', expected a 'func.func'";
  // A declaration is differentiated by its user-written rule: ad.jvp
  // needs an ad.custom_jvp, the other requests an ad.custom_vjp (ad.hvp
  // differentiates the rule's functions in forward mode).
  if (callee.isExternal()) {
    CustomRuleIndex rules;
    bool forwardMode = isa<JvpOp>(op);
    if (forwardMode ? !rules.getJvp(callee) : !rules.getVjp(callee))
      return op->emitOpError()
             << "callee " << calleeAttr
             << " is a declaration without an '"
             << (forwardMode ? "ad.custom_jvp" : "ad.custom_vjp")
             << "' rule; only functions with a body or a rule can be "
                "differentiated";
  }

  FunctionType type = callee.getFunctionType();
  if (operands.size() != type.getNumInputs())
    return op->emitOpError()
           << "has " << operands.size() << " operands but " << calleeAttr
           << " takes " << type.getNumInputs() << " arguments";
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(operands.getTypes(), type.getInputs()))) {
    auto [actual, expected] = pair;
    if (actual != expected)
      return op->emitOpError() << "operand #" << index << " has type "
                               << actual << " but " << calleeAttr
                               << " expects " << expected;
  }

  if (wrt) {
    int64_t previous = -1;
    for (int64_t position : *wrt) {
      if (position < 0 || position >= (int64_t)type.getNumInputs())
        return op->emitOpError()
               << "wrt position " << position << " is out of range for "
               << calleeAttr << ", which has " << type.getNumInputs()
               << " arguments";
      if (position <= previous)
        return op->emitOpError() << "wrt positions must be strictly increasing";
      previous = position;
      if (!isDifferentiableType(type.getInput(position)))
        return op->emitOpError()
               << "wrt position " << position << " names an argument of type "
               << type.getInput(position)
               << ", which is not differentiable (expected a float or a "
                  "ranked tensor of floats)";
    }
  }
  for (int64_t position : wrtPositions(wrt, type.getInputs()))
    gradientTypes.push_back(type.getInput(position));
  return callee;
}

/// Checks that `actual` gradient results match `expected` one by one.
/// Without `wrt`, arguments of non-differentiable type get no gradient: a
/// note names each, since that is the usual reason for a count mismatch.
static LogicalResult verifyGradientResults(Operation *op, TypeRange actual,
                                           ArrayRef<Type> expected,
                                           unsigned firstResult,
                                           func::FuncOp callee) {
  if (actual.size() != expected.size()) {
    InFlightDiagnostic diag =
        op->emitOpError()
        << "expected " << expected.size()
        << " gradient results (one per differentiated argument), got "
        << actual.size();
    if (!op->hasAttr("wrt"))
      for (auto [index, input] :
           llvm::enumerate(callee.getFunctionType().getInputs()))
        if (!isDifferentiableType(input))
          diag.attachNote(callee.getLoc())
              << "argument #" << index << " of @" << callee.getSymName()
              << " has type " << input
              << ", which is not differentiated (only floats and ranked "
                 "tensors of floats are)";
    return diag;
  }
  for (auto [index, pair] : llvm::enumerate(llvm::zip(actual, expected))) {
    auto [got, want] = pair;
    if (got != want)
      return op->emitOpError()
             << "result #" << index + firstResult << " has type " << got
             << " but the gradient of its argument has type " << want;
  }
  return success();
}

/// ad.grad and ad.value_and_grad need a single float result to seed.
static LogicalResult verifyScalarCallee(Operation *op, func::FuncOp callee) {
  TypeRange results = callee.getFunctionType().getResults();
  bool scalar = results.size() == 1 && isDifferentiableType(results[0]);
  if (scalar)
    if (auto tensor = dyn_cast<RankedTensorType>(results[0]))
      scalar = tensor.getRank() == 0;
  if (scalar)
    return success();
  std::string returned;
  llvm::raw_string_ostream os(returned);
  llvm::interleaveComma(results, os);
  return op->emitOpError() << "needs @" << callee.getSymName()
                           << " to return exactly one float scalar or rank-0 "
                              "tensor of floats, but it returns ("
                           << returned << ")";
}

PullbackType mlir::ad::getPullbackTypeOf(func::FuncOp callee,
                                         ArrayRef<int64_t> wrt) {
  FunctionType type = callee.getFunctionType();
  SmallVector<Type> cotangents, gradients;
  for (Type result : type.getResults())
    if (isDifferentiableType(result))
      cotangents.push_back(result);
  for (int64_t position : wrt)
    gradients.push_back(type.getInput(position));
  MLIRContext *context = callee.getContext();
  return PullbackType::get(context,
                           FunctionType::get(context, cotangents, gradients));
}

SmallVector<int64_t>
mlir::ad::getDifferentiablePositions(func::FuncOp callee,
                                     ArrayRef<int64_t> positions) {
  return llvm::filter_to_vector(positions, [&](int64_t position) {
    return isDifferentiableType(callee.getArgumentTypes()[position]);
  });
}

SmallVector<int64_t>
mlir::ad::getTangentPositions(func::FuncOp callee,
                              ArrayRef<int64_t> positions) {
  return llvm::filter_to_vector(positions, [&](int64_t position) {
    return hasTangentType(callee.getArgumentTypes()[position]);
  });
}

LogicalResult GradOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  SmallVector<Type> gradientTypes;
  FailureOr<func::FuncOp> callee =
      verifyDerivativeRequest(*this, getCalleeAttr(), getOperands(), getWrt(),
                              symbolTable, gradientTypes);
  if (failed(callee) || failed(verifyScalarCallee(*this, *callee)))
    return failure();
  return verifyGradientResults(*this, getResultTypes(), gradientTypes, 0,
                               *callee);
}

LogicalResult
ValueAndGradOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  SmallVector<Type> gradientTypes;
  FailureOr<func::FuncOp> callee =
      verifyDerivativeRequest(*this, getCalleeAttr(), getOperands(), getWrt(),
                              symbolTable, gradientTypes);
  if (failed(callee) || failed(verifyScalarCallee(*this, *callee)))
    return failure();
  Type valueType = callee->getFunctionType().getResult(0);
  if (getValue().getType() != valueType)
    return emitOpError() << "result #0 has type " << getValue().getType()
                         << " but " << getCalleeAttr() << " returns "
                         << valueType;
  return verifyGradientResults(*this, getGradients().getTypes(), gradientTypes,
                               1, *callee);
}

LogicalResult ForwardOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  SmallVector<Type> gradientTypes;
  FailureOr<func::FuncOp> callee =
      verifyDerivativeRequest(*this, getCalleeAttr(), getOperands(), getWrt(),
                              symbolTable, gradientTypes);
  if (failed(callee))
    return failure();
  TypeRange calleeResults = callee->getFunctionType().getResults();
  if (getResults().size() != calleeResults.size())
    return emitOpError() << "expected " << calleeResults.size()
                         << " results of " << getCalleeAttr()
                         << " before the pullback, got "
                         << getResults().size();
  for (auto [index, pair] : llvm::enumerate(
           llvm::zip(getResults().getTypes(), calleeResults))) {
    auto [got, want] = pair;
    if (got != want)
      return emitOpError() << "result #" << index << " has type " << got
                           << " but " << getCalleeAttr() << " returns "
                           << want;
  }
  PullbackType expected = getPullbackTypeOf(*callee, getWrtPositions());
  if (getPullback().getType() != expected)
    return emitOpError() << "pullback has type " << getPullback().getType()
                         << " but differentiating " << getCalleeAttr()
                         << " with respect to these arguments gives "
                         << expected;
  return success();
}

LogicalResult
MakePullbackOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto callee =
      symbolTable.lookupNearestSymbolFrom<func::FuncOp>(*this, getCalleeAttr());
  if (!callee)
    return emitOpError() << "callee " << getCalleeAttr()
                         << " does not reference a 'func.func'";
  PullbackType closure = getClosure().getType();
  SmallVector<Type> inputs(getCaptures().getTypes());
  llvm::append_range(inputs, closure.getCotangentTypes());
  auto expected =
      FunctionType::get(getContext(), inputs, closure.getGradientTypes());
  if (callee.getFunctionType() != expected)
    return emitOpError() << "callee " << getCalleeAttr() << " has type "
                         << callee.getFunctionType()
                         << " but capturing these values for this closure "
                            "needs "
                         << expected;
  return success();
}

//===----------------------------------------------------------------------===//
// ad.jvp and ad.hvp
//===----------------------------------------------------------------------===//

SmallVector<int64_t> JvpOp::getWrtPositions() {
  return wrtPositions(getWrt(), getArgs().getTypes());
}
SmallVector<int64_t> HvpOp::getWrtPositions() {
  return wrtPositions(getWrt(), getArgs().getTypes());
}

/// `@callee(operands) tangents(tangents) attr-dict : (operand types) ->
/// (result types)`: the tangents' types are those of the differentiated
/// operands (the `wrt` positions, or every float and tensor of floats).
static ParseResult parseTangentRequest(OpAsmParser &parser,
                                       OperationState &result) {
  FlatSymbolRefAttr callee;
  SmallVector<OpAsmParser::UnresolvedOperand> operands, tangents;
  FunctionType type;
  if (parser.parseAttribute(callee, "callee", result.attributes) ||
      parser.parseOperandList(operands, OpAsmParser::Delimiter::Paren) ||
      parser.parseKeyword("tangents") ||
      parser.parseOperandList(tangents, OpAsmParser::Delimiter::Paren))
    return failure();
  SMLoc attrLoc = parser.getCurrentLocation();
  if (parser.parseOptionalAttrDict(result.attributes) || parser.parseColon())
    return failure();
  SMLoc typeLoc = parser.getCurrentLocation();
  if (parser.parseType(type))
    return failure();
  if (type.getNumInputs() != operands.size())
    return parser.emitError(typeLoc)
           << "the function type lists " << type.getNumInputs()
           << " argument types for " << operands.size() << " operands";
  std::optional<ArrayRef<int64_t>> wrt;
  if (Attribute attr = result.attributes.get("wrt")) {
    auto array = dyn_cast<DenseI64ArrayAttr>(attr);
    if (!array)
      return parser.emitError(attrLoc) << "'wrt' must be an array<i64: ...>";
    wrt = array.asArrayRef();
    for (int64_t position : *wrt)
      if (position < 0 || position >= (int64_t)type.getNumInputs())
        return parser.emitError(attrLoc)
               << "wrt position " << position << " is out of range for "
               << type.getNumInputs() << " operands";
  }
  SmallVector<Type> tangentTypes;
  for (int64_t position : wrtPositions(wrt, type.getInputs()))
    tangentTypes.push_back(type.getInput(position));
  if (tangents.size() != tangentTypes.size())
    return parser.emitError(typeLoc)
           << "expected " << tangentTypes.size()
           << " tangents (one per differentiated argument), got "
           << tangents.size();
  result.addAttribute("operandSegmentSizes",
                      parser.getBuilder().getDenseI32ArrayAttr(
                          {(int32_t)operands.size(), (int32_t)tangents.size()}));
  result.addTypes(type.getResults());
  return failure(
      parser.resolveOperands(operands, type.getInputs(), typeLoc,
                             result.operands) ||
      parser.resolveOperands(tangents, tangentTypes, typeLoc, result.operands));
}

static void printTangentRequest(OpAsmPrinter &p, Operation *op,
                                FlatSymbolRefAttr callee, ValueRange operands,
                                ValueRange tangents) {
  p << ' ';
  p.printAttributeWithoutType(callee);
  p << '(' << operands << ") tangents(" << tangents << ')';
  p.printOptionalAttrDict(op->getAttrs(), {"callee", "operandSegmentSizes"});
  p << " : ";
  p.printFunctionalType(operands.getTypes(), op->getResultTypes());
}

ParseResult JvpOp::parse(OpAsmParser &parser, OperationState &result) {
  return parseTangentRequest(parser, result);
}
void JvpOp::print(OpAsmPrinter &p) {
  printTangentRequest(p, *this, getCalleeAttr(), getArgs(), getTangents());
}
ParseResult HvpOp::parse(OpAsmParser &parser, OperationState &result) {
  return parseTangentRequest(parser, result);
}
void HvpOp::print(OpAsmPrinter &p) {
  printTangentRequest(p, *this, getCalleeAttr(), getArgs(), getTangents());
}

/// Tangent operands match the differentiated arguments' types.
static LogicalResult verifyTangentOperands(Operation *op, ValueRange tangents,
                                           ArrayRef<Type> expected) {
  if (tangents.size() != expected.size())
    return op->emitOpError()
           << "expected " << expected.size()
           << " tangents (one per differentiated argument), got "
           << tangents.size();
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(tangents.getTypes(), expected))) {
    auto [got, want] = pair;
    if (got != want)
      return op->emitOpError()
             << "tangent #" << index << " has type " << got
             << " but its argument has type " << want;
  }
  return success();
}

LogicalResult JvpOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  SmallVector<Type> tangentTypes;
  FailureOr<func::FuncOp> callee =
      verifyDerivativeRequest(*this, getCalleeAttr(), getArgs(), getWrt(),
                              symbolTable, tangentTypes);
  if (failed(callee) ||
      failed(verifyTangentOperands(*this, getTangents(), tangentTypes)))
    return failure();
  TypeRange calleeResults = callee->getFunctionType().getResults();
  SmallVector<Type> expected(calleeResults);
  for (Type result : calleeResults)
    if (isDifferentiableType(result))
      expected.push_back(result);
  if (getResults().size() != expected.size())
    return emitOpError() << "expected " << expected.size() << " results ("
                         << calleeResults.size() << " of " << getCalleeAttr()
                         << ", then one tangent per float result), got "
                         << getResults().size();
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(getResults().getTypes(), expected))) {
    auto [got, want] = pair;
    if (got == want)
      continue;
    if (index < calleeResults.size())
      return emitOpError() << "result #" << index << " has type " << got
                           << " but " << getCalleeAttr() << " returns "
                           << want;
    return emitOpError() << "result #" << index << " has type " << got
                         << " but the tangent it stands for has type " << want;
  }
  return success();
}

LogicalResult HvpOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  SmallVector<Type> tangentTypes;
  FailureOr<func::FuncOp> callee =
      verifyDerivativeRequest(*this, getCalleeAttr(), getArgs(), getWrt(),
                              symbolTable, tangentTypes);
  if (failed(callee) || failed(verifyScalarCallee(*this, *callee)) ||
      failed(verifyTangentOperands(*this, getTangents(), tangentTypes)))
    return failure();
  return verifyGradientResults(*this, getResultTypes(), tangentTypes, 0,
                               *callee);
}

LogicalResult StopGradientOp::verify() {
  if (!isDifferentiableType(getInput().getType()))
    return emitOpError() << "operand has type " << getInput().getType()
                         << ", expected a float or a ranked tensor of floats";
  return success();
}
