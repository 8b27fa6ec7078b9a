//===- EntrySource.cpp - the generated entry functions --------------------===//
//
// Boundary types of MLIR types and the text of entry functions.
//
//===----------------------------------------------------------------------===//

#include "EntrySource.h"

#include "ad/IR/ADDialect.h"
#include "ad/IR/ADInterfaces.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::ad::runtime;

static std::optional<ElementKind> getElementKind(Type type) {
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isIndex())
    return ElementKind::Index;
  if (type.isSignlessInteger(1))
    return ElementKind::I1;
  if (type.isSignlessInteger(8))
    return ElementKind::I8;
  if (type.isSignlessInteger(16))
    return ElementKind::I16;
  if (type.isSignlessInteger(32))
    return ElementKind::I32;
  if (type.isSignlessInteger(64))
    return ElementKind::I64;
  return std::nullopt;
}

/// The boundary type of an MLIR type, or nullopt when the runtime cannot
/// pass it (unranked, non-identity layouts, vectors, other element types).
std::optional<ValueType> mlir::ad::runtime::getValueType(Type type) {
  ValueType result;
  Type element = type;
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    if (tensor.getEncoding())
      return std::nullopt;
    result.shaped = result.tensor = true;
    element = tensor.getElementType();
    result.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  } else if (auto memref = dyn_cast<MemRefType>(type)) {
    if (!memref.getLayout().isIdentity() || memref.getMemorySpace())
      return std::nullopt;
    result.shaped = true;
    element = memref.getElementType();
    result.shape.assign(memref.getShape().begin(), memref.getShape().end());
  }
  for (int64_t &size : result.shape)
    if (ShapedType::isDynamic(size))
      size = ValueType::kDynamic;
  std::optional<ElementKind> kind = getElementKind(element);
  if (!kind)
    return std::nullopt;
  result.element = *kind;
  return result;
}

StringRef mlir::ad::runtime::getEntryKindName(EntryKind kind) {
  switch (kind) {
  case EntryKind::Call:
    return "call";
  case EntryKind::Grad:
    return "grad";
  case EntryKind::ValueAndGrad:
    return "value_and_grad";
  case EntryKind::Vjp:
    return "vjp";
  case EntryKind::Jvp:
    return "jvp";
  case EntryKind::Hvp:
    return "hvp";
  }
  llvm_unreachable("unknown entry kind");
}

//===----------------------------------------------------------------------===//
// Entry functions
//===----------------------------------------------------------------------===//

/// Prints `types` comma-separated.
static std::string printTypes(TypeRange types) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(types, os, [&](Type type) { os << type; });
  return text;
}

/// `%p#0, %p#1, ...` for `count` results of `%p`.
static std::string resultList(StringRef prefix, size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i)
    text += (i ? ", %" : "%") + prefix.str() + "#" + std::to_string(i);
  return text;
}

/// `%<prefix>0, %<prefix>1, ...`.
static std::string argumentList(StringRef prefix, size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i)
    text += (i ? ", %" : "%") + prefix.str() + std::to_string(i);
  return text;
}

/// Asserts that `%<given>` has the dynamic sizes of `%<expected>`, both of
/// ranked tensor type `type` (static sizes are in the entry's types): the
/// derivative code would read out of bounds otherwise. `what` names the
/// pair in the message ("cotangent 0 differs from result 1").
static void writeSameSizesCheck(llvm::raw_ostream &os, StringRef expected,
                                StringRef given, Type type, StringRef id,
                                StringRef what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  for (int64_t dim = 0; tensor && dim < tensor.getRank(); ++dim) {
    if (!tensor.isDynamicDim(dim))
      continue;
    std::string suffix = id.str() + "_" + std::to_string(dim);
    os << "  %dim" << suffix << " = arith.constant " << dim << " : index\n"
       << "  %esize" << suffix << " = tensor.dim %" << expected << ", %dim"
       << suffix << " : " << type << "\n"
       << "  %gsize" << suffix << " = tensor.dim %" << given << ", %dim"
       << suffix << " : " << type << "\n"
       << "  %same" << suffix << " = arith.cmpi eq, %esize" << suffix
       << ", %gsize" << suffix << " : index\n"
       << "  cf.assert %same" << suffix << ", \"" << what
       << " in dimension " << dim << "\"\n";
  }
}

/// Each cotangent `%c<k>` has the sizes of the float result `%y#<i>` it
/// belongs to.
static void writeCotangentChecks(llvm::raw_ostream &os, TypeRange results) {
  size_t cotangent = 0;
  for (auto [index, result] : llvm::enumerate(results)) {
    if (!ad::isDifferentiableType(result))
      continue;
    std::string k = std::to_string(cotangent++);
    writeSameSizesCheck(os, "y#" + std::to_string(index), "c" + k, result,
                        k, "cotangent " + k + " differs from result " +
                               std::to_string(index));
  }
}

/// Each tangent `%c<k>` has the sizes of the argument `%a<wrt[k]>`.
static void writeTangentChecks(llvm::raw_ostream &os, TypeRange inputs,
                               ArrayRef<int64_t> wrt) {
  for (auto [tangent, position] : llvm::enumerate(wrt)) {
    std::string k = std::to_string(tangent);
    writeSameSizesCheck(os, "a" + std::to_string(position), "c" + k,
                        inputs[position], k,
                        "tangent " + k + " differs from argument " +
                            std::to_string(position));
  }
}

std::string mlir::ad::runtime::buildEntrySource(EntryKind kind, func::FuncOp callee,
                                    ArrayRef<int64_t> wrt, StringRef entryName,
                                    Signature &signature) {
  MLIRContext *context = callee.getContext();
  FunctionType type = callee.getFunctionType();
  SmallVector<Type> inputs(type.getInputs());
  // The ad dialect's own answer: one cotangent per differentiable result,
  // one gradient per position of `wrt`.
  ad::PullbackType pullbackType = ad::getPullbackTypeOf(callee, wrt);
  ArrayRef<Type> floatResults = pullbackType.getCotangentTypes();
  ArrayRef<Type> gradients = pullbackType.getGradientTypes();

  SmallVector<Type> entryInputs(inputs);
  SmallVector<Type> entryResults;
  switch (kind) {
  case EntryKind::Call:
    entryResults.assign(type.getResults().begin(), type.getResults().end());
    break;
  case EntryKind::Grad:
    entryResults.assign(gradients.begin(), gradients.end());
    break;
  case EntryKind::ValueAndGrad:
    entryResults.push_back(type.getResult(0));
    entryResults.append(gradients.begin(), gradients.end());
    break;
  case EntryKind::Vjp:
    entryInputs.append(floatResults.begin(), floatResults.end());
    entryResults.assign(gradients.begin(), gradients.end());
    break;
  case EntryKind::Jvp:
    entryInputs.append(gradients.begin(), gradients.end());
    entryResults.assign(type.getResults().begin(), type.getResults().end());
    entryResults.append(floatResults.begin(), floatResults.end());
    break;
  case EntryKind::Hvp:
    entryInputs.append(gradients.begin(), gradients.end());
    entryResults.assign(gradients.begin(), gradients.end());
    break;
  }
  for (auto [index, input] : llvm::enumerate(entryInputs)) {
    signature.inputs.push_back(*getValueType(input));
    if (index < inputs.size())
      signature.inputNames.push_back("argument " + std::to_string(index));
    else
      signature.inputNames.push_back(
          (kind == EntryKind::Vjp ? "cotangent " : "tangent ") +
          std::to_string(index - inputs.size()));
  }
  for (Type result : entryResults)
    signature.results.push_back(*getValueType(result));

  std::string text;
  llvm::raw_string_ostream os(text);
  std::string calleeRef;
  {
    llvm::raw_string_ostream refOs(calleeRef);
    refOs << FlatSymbolRefAttr::get(context, callee.getSymName());
  }
  std::string wrtAttr;
  {
    llvm::raw_string_ostream wrtOs(wrtAttr);
    wrtOs << "{wrt = array<i64: ";
    llvm::interleaveComma(wrt, wrtOs);
    wrtOs << ">}";
  }
  std::string args = argumentList("a", inputs.size());
  std::string signatureText =
      "(" + printTypes(inputs) + ") -> (" + printTypes(type.getResults()) + ")";

  os << "func.func @" << entryName << "(";
  for (auto [index, input] : llvm::enumerate(entryInputs)) {
    os << (index ? ", " : "")
       << (index < inputs.size() ? "%a" + std::to_string(index)
                                 : "%c" + std::to_string(index - inputs.size()))
       << ": " << input;
    if (isa<TensorType>(input))
      os << " {bufferization.writable = false}";
  }
  os << ") -> (" << printTypes(entryResults)
     << ") attributes {llvm.emit_c_interface} {\n";
  std::string results = "%r:" + std::to_string(entryResults.size()) + " = ";
  if (entryResults.empty())
    results.clear();
  switch (kind) {
  case EntryKind::Call:
    os << "  " << results << "func.call " << calleeRef << "(" << args
       << ") : " << signatureText << "\n";
    break;
  case EntryKind::Grad:
  case EntryKind::ValueAndGrad:
    os << "  " << results
       << (kind == EntryKind::Grad ? "ad.grad " : "ad.value_and_grad ")
       << calleeRef << "(" << args << ") " << wrtAttr << " : ("
       << printTypes(inputs) << ") -> (" << printTypes(entryResults)
       << ")\n";
    break;
  case EntryKind::Vjp: {
    std::string pullback;
    llvm::raw_string_ostream(pullback) << Type(pullbackType);
    size_t numResults = type.getNumResults();
    os << "  %y:" << numResults + 1 << " = ad.forward " << calleeRef << "("
       << args << ") " << wrtAttr << " : (" << printTypes(inputs) << ") -> ("
       << printTypes(type.getResults()) << (numResults ? ", " : "")
       << pullback << ")\n";
    writeCotangentChecks(os, type.getResults());
    os << "  " << results << "ad.pullback %y#" << numResults << "("
       << argumentList("c", floatResults.size()) << ") : " << pullback
       << "\n";
    break;
  }
  case EntryKind::Jvp:
  case EntryKind::Hvp:
    writeTangentChecks(os, inputs, wrt);
    os << "  " << results << (kind == EntryKind::Jvp ? "ad.jvp " : "ad.hvp ")
       << calleeRef << "(" << args << ") tangents("
       << argumentList("c", gradients.size()) << ") " << wrtAttr << " : ("
       << printTypes(inputs) << ") -> (" << printTypes(entryResults)
       << ")\n";
    break;
  }
  os << "  return";
  if (!entryResults.empty())
    os << " " << resultList("r", entryResults.size()) << " : "
       << printTypes(entryResults);
  os << "\n}\n";
  return text;
}

std::string mlir::ad::runtime::getFreshEntryName(ModuleOp module) {
  SymbolTable symbols(module);
  std::string name = "__mlir_ad_entry";
  for (unsigned suffix = 0; symbols.lookup(name); ++suffix)
    name = "__mlir_ad_entry_" + std::to_string(suffix);
  return name;
}

