//===- TapeStorage.cpp - where the forward function keeps values ----------===//
//
// The three tape storage strategies: per-iteration buffers, rows of growable
// tapes and the branch tape (see TapeStorage.h).
//
//===----------------------------------------------------------------------===//

#include "TapeStorage.h"
#include "InvariantSizes.h"

#include "ad/IR/TapeUtils.h"
#include "ad/Transforms/DerivativeGenerator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <numeric>

using namespace mlir;
using namespace mlir::ad;
using namespace mlir::ad::sweeps;

/// A builder right after both `value` and `anchor`, two values of one block
/// where `anchor` is defined at the block's start (an iteration index, a
/// tape): where a store of `value` can go.
static OpBuilder builderAfterBoth(Value value, Value anchor) {
  OpBuilder builder(value.getContext());
  Operation *def = value.getDefiningOp();
  Operation *anchorDef = anchor.getDefiningOp();
  if (!def || (anchorDef && anchorDef->getBlock() == def->getBlock() &&
               def->isBeforeInBlock(anchorDef)))
    builder.setInsertionPointAfterValue(anchor);
  else
    builder.setInsertionPointAfter(def);
  return builder;
}

/// How many f64 slots of a row a value of `type` takes: one for an index or
/// a scalar of at most 64 bits (its bits, or its value extended to f64), one
/// per element for a statically shaped tensor of such floats or of integers
/// of at most 32 bits (exact in f64), none (it cannot be stored there)
/// otherwise.
static unsigned slotsFor(Type type) {
  if (type.isIndex() ||
      (type.isIntOrFloat() && type.getIntOrFloatBitWidth() <= 64))
    return 1;
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType || !tensorType.hasStaticShape())
    return 0;
  Type element = tensorType.getElementType();
  if ((isa<FloatType>(element) && element.getIntOrFloatBitWidth() <= 64) ||
      (element.isInteger() && element.getIntOrFloatBitWidth() <= 32))
    return tensorType.getNumElements();
  return 0;
}

/// The consecutive slots of growable tape `buffer` from `index` on, viewed
/// with `shape` (a tensor stored in a row).
static Value rowSlots(OpBuilder &b, Location loc, Value buffer, Value index,
                      ArrayRef<int64_t> shape) {
  int64_t count = ShapedType::getNumElements(shape);
  Value flat = memref::SubViewOp::create(
      b, loc, buffer, ArrayRef<OpFoldResult>{index},
      ArrayRef<OpFoldResult>{b.getIndexAttr(count)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  if (shape.size() == 1)
    return flat;
  if (shape.empty())
    return memref::CollapseShapeOp::create(b, loc, flat,
                                           ArrayRef<ReassociationIndices>{});
  ReassociationIndices all(shape.size());
  std::iota(all.begin(), all.end(), 0);
  return memref::ExpandShapeOp::create(b, loc, shape, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

/// The slice of per-iteration buffer `buffer` (a leading iteration
/// dimension, then a tensor's shape, whose dynamic sizes are `sizes`) that
/// holds iteration `index`.
static Value iterationSlice(OpBuilder &b, Location loc, Value buffer,
                            Value index, ValueRange sizes) {
  auto type = cast<MemRefType>(buffer.getType());
  ArrayRef<int64_t> shape = type.getShape().drop_front();
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  offsets[0] = index;
  SmallVector<OpFoldResult> sliceSizes = {b.getIndexAttr(1)};
  auto dynamicSize = sizes.begin();
  for (int64_t size : shape)
    sliceSizes.push_back(ShapedType::isDynamic(size)
                             ? OpFoldResult(*dynamicSize++)
                             : OpFoldResult(b.getIndexAttr(size)));
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  MemRefType sliceType = memref::SubViewOp::inferRankReducedResultType(
      shape, type, offsets, sliceSizes, strides);
  return memref::SubViewOp::create(b, loc, sliceType, buffer, offsets,
                                   sliceSizes, strides);
}

//===----------------------------------------------------------------------===//
// IterationBuffers
//===----------------------------------------------------------------------===//

/// The scope of the loop body `block` is, or of the nearest loop body
/// enclosing it (a value defined in a branch of a body belongs to it).
const IterationBuffers::Scope *
IterationBuffers::scopeContaining(Block *block) const {
  for (; block; block = block->getParentOp() ? block->getParentOp()->getBlock()
                                             : nullptr) {
    auto it = scopes.find(block);
    if (it != scopes.end())
      return &it->second;
  }
  return nullptr;
}

void IterationBuffers::beginLoop(Block *forwardBody, Value iteration,
                                 Value tripCount, OpBuilder &entryBuilder,
                                 OpBuilder &bodyBuilder) {
  Scope scope;
  Location loc = iteration.getLoc();
  // The body is not a scope yet: this finds the enclosing loop's.
  if (const Scope *parent = scopeContaining(forwardBody)) {
    scope.capacity =
        arith::MulIOp::create(entryBuilder, loc, parent->capacity, tripCount);
    Value scaled =
        arith::MulIOp::create(bodyBuilder, loc, parent->linearIndex, tripCount);
    scope.linearIndex =
        arith::AddIOp::create(bodyBuilder, loc, scaled, iteration);
  } else {
    scope.capacity = tripCount;
    scope.linearIndex = iteration;
  }
  scopes[forwardBody] = scope;
}

bool IterationBuffers::covers(Value value) const {
  return scopes.contains(value.getParentBlock());
}

/// A builder in the entry block before the nest of `scope`, right after its
/// capacity and the buffers allocated with it (sizes and invariant indices
/// computed there may come after them; each uses only values defined
/// before it): the op that contained the loop when it was emitted may have
/// been replaced since (a branch op is rebuilt once its results are known).
/// What is computed there runs even when the nest does not (no iteration,
/// a branch not taken): sizes and indices only, without side effects.
OpBuilder IterationBuffers::beforeNest(const Scope &scope) {
  OpBuilder builder(scope.capacity.getContext());
  if (Operation *previous = lastBufferOf.lookup(scope.capacity))
    builder.setInsertionPointAfter(previous);
  else
    builder.setInsertionPointAfterValue(scope.capacity);
  return builder;
}

/// A buffer of `scope.capacity` elements, filled with `value` at each
/// iteration of the loop nest (created once per value); null when `value`
/// is a tensor with a size not known before the nest.
const IterationBuffers::Buffer *IterationBuffers::bufferOf(Value value,
                                                           const Scope &scope) {
  auto found = buffers.find(value);
  if (found != buffers.end())
    return &found->second;
  Location loc = value.getLoc();
  OpBuilder entryBuilder = beforeNest(scope);
  Operation *&previous = lastBufferOf[scope.capacity];
  // A scalar per iteration, or a tensor per iteration (the buffer has one
  // leading dimension more, and the tensor's dynamic sizes, the same in
  // every iteration, are computed before the nest).
  auto tensorType = dyn_cast<RankedTensorType>(value.getType());
  Buffer buffer;
  bool checkSizes = false;
  SmallVector<int64_t> shape = {ShapedType::kDynamic};
  if (tensorType) {
    llvm::append_range(shape, tensorType.getShape());
    FailureOr<SmallVector<Value>> sizes =
        InvariantSizes(entryBuilder).dynamicSizes(value, checkSizes);
    if (failed(sizes))
      return nullptr;
    buffer.sizes = std::move(*sizes);
  }
  auto type = MemRefType::get(
      shape, tensorType ? tensorType.getElementType() : value.getType());
  SmallVector<Value> allocSizes = {scope.capacity};
  llvm::append_range(allocSizes, buffer.sizes);
  auto alloc = memref::AllocOp::create(entryBuilder, loc, type, allocSizes);
  previous = alloc;
  buffer.memref = alloc;
  // Store once both the value and the iteration's index exist.
  OpBuilder storeBuilder = builderAfterBoth(value, scope.linearIndex);
  if (checkSizes) {
    // Sizes taken to be equal without a proof: each store checks them.
    auto size = buffer.sizes.begin();
    for (int64_t dim = 0; dim < tensorType.getRank(); ++dim) {
      if (!tensorType.isDynamicDim(dim))
        continue;
      Value actual = tensor::DimOp::create(storeBuilder, loc, value, dim);
      Value same = arith::CmpIOp::create(
          storeBuilder, loc, arith::CmpIPredicate::eq, actual, *size++);
      cf::AssertOp::create(
          storeBuilder, loc, same,
          "the derivative keeps this tensor in every iteration of its loop "
          "nest, in a buffer sized before the nest, and its size changed "
          "from one iteration to another");
    }
  }
  if (tensorType)
    bufferization::MaterializeInDestinationOp::create(
        storeBuilder, loc, /*result=*/Type(), value,
        iterationSlice(storeBuilder, loc, alloc, scope.linearIndex,
                       buffer.sizes),
        storeBuilder.getUnitAttr(), storeBuilder.getUnitAttr());
  else
    memref::StoreOp::create(storeBuilder, loc, value, alloc,
                            scope.linearIndex);
  return &(buffers[value] = std::move(buffer));
}

Value IterationBuffers::storeAndRead(Value value, const TapeRead &read) {
  auto tensorType = dyn_cast<RankedTensorType>(value.getType());
  if (!value.getType().isIntOrIndexOrFloat() && !tensorType)
    return Value();
  // A value defined in a branch of a loop body is stored where it is
  // defined, in its body's scope.
  const Scope *scope = scopeContaining(value.getParentBlock());
  assert(scope && "storing a value the storage covers");
  // An index the same in every iteration (a size, often) is computed before
  // the nest instead.
  if (value.getType().isIndex()) {
    auto [invariant, inserted] = invariants.try_emplace(value);
    if (inserted) {
      OpBuilder entryBuilder = beforeNest(*scope);
      FailureOr<Value> computed =
          InvariantSizes(entryBuilder).invariantIndex(value);
      if (succeeded(computed))
        invariant->second = *computed;
    }
    if (invariant->second)
      return read.pass(invariant->second);
  }
  const Buffer *buffer = bufferOf(value, *scope);
  if (!buffer)
    return Value();
  Value memref = read.pass(buffer->memref);
  OpBuilder &b = read.builder;
  Location loc = value.getLoc();
  if (tensorType) {
    SmallVector<Value> sizes =
        llvm::map_to_vector(buffer->sizes, [&](Value size) {
          return read.pass(size);
        });
    return bufferization::ToTensorOp::create(
        b, loc, tensorType,
        iterationSlice(b, loc, memref, read.position, sizes),
        /*restrict=*/true, /*writable=*/false);
  }
  return memref::LoadOp::create(b, loc, memref, read.position);
}

//===----------------------------------------------------------------------===//
// TapeRows
//===----------------------------------------------------------------------===//

/// Attributes naming the value stored (tape number, index in its
/// `stored`) on its slot numbers and its store, for mergeSlots.
static constexpr StringLiteral kSlotOfAttrName = "ad.slot_of";
static constexpr StringLiteral kStoreOfAttrName = "ad.store_of";
/// And on the placeholders of a tape's row width (its number).
static constexpr StringLiteral kWidthOfAttrName = "ad.width_of";

static Attribute slotOfAttr(const GrowableTape &tape, unsigned id) {
  Builder b(tape.forwardWidth->getContext());
  return b.getDenseI32ArrayAttr({int32_t(tape.number), int32_t(id)});
}

GrowableTape &TapeRows::tape(Operation *key) {
  bool isNew = !tapes.contains(key);
  GrowableTape &tape = tapes[key];
  if (isNew)
    tape.number = tapes.size() - 1;
  if (!tape.forwardWidth) {
    OpBuilder prologue = OpBuilder::atBlockBegin(forwardEntry);
    tape.forwardWidth =
        arith::ConstantIndexOp::create(prologue, key->getLoc(), 0);
    tape.forwardWidth->setAttr(kWidthOfAttrName,
                               prologue.getI32IntegerAttr(tape.number));
  }
  return tape;
}

void TapeRows::beginRows(Block *forwardBlock, Operation *key,
                         Operation *kind, Value row, Value buffer) {
  scopes[forwardBlock] = {key, kind, row, buffer};
}

bool TapeRows::storeRowsAtEnd(Block *forwardBlock, Value row, Value buffer) {
  auto it = scopes.find(forwardBlock);
  // A value already stored went to the row the block started with.
  if (it == scopes.end() || !this->tape(it->second.key).slots.empty())
    return false;
  it->second.row = row;
  it->second.buffer = buffer;
  it->second.atEnd = true;
  return true;
}

bool TapeRows::covers(Value value) const {
  return coversBlock(value.getParentBlock());
}

/// The slot of `value` in the rows of its growable tape, storing it there
/// in every iteration (once per value).
unsigned TapeRows::store(Value value, const Scope &scope) {
  GrowableTape &tape = this->tape(scope.key);
  unsigned &kindWidth = tape.kindWidth[scope.kind];
  auto [it, inserted] = tape.slots.insert({value, kindWidth});
  if (!inserted)
    return it->second;
  kindWidth += slotsFor(value.getType());
  tape.width = std::max(tape.width, kindWidth);
  Location loc = value.getLoc();
  OpBuilder b = builderAfterBoth(value, scope.buffer);
  // After the row's number too (a loop computes it from its induction
  // variable at the start of its body; a carried value is defined before).
  if (Operation *rowDef = scope.row.getDefiningOp();
      rowDef && rowDef->getBlock() == b.getInsertionBlock() &&
      b.getInsertionPoint() != b.getInsertionBlock()->end() &&
      !rowDef->isBeforeInBlock(&*b.getInsertionPoint()))
    b.setInsertionPointAfter(rowDef);
  // The buffer current where the store goes (at the end: the last one).
  Operation *def = value.getDefiningOp();
  Value buffer = scope.buffer;
  for (Value candidate : scope.atEnd ? ArrayRef<Value>() : tape.bufferHistory) {
    Operation *candidateDef = candidate.getDefiningOp();
    if (def && candidateDef && candidateDef->getBlock() == def->getBlock() &&
        (candidateDef == def || candidateDef->isBeforeInBlock(def)))
      buffer = candidate;
  }
  Value width = tape.forwardWidth->getResult(0);
  Value base = arith::MulIOp::create(b, loc, scope.row, width);
  if (tape.restartable) {
    // A row past the end goes to the last row (the caller runs the
    // recursion again on a larger tape).
    Value capacity = memref::DimOp::create(
        b, loc, buffer, arith::ConstantIndexOp::create(b, loc, 0));
    base = arith::MinUIOp::create(
        b, loc, base, arith::SubIOp::create(b, loc, capacity, width));
  }
  Value slot = arith::ConstantIndexOp::create(b, loc, it->second);
  Value index = arith::AddIOp::create(b, loc, base, slot);
  unsigned id = tape.stored.size();
  tape.storedIndex[value] = id;
  tape.stored.push_back({scope.kind, slotsFor(value.getType())});
  slot.getDefiningOp()->setAttr(kSlotOfAttrName, slotOfAttr(tape, id));
  if (auto tensorType = dyn_cast<RankedTensorType>(value.getType()))
    bufferization::MaterializeInDestinationOp::create(
        b, loc, /*result=*/Type(), encodeAsF64(b, loc, value),
        rowSlots(b, loc, buffer, index, tensorType.getShape()),
        b.getUnitAttr(), b.getUnitAttr());
  else
    memref::StoreOp::create(b, loc, encodeAsF64(b, loc, value), buffer, index)
        ->setAttr(kStoreOfAttrName, slotOfAttr(tape, id));
  return it->second;
}

Value TapeRows::storeAndRead(Value value, const TapeRead &read) {
  if (!slotsFor(value.getType()))
    return Value();
  auto it = scopes.find(value.getParentBlock());
  assert(it != scopes.end() && "storing a value the storage covers");
  const Scope &scope = it->second;
  unsigned slot = store(value, scope);
  GrowableTape &tape = this->tape(scope.key);
  Value buffer =
      tape.pullbackBuffer ? tape.pullbackBuffer : read.pass(tape.buffer);
  if (!tape.pullbackWidth) {
    OpBuilder prologue = OpBuilder::atBlockBegin(read.pullbackEntry);
    tape.pullbackWidth =
        arith::ConstantIndexOp::create(prologue, scope.key->getLoc(), 0);
    tape.pullbackWidth->setAttr(kWidthOfAttrName,
                                prologue.getI32IntegerAttr(tape.number));
  }
  Location loc = value.getLoc();
  OpBuilder &b = read.builder;
  Value base = arith::MulIOp::create(b, loc, read.position,
                                     tape.pullbackWidth->getResult(0));
  Value slotNumber = arith::ConstantIndexOp::create(b, loc, slot);
  slotNumber.getDefiningOp()->setAttr(
      kSlotOfAttrName, slotOfAttr(tape, tape.storedIndex.lookup(value)));
  Value index = arith::AddIOp::create(b, loc, base, slotNumber);
  Value slotValue;
  if (auto tensorType = dyn_cast<RankedTensorType>(value.getType()))
    slotValue = bufferization::ToTensorOp::create(
        b, loc, tensorType.clone(b.getF64Type()),
        rowSlots(b, loc, buffer, index, tensorType.getShape()),
        /*restrict=*/true, /*writable=*/false);
  else
    slotValue = memref::LoadOp::create(b, loc, buffer, index);
  return decodeFromF64(b, loc, slotValue, value.getType());
}

void TapeRows::finalize() {
  for (auto &[key, tape] : tapes) {
    if (tape.widthOfRecursion)
      continue; // The generator sets the recursion's width.
    auto width = IntegerAttr::get(IndexType::get(key->getContext()),
                                  tape.width);
    for (Operation *placeholder : {tape.forwardWidth, tape.pullbackWidth})
      if (placeholder)
        placeholder->setAttr("value", width);
  }
}

/// The value a chain of casts (bitcasts, index casts, extensions: those
/// the encoding for the tape makes, and the program's own) starts from,
/// and the chain (each op's name and result type): two stored values with
/// the same start and chain are the same value.
static std::pair<Value, SmallVector<std::pair<OperationName, Type>>>
castChain(Value stored) {
  SmallVector<std::pair<OperationName, Type>> chain;
  while (Operation *def = stored.getDefiningOp()) {
    if (!isa<arith::BitcastOp, arith::IndexCastOp, arith::IndexCastUIOp,
             arith::ExtUIOp, arith::ExtSIOp, arith::ExtFOp>(def))
      break;
    chain.push_back({def->getName(), stored.getType()});
    stored = def->getOperand(0);
  }
  return {stored, chain};
}

void TapeRows::mergeSlots(ArrayRef<Operation *> functions, bool merge) {
  // The ops naming each value stored, by tape and index.
  DenseMap<std::pair<int32_t, int32_t>, SmallVector<Operation *, 2>> numbers;
  DenseMap<std::pair<int32_t, int32_t>, memref::StoreOp> stores;
  DenseMap<int32_t, SmallVector<Operation *, 2>> widths;
  for (Operation *function : functions)
    function->walk([&](Operation *op) {
      if (auto attr = op->getAttrOfType<IntegerAttr>(kWidthOfAttrName)) {
        widths[attr.getInt()].push_back(op);
        op->removeAttr(kWidthOfAttrName);
      }
      if (auto attr = op->getAttrOfType<DenseI32ArrayAttr>(kSlotOfAttrName)) {
        numbers[{attr[0], attr[1]}].push_back(op);
        op->removeAttr(kSlotOfAttrName);
      }
      if (auto attr = op->getAttrOfType<DenseI32ArrayAttr>(kStoreOfAttrName)) {
        stores[{attr[0], attr[1]}] = cast<memref::StoreOp>(op);
        op->removeAttr(kStoreOfAttrName);
      }
    });
  if (!merge)
    return;
  for (auto &[key, tape] : tapes) {
    int32_t number = tape.number;
    // Per kind and start of the cast chain: the stores kept, and the new
    // numbers.
    DenseMap<std::pair<Operation *, Value>, SmallVector<unsigned, 1>> kept;
    DenseMap<Operation *, unsigned> next;
    SmallVector<unsigned> renumbered(tape.stored.size());
    for (auto [index, record] : llvm::enumerate(tape.stored)) {
      memref::StoreOp store = stores.lookup({number, int32_t(index)});
      if (store) {
        auto [start, chain] = castChain(store.getValueToStore());
        SmallVector<unsigned, 1> &same = kept[{record.kind, start}];
        auto duplicate = llvm::find_if(same, [&](unsigned other) {
          memref::StoreOp first = stores.lookup({number, int32_t(other)});
          return first->getBlock() == store->getBlock() &&
                 castChain(first.getValueToStore()).second == chain;
        });
        if (duplicate != same.end()) {
          renumbered[index] = renumbered[*duplicate];
          store->erase();
          continue;
        }
        same.push_back(index);
      }
      unsigned &slot = next[record.kind];
      renumbered[index] = slot;
      slot += record.size;
    }
    unsigned width = 0;
    for (auto &[kind, slots] : next)
      width = std::max(width, slots);
    for (auto [index, record] : llvm::enumerate(tape.stored))
      for (Operation *op : numbers.lookup({number, int32_t(index)}))
        op->setAttr("value", IntegerAttr::get(IndexType::get(op->getContext()),
                                              renumbered[index]));
    tape.width = width;
    // The placeholders still here (the generator sets a recursion's).
    if (!tape.widthOfRecursion)
      for (Operation *op : widths.lookup(number))
        op->setAttr("value",
                    IntegerAttr::get(IndexType::get(op->getContext()), width));
  }
}

//===----------------------------------------------------------------------===//
// BranchTape
//===----------------------------------------------------------------------===//

bool BranchTape::covers(Value value) const {
  if (!enabled || !isa<OpResult>(value) ||
      isa<RankedTensorType>(value.getType()) || slotsFor(value.getType()) != 1)
    return false;
  unsigned depth = 0;
  for (Block *block = value.getParentBlock(); block != forwardEntry;
       block = block->getParentOp()->getBlock()) {
    if (!branches.contains(block->getParentOp()))
      return false;
    ++depth;
  }
  return depth >= kBranchTapeDepth;
}

Value BranchTape::storeAndRead(Value value, const TapeRead &read) {
  assert(covers(value) && "storing a value the storage covers");
  Location loc = value.getLoc();
  auto [it, inserted] = slots.insert({value, slots.size()});
  if (inserted) {
    if (!buffer) {
      OpBuilder prologue = OpBuilder::atBlockBegin(forwardEntry);
      widthPlaceholder = arith::ConstantIndexOp::create(prologue, loc, 0);
      buffer = memref::AllocOp::create(
          prologue, loc,
          MemRefType::get({ShapedType::kDynamic}, prologue.getF64Type()),
          widthPlaceholder->getResult(0));
    }
    OpBuilder b(value.getContext());
    b.setInsertionPointAfterValue(value);
    memref::StoreOp::create(
        b, loc, encodeAsF64(b, loc, value), buffer,
        ValueRange{arith::ConstantIndexOp::create(b, loc, it->second)});
  }
  OpBuilder &b = read.builder;
  Value loaded = memref::LoadOp::create(
      b, loc, read.pass(buffer),
      ValueRange{arith::ConstantIndexOp::create(b, loc, it->second)});
  return decodeFromF64(b, loc, loaded, value.getType());
}

void BranchTape::finalize() {
  if (widthPlaceholder)
    widthPlaceholder->setAttr(
        "value", IntegerAttr::get(IndexType::get(forwardEntry->getParentOp()
                                                     ->getContext()),
                                  slots.size()));
}

Value BranchTape::passAsTensor(BlockArgument argument,
                               OpBuilder &forwardBuilder) {
  unsigned width = slots.size();
  auto alloc = buffer.getDefiningOp<memref::AllocOp>();
  Location loc = alloc.getLoc();
  Type f64 = Float64Type::get(alloc.getContext());
  OpBuilder b(alloc);
  Value fixed = memref::AllocOp::create(b, loc, MemRefType::get({width}, f64));
  alloc.replaceAllUsesWith(
      memref::CastOp::create(b, loc, alloc.getType(), fixed).getResult());
  alloc.erase();
  buffer = fixed;
  if (widthPlaceholder && widthPlaceholder->use_empty()) {
    widthPlaceholder->erase();
    widthPlaceholder = nullptr;
  }
  auto tensorType = RankedTensorType::get({width}, f64);
  Value tensor = bufferization::ToTensorOp::create(
      forwardBuilder, loc, tensorType, fixed, /*restrict=*/true,
      /*writable=*/false);
  argument.setType(tensorType);
  for (Operation *user : llvm::make_early_inc_range(argument.getUsers())) {
    auto load = cast<memref::LoadOp>(user);
    OpBuilder reader(load);
    load.replaceAllUsesWith(tensor::ExtractOp::create(reader, load.getLoc(),
                                                      argument,
                                                      load.getIndices())
                                .getResult());
    load.erase();
  }
  return tensor;
}
