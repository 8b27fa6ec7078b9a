//===- JitPreparation.cpp - making a module safe to JIT -------------------===//
//
// Pruning, renaming and shape checks before lowering; symbol resolution
// after.
//
//===----------------------------------------------------------------------===//

#include "JitPreparation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
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

/// Asserts `condition` before `op`, with the message of a failed check.
static void assertBefore(OpBuilder &builder, Operation *op, Value condition,
                         StringRef message) {
  cf::AssertOp::create(builder, op->getLoc(), condition,
                       describeFailedCheck(op, message));
}

/// Asserts before `op` that `value` (an index given at run time) is not
/// negative.
static void assertNotNegative(OpBuilder &builder, Operation *op, Value value,
                              StringRef message) {
  Value zero = arith::ConstantIndexOp::create(builder, op->getLoc(), 0);
  Value valid = arith::CmpIOp::create(builder, op->getLoc(),
                                      arith::CmpIPredicate::sge, value, zero);
  assertBefore(builder, op, valid, message);
}

/// Checks that the dynamic `sizes` of `op` (a slice it reads or writes, a
/// tensor it makes) are not negative. A slice of n - 1 elements of an empty
/// tensor (`x[1:]`) failed upstream's first bounds check as "offset 0 is
/// out-of-bounds" (0 is the dimension), which does not name the cause. A
/// tensor of -1 elements made a buffer of 2^64 - 8 bytes (a failed
/// allocation, then a segmentation fault).
static void addSizeChecks(Operation *op, ArrayRef<OpFoldResult> sizes,
                          StringRef what) {
  OpBuilder builder(op);
  for (auto [dim, size] : llvm::enumerate(sizes))
    if (auto value = dyn_cast<Value>(size))
      assertNotNegative(builder, op, value,
                        (what + " in dimension " + Twine(dim) + " is negative")
                            .str());
}

/// Checks that the slice of `source` that `op` reads or writes fits in
/// every dimension: its elements offset, offset + stride, ... (size of
/// them) lie in [0, dim). Instead of upstream's checks of extract_slice,
/// whose first failing one for `x[0:1]` of an empty x read "offset 0 is
/// out-of-bounds", 0 being the dimension; upstream has none for
/// insert_slice (writing 10,000 elements into 4 corrupted the heap).
static void addSliceFitChecks(Operation *op, Value source,
                              ArrayRef<OpFoldResult> offsets,
                              ArrayRef<OpFoldResult> sizes,
                              ArrayRef<OpFoldResult> strides) {
  OpBuilder builder(op);
  Location loc = op->getLoc();
  auto index = [&](OpFoldResult value) {
    return getValueOrCreateConstantIndexOp(builder, loc, value);
  };
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  for (unsigned dim = 0; dim < sizes.size(); ++dim) {
    Value offset = index(offsets[dim]);
    Value size = index(sizes[dim]);
    Value extent = tensor::DimOp::create(builder, loc, source, dim);
    // The last element read: offset + (size - 1) * stride.
    Value last = arith::AddIOp::create(
        builder, loc, offset,
        arith::MulIOp::create(builder, loc,
                              arith::SubIOp::create(builder, loc, size, one),
                              index(strides[dim])));
    auto cmp = [&](arith::CmpIPredicate predicate, Value a, Value b) {
      return arith::CmpIOp::create(builder, loc, predicate, a, b);
    };
    Value fits = arith::AndIOp::create(
        builder, loc,
        arith::AndIOp::create(builder, loc,
                              cmp(arith::CmpIPredicate::sge, offset, zero),
                              cmp(arith::CmpIPredicate::slt, offset, extent)),
        arith::AndIOp::create(builder, loc,
                              cmp(arith::CmpIPredicate::sge, last, zero),
                              cmp(arith::CmpIPredicate::slt, last, extent)));
    Value empty = cmp(arith::CmpIPredicate::eq, size, zero);
    assertBefore(builder, op, arith::OrIOp::create(builder, loc, empty, fits),
                 ("the slice does not fit in dimension " + Twine(dim) +
                  " of the tensor (offset, size or stride out of range)")
                     .str());
  }
}

/// Checks that each dimension of the tensor `insert` writes has the size
/// the slice gives it: a slice of 4 elements given a source of 3 read one
/// past its end (garbage in the result, and in the source's gradient).
static void addInsertedSizeChecks(tensor::InsertSliceOp insert) {
  OpBuilder builder(insert);
  Location loc = insert.getLoc();
  llvm::SmallBitVector dropped = insert.getDroppedDims();
  RankedTensorType sourceType = insert.getSourceType();
  unsigned sourceDim = 0;
  for (auto [dim, size] : llvm::enumerate(insert.getMixedSizes())) {
    if (dropped.test(dim))
      continue;
    unsigned current = sourceDim++;
    if (!isa<Value>(size) && !sourceType.isDynamicDim(current))
      continue;
    Value given = tensor::DimOp::create(builder, loc, insert.getSource(),
                                        current);
    Value same = arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::eq, given,
        getValueOrCreateConstantIndexOp(builder, loc, size));
    assertBefore(builder, insert, same,
                 ("the inserted tensor's size in dimension " + Twine(current) +
                  " is not the slice's")
                     .str());
  }
}

/// Checks that a reshape keeps the number of elements: `tensor.reshape` to
/// a shape of another element count, or `tensor.expand_shape` to sizes
/// whose product is not the expanded dimension's, read out of bounds.
static void addReshapeChecks(Operation *op) {
  OpBuilder builder(op);
  Location loc = op->getLoc();
  auto product = [&](ArrayRef<Value> values) {
    Value result = arith::ConstantIndexOp::create(builder, loc, 1);
    for (Value value : values)
      result = arith::MulIOp::create(builder, loc, result, value);
    return result;
  };
  auto dims = [&](Value tensor) {
    SmallVector<Value> sizes;
    for (OpFoldResult size : tensor::getMixedSizes(builder, loc, tensor))
      sizes.push_back(getValueOrCreateConstantIndexOp(builder, loc, size));
    return sizes;
  };
  if (auto reshape = dyn_cast<tensor::ReshapeOp>(op)) {
    // Unranked tensors (a shape operand of dynamic length) are not checked.
    auto sourceType = dyn_cast<RankedTensorType>(reshape.getSource().getType());
    auto resultType = dyn_cast<RankedTensorType>(reshape.getResult().getType());
    if (!sourceType || !resultType ||
        (sourceType.hasStaticShape() && resultType.hasStaticShape()))
      return;
    // The new sizes are the elements of the shape operand (read before the
    // op: the result's sizes are not known yet).
    SmallVector<Value> extents;
    auto shapeType = cast<RankedTensorType>(reshape.getShape().getType());
    for (int64_t i = 0; i < shapeType.getDimSize(0); ++i) {
      Value extent = tensor::ExtractOp::create(
          builder, loc, reshape.getShape(),
          ValueRange{arith::ConstantIndexOp::create(builder, loc, i)});
      if (!extent.getType().isIndex())
        extent = arith::IndexCastOp::create(builder, loc,
                                            builder.getIndexType(), extent);
      extents.push_back(extent);
    }
    Value same = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                       product(dims(reshape.getSource())),
                                       product(extents));
    assertBefore(builder, op, same,
                 "the new shape does not have the source's number of "
                 "elements");
    return;
  }
  auto expand = cast<tensor::ExpandShapeOp>(op);
  SmallVector<Value> sourceSizes = dims(expand.getSrc());
  SmallVector<OpFoldResult> outputSizes = expand.getMixedOutputShape();
  for (auto [group, dimensions] :
       llvm::enumerate(expand.getReassociationIndices())) {
    SmallVector<Value> parts;
    bool dynamic = expand.getSrcType().isDynamicDim(group);
    for (int64_t dim : dimensions) {
      dynamic |= isa<Value>(outputSizes[dim]);
      parts.push_back(
          getValueOrCreateConstantIndexOp(builder, loc, outputSizes[dim]));
    }
    if (!dynamic)
      continue;
    Value same = arith::CmpIOp::create(builder, loc,
                                       arith::CmpIPredicate::eq,
                                       product(parts), sourceSizes[group]);
    assertBefore(builder, op, same,
                 ("the output sizes expanding dimension " + Twine(group) +
                  " do not multiply to its size")
                     .str());
  }
}

/// The checks of a slice `op` reads or writes: its sizes, and that it fits
/// in `tensor` (its source or destination).
template <typename SliceOp>
static void addSliceChecks(SliceOp op, Value tensor) {
  addSizeChecks(op, op.getMixedSizes(), "the slice's size");
  addSliceFitChecks(op, tensor, op.getMixedOffsets(), op.getMixedSizes(),
                    op.getMixedStrides());
}

/// Checks that the padding amounts of `pad` given at run time are not
/// negative: upstream has no run-time check of tensor.pad, and a negative
/// amount wrote before the buffer it made (a segmentation fault).
static void addPadCheck(tensor::PadOp pad) {
  OpBuilder builder(pad);
  for (auto [side, amounts] : {std::pair{"low", pad.getLow()},
                               std::pair{"high", pad.getHigh()}})
    for (Value amount : amounts)
      assertNotNegative(builder, pad, amount,
                        (Twine(side) + " padding must not be negative").str());
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
  // Tensors made with sizes given at run time, and reshaped.
  SmallVector<Operation *> made, reshaped;
  func.walk([&](Operation *op) {
    if (isa<tensor::EmptyOp, tensor::GenerateOp, tensor::SplatOp>(op))
      made.push_back(op);
    if (isa<tensor::ReshapeOp, tensor::ExpandShapeOp>(op))
      reshaped.push_back(op);
  });
  for (Operation *op : reshaped)
    addReshapeChecks(op);
  for (Operation *op : made) {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Builder builder(op->getContext());
    addSizeChecks(op,
                  getMixedValues(type.getShape(),
                                 op->getOperands().take_back(
                                     type.getNumDynamicDims()),
                                 builder),
                  "the size");
  }
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
      addSliceChecks(insert, insert.getDest());
      addInsertedSizeChecks(insert);
      continue;
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      addSliceChecks(slice, slice.getSource());
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
