//===- JitPreparation.cpp - making a module safe to JIT -------------------===//
//
// Pruning, renaming and shape checks before lowering; symbol resolution
// after.
//
//===----------------------------------------------------------------------===//

#include "JitPreparation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
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

/// The message of a failed check of `op`: its name, location and the check.
static std::string describeFailedCheck(Operation *op, StringRef message) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op->getName() << "' at " << op->getLoc() << ": " << message;
  return text;
}

/// Checks that the slice `insert` writes lies inside its destination:
/// upstream (LLVM 22) has no run-time check of tensor.insert_slice, so the
/// check of an extract_slice of the destination at the same offsets, sizes
/// and strides stands in for it.
static void addInsertSliceCheck(tensor::InsertSliceOp insert) {
  OpBuilder builder(insert);
  auto probe = tensor::ExtractSliceOp::create(
      builder, insert.getLoc(), insert.getDest(), insert.getMixedOffsets(),
      insert.getMixedSizes(), insert.getMixedStrides());
  // As upstream's pass does: the checks go before the op they check.
  builder.setInsertionPoint(probe);
  cast<RuntimeVerifiableOpInterface>(probe.getOperation())
      .generateRuntimeVerification(
          builder, insert.getLoc(), [&](Operation *, StringRef message) {
            return describeFailedCheck(insert, message);
          });
  // The checks may read the probe's sizes; canonicalization folds those
  // and erases the probe.
  if (probe->use_empty())
    probe.erase();
}

/// Asserts `condition` before `op`, with the message of a failed check.
static void assertBefore(OpBuilder &builder, Operation *op, Value condition,
                         StringRef message) {
  cf::AssertOp::create(builder, op->getLoc(), condition,
                       describeFailedCheck(op, message));
}

/// Checks that the padding amounts of `pad` given at run time are not
/// negative: upstream has no run-time check of tensor.pad, and a negative
/// amount wrote before the buffer it made (a segmentation fault).
static void addPadCheck(tensor::PadOp pad) {
  OpBuilder builder(pad);
  Value zero = arith::ConstantIndexOp::create(builder, pad.getLoc(), 0);
  for (auto [side, amounts] : {std::pair{"low", pad.getLow()},
                               std::pair{"high", pad.getHigh()}})
    for (Value amount : amounts) {
      Value valid = arith::CmpIOp::create(
          builder, pad.getLoc(), arith::CmpIPredicate::sge, amount, zero);
      assertBefore(builder, pad, valid,
                   (Twine(side) + " padding must not be negative").str());
    }
}

/// Checks that the tensor operands and results of an elementwise op (a
/// whole-tensor `arith.addf`, `math.exp`, `arith.select`) have the same
/// sizes where they are dynamic: the op's lowering reads every operand at
/// the first operand's indices (out of bounds when one is shorter).
static void addElementwiseCheck(Operation *op) {
  SmallVector<Value> tensors;
  for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
    if (isa<RankedTensorType>(value.getType()))
      tensors.push_back(value);
  if (tensors.size() < 2)
    return;
  auto first = cast<RankedTensorType>(tensors.front().getType());
  OpBuilder builder(op);
  Location loc = op->getLoc();
  for (Value other : llvm::drop_begin(tensors)) {
    auto type = cast<RankedTensorType>(other.getType());
    // Results are sized by the operands: check operands only.
    if (other.getDefiningOp() == op || type.getRank() != first.getRank())
      continue;
    for (int64_t dim = 0; dim < type.getRank(); ++dim) {
      if (!first.isDynamicDim(dim) && !type.isDynamicDim(dim))
        continue;
      Value index = arith::ConstantIndexOp::create(builder, loc, dim);
      Value a = tensor::DimOp::create(builder, loc, tensors.front(), index);
      Value b = tensor::DimOp::create(builder, loc, other, index);
      Value same = arith::CmpIOp::create(builder, loc,
                                         arith::CmpIPredicate::eq, a, b);
      assertBefore(builder, op, same,
                   ("the operands' sizes differ in dimension " + Twine(dim))
                       .str());
    }
  }
}

/// Checks before each linalg op of `func` that its operands' sizes agree
/// (a matmul of 50x40 by 50x40 would read out of bounds), and before each
/// tensor element or slice access, cast and dim that it is in bounds (a
/// loop bound one past the end); a failed check aborts, which the runtime
/// turns into an error of the call. The adjoint reuses the checked sizes
/// and indices.
static void addShapeChecks(func::FuncOp func) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<linalg::LinalgOp, tensor::ExtractOp, tensor::InsertOp,
            tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::CastOp,
            tensor::DimOp>(op))
      ops.push_back(op);
  });
  SmallVector<Operation *> elementwise;
  func.walk([&](Operation *op) {
    if (isa<tensor::PadOp>(op) || (op->hasTrait<OpTrait::Elementwise>() &&
                                   op->hasTrait<OpTrait::Tensorizable>()))
      elementwise.push_back(op);
  });
  for (Operation *op : elementwise) {
    if (auto pad = dyn_cast<tensor::PadOp>(op))
      addPadCheck(pad);
    else
      addElementwiseCheck(op);
  }
  for (Operation *op : ops) {
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
      addInsertSliceCheck(insert);
      continue;
    }
    auto verifiable = dyn_cast<RuntimeVerifiableOpInterface>(op);
    assert(verifiable && "every op checked has an upstream run-time check");
    OpBuilder builder(op);
    verifiable.generateRuntimeVerification(builder, op->getLoc(),
                                           describeFailedCheck);
  }
}

/// Erases the functions nothing kept reaches through symbol uses, from
/// `root` and from every top-level op that is not a function (globals).
static void pruneUnreachedFunctions(ModuleOp module, StringRef root) {
  SymbolTable symbols(module);
  llvm::DenseSet<Operation *> reached;
  SmallVector<Operation *> worklist;
  auto reach = [&](Operation *op) {
    if (op && reached.insert(op).second)
      worklist.push_back(op);
  };
  reach(symbols.lookup(root));
  for (Operation &op : *module.getBody())
    if (!isa<FunctionOpInterface>(op))
      reach(&op);
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    op->walk([&](Operation *nested) {
      for (NamedAttribute attr : nested->getAttrs())
        attr.getValue().walk([&](SymbolRefAttr ref) {
          reach(symbols.lookup(ref.getRootReference()));
        });
    });
  }
  for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
    if (isa<FunctionOpInterface>(op) && !reached.contains(&op))
      op.erase();
}

/// Renames every function the module defines (func.func, llvm.func, ...)
/// with kRenamedPrefix, so that none can take the place of a function of
/// the C library, the compiler runtime, MLIR's runner libraries or the
/// runtime's own (`sin`, `malloc`, `memrefCopy`, `abort`) in the JIT-ed
/// code. Returns the new name of `root`.
static std::string renameDefinedFunctions(ModuleOp module, StringRef root) {
  llvm::DenseMap<StringAttr, StringAttr> renamed;
  MLIRContext *context = module.getContext();
  for (auto func : module.getOps<FunctionOpInterface>()) {
    if (func.isExternal())
      continue;
    StringAttr name = SymbolTable::getSymbolName(func);
    renamed[name] = StringAttr::get(context, kRenamedPrefix + name.getValue());
  }
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
  for (auto func : module.getOps<FunctionOpInterface>()) {
    auto it = renamed.find(SymbolTable::getSymbolName(func));
    if (it != renamed.end())
      SymbolTable::setSymbolName(func, it->second);
  }
  auto it = renamed.find(StringAttr::get(context, root));
  return it == renamed.end() ? root.str() : it->second.str();
}

std::string mlir::ad::runtime::prepareForJit(ModuleOp module, StringRef root) {
  pruneUnreachedFunctions(module, root);
  for (auto func : module.getOps<func::FuncOp>())
    addShapeChecks(func);
  return renameDefinedFunctions(module, root);
}

/// Rounds `value` to the nearest bfloat16 (ties to even), as bits.
static uint16_t roundToBFloat16(double value) {
  llvm::APFloat rounded(value);
  bool losesInfo;
  rounded.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven,
                  &losesInfo);
  return (uint16_t)rounded.bitcastToAPInt().getZExtValue();
}

/// The compiler-runtime signature: bf16 travels in the low 16 bits of
/// xmm0, like _Float16 (used here because a __bf16 value makes clang emit
/// the very __truncsfbf2 calls this replaces, at -O1).
extern "C" {
static _Float16 adTruncDoubleToBFloat16(double value) {
  uint16_t bits = roundToBFloat16(value);
  _Float16 result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}
static _Float16 adTruncFloatToBFloat16(float value) {
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
