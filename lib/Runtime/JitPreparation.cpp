//===- JitPreparation.cpp - making a module safe to JIT -------------------===//
//
// Pruning, renaming and shape checks before lowering; symbol resolution
// after.
//
//===----------------------------------------------------------------------===//

#include "JitPreparation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/RuntimeVerifiableOpInterface.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <dlfcn.h>

using namespace mlir;
using namespace mlir::ad::runtime;

static bool isReservedSymbolName(StringRef name) {
  if (name.starts_with("_"))
    return true;
  std::string terminated = name.str();
  return ::dlsym(RTLD_DEFAULT, terminated.c_str()) != nullptr;
}

/// Checks before each linalg op of `func` that its operands' sizes agree
/// (a matmul of 50x40 by 50x40 would read out of bounds), and before each
/// tensor element or slice access that it is in bounds (a loop bound one
/// past the end); a failed check aborts, which the runtime turns into an
/// error of the call. The adjoint reuses the checked sizes and indices.
static void addShapeChecks(func::FuncOp func) {
  SmallVector<RuntimeVerifiableOpInterface> ops;
  func.walk([&](Operation *op) {
    if (!isa<linalg::LinalgOp, tensor::ExtractOp, tensor::InsertOp,
             tensor::ExtractSliceOp, tensor::InsertSliceOp>(op))
      return;
    if (auto verifiable = dyn_cast<RuntimeVerifiableOpInterface>(op))
      ops.push_back(verifiable);
  });
  for (RuntimeVerifiableOpInterface op : ops) {
    OpBuilder builder(op);
    op.generateRuntimeVerification(
        builder, op->getLoc(), [](Operation *op, StringRef message) {
          std::string text;
          llvm::raw_string_ostream os(text);
          os << "'" << op->getName() << "' at " << op->getLoc() << ": "
             << message;
          return text;
        });
  }
}

std::string mlir::ad::runtime::prepareForJit(ModuleOp module, StringRef root) {
  SymbolTable symbols(module);
  llvm::DenseSet<Operation *> reached;
  SmallVector<Operation *> worklist;
  auto reach = [&](Operation *op) {
    if (op && reached.insert(op).second)
      worklist.push_back(op);
  };
  reach(symbols.lookup(root));
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    op->walk([&](Operation *nested) {
      for (NamedAttribute attr : nested->getAttrs())
        attr.getValue().walk([&](SymbolRefAttr ref) {
          reach(symbols.lookup(ref.getRootReference()));
        });
    });
  }
  for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (!reached.contains(func))
      func.erase();
  for (auto func : module.getOps<func::FuncOp>())
    addShapeChecks(func);

  llvm::DenseMap<StringAttr, StringAttr> renamed;
  MLIRContext *context = module.getContext();
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || !isReservedSymbolName(func.getSymName()))
      continue;
    StringAttr fresh =
        StringAttr::get(context, kRenamedPrefix + func.getSymName());
    renamed[func.getSymNameAttr()] = fresh;
  }
  std::string rootName = root.str();
  if (renamed.empty())
    return rootName;
  AttrTypeReplacer replacer;
  replacer.addReplacement([&](SymbolRefAttr ref) -> std::optional<Attribute> {
    auto it = renamed.find(ref.getRootReference());
    if (it == renamed.end())
      return std::nullopt;
    return SymbolRefAttr::get(it->second, ref.getNestedReferences());
  });
  replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/false);
  for (auto func : module.getOps<func::FuncOp>()) {
    auto it = renamed.find(func.getSymNameAttr());
    if (it != renamed.end())
      func.setSymNameAttr(it->second);
  }
  auto it = renamed.find(StringAttr::get(context, root));
  return it == renamed.end() ? rootName : it->second.str();
}

/// Rounds `value` to the nearest bfloat16 (ties to even), as bits.
static uint16_t roundToBFloat16(double value) {
  llvm::APFloat rounded(value);
  bool losesInfo;
  rounded.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven,
                  &losesInfo);
  return (uint16_t)rounded.bitcastToAPInt().getZExtValue();
}

extern "C" {
static __bf16 adTruncDoubleToBFloat16(double value) {
  uint16_t bits = roundToBFloat16(value);
  __bf16 result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}
static __bf16 adTruncFloatToBFloat16(float value) {
  return adTruncDoubleToBFloat16(value);
}
}

void mlir::ad::runtime::registerMissingBuiltins(ExecutionEngine &engine) {
  struct Builtin {
    const char *name;
    void *address;
  };
  Builtin builtins[] = {
      {"__truncdfbf2", reinterpret_cast<void *>(&adTruncDoubleToBFloat16)},
      {"__truncsfbf2", reinterpret_cast<void *>(&adTruncFloatToBFloat16)},
  };
  engine.registerSymbols([&](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    for (const Builtin &builtin : builtins)
      map[interner(builtin.name)] = {
          llvm::orc::ExecutorAddr::fromPtr(builtin.address),
          llvm::JITSymbolFlags::Exported};
    return map;
  });
}


std::vector<std::string>
mlir::ad::runtime::findUnresolvedFunctions(ModuleOp module,
                                           ArrayRef<void *> libraries) {
  static const llvm::StringSet<> runtimeProvided = {
      "__truncdfbf2", "__truncsfbf2", "puts", "abort", "malloc", "free",
      "realloc"};
  std::vector<std::string> missing;
  for (auto func : module.getOps<LLVM::LLVMFuncOp>()) {
    if (!func.isExternal())
      continue;
    std::string name = func.getSymName().str();
    if (runtimeProvided.contains(name) || ::dlsym(RTLD_DEFAULT, name.c_str()))
      continue;
    if (llvm::any_of(libraries, [&](void *library) {
          return ::dlsym(library, name.c_str()) != nullptr;
        }))
      continue;
    missing.push_back(name);
  }
  return missing;
}
