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
#include "ad/IR/TapeUtils.h"
#include "ad/Transforms/ActivityAnalysis.h"
#include "ad/Transforms/Passes.h"

#include "mlir/Analysis/CallGraph.h"
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

#include "llvm/ADT/SCCIterator.h"

#include <numeric>

using namespace mlir;
using namespace mlir::ad;

namespace {

/// What both sweeps answer the same way: a builder appending to the body of
/// the function being emitted, activity, and derivatives of callees.
template <typename EmitterT>
class Sweep : public EmitterT {
public:
  Sweep(DerivativeGenerator &generator, const ActivityAnalysis &activity,
        func::FuncOp function, Block *body)
      : generator(generator), activity(activity), function(function),
        builder(OpBuilder::atBlockEnd(body)) {}

  OpBuilder &getBuilder() override { return builder; }
  bool isActive(Value original) const override {
    return activity.isActive(original);
  }
  bool isVaried(Value original) const override {
    return activity.isVaried(original);
  }
  FailureOr<DerivativeFunctions>
  getDerivativeFunctions(func::FuncOp callee, ArrayRef<int64_t> wrt,
                         Operation *requester) override {
    return generator.getOrCreate(callee, wrt, requester);
  }
  bool isSameRecursion(func::FuncOp callee) override {
    return generator.inSameRecursion(function, callee);
  }
  func::FuncOp lookupCallee(func::CallOp call) override {
    return generator.lookupFunction(call.getCalleeAttr());
  }

protected:
  DerivativeGenerator &generator;
  const ActivityAnalysis &activity;
  /// The original function being differentiated.
  func::FuncOp function;
  OpBuilder builder;
};

/// A forward loop body whose values may be stored per iteration.
struct ForwardLoopScope {
  /// Position of the current iteration among all iterations of the loop nest
  /// (defined at the start of the body).
  Value linearIndex;
  /// Number of iterations of the whole nest, defined in the forward entry
  /// block before the op that contains the loop.
  Value capacity;
};

/// The growable tape of one loop whose trip count is unknown at entry: rows
/// of `width` f64 slots, one row per iteration, doubled when full.
struct GrowableTape {
  /// Current forward values of the buffer and of the next free row.
  Value buffer, nextRow;
  /// Placeholders for the row width, set once the adjoint is complete.
  Operation *forwardWidth = nullptr, *pullbackWidth = nullptr;
  /// Slot of each forward value stored per row.
  llvm::MapVector<Value, unsigned> slots;
  /// Slots per row so far (a tensor takes one per element).
  unsigned width = 0;
  /// The pullback's value of the final buffer when it is an argument.
  Value pullbackBuffer;
  /// Every forward value the buffer took, in program order: a store goes to
  /// the buffer current where it is inserted (a call may have reallocated
  /// the one the row started with).
  SmallVector<Value> bufferHistory;
  /// Whether the rows are those of a recursive callee (a call's tape), whose
  /// width the generator sets.
  bool filledByRecursion = false;
};

/// A forward block whose values the adjoint reads from a row of a growable
/// tape.
struct ForwardRowScope {
  Operation *originalLoop = nullptr;
  Value row, buffer;
};

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

/// Whether a branch op can carry a value of `type` out: scalars, ranked
/// tensors, and buffers with the identity layout (the tape of a recursive
/// callee).
static bool canCarryOut(Type type) {
  auto memrefType = dyn_cast<MemRefType>(type);
  return type.isIntOrIndexOrFloat() || isa<RankedTensorType>(type) ||
         (memrefType && memrefType.getLayout().isIdentity());
}

/// What a branch not taken yields for a value another branch carries out
/// (never read: the reverse sweep replays the branch taken): zero, or an
/// empty tensor or buffer (dynamic sizes zero).
static Value placeholderOf(OpBuilder &b, Location loc, Type type) {
  auto shapedType = dyn_cast<ShapedType>(type);
  if (!shapedType)
    return arith::ConstantOp::create(b, loc,
                                     cast<TypedAttr>(b.getZeroAttr(type)));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> sizes(shapedType.getNumDynamicDims(), zero);
  if (auto memrefType = dyn_cast<MemRefType>(type))
    return memref::AllocOp::create(b, loc, memrefType, sizes);
  return tensor::EmptyOp::create(b, loc, cast<RankedTensorType>(type), sizes);
}

/// How many f64 slots of a growable tape's row a value of `type` takes: one
/// for an index or a scalar of at most 64 bits (its bits, or its value
/// extended to f64), one per element for a statically shaped tensor of such
/// floats or of integers of at most 32 bits (exact in f64), none (it cannot
/// be stored there) otherwise.
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
/// dimension, then a tensor's shape) that holds iteration `index`.
static Value iterationSlice(OpBuilder &b, Location loc, Value buffer,
                            Value index) {
  auto type = cast<MemRefType>(buffer.getType());
  ArrayRef<int64_t> shape = type.getShape().drop_front();
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  offsets[0] = index;
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)};
  for (int64_t size : shape)
    sizes.push_back(b.getIndexAttr(size));
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  MemRefType sliceType = memref::SubViewOp::inferRankReducedResultType(
      shape, type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, sliceType, buffer, offsets, sizes,
                                   strides);
}

/// The forward sweep over one function.
class ForwardSweep : public Sweep<ForwardEmitter> {
public:
  ForwardSweep(DerivativeGenerator &generator,
               const ActivityAnalysis &activity, func::FuncOp function,
               Block *entry)
      : Sweep(generator, activity, function, entry), entry(entry) {}

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
    originalOf.try_emplace(builder.getInsertionBlock(), &original);
    for (Operation &op : original) {
      if (&op == original.getTerminator() && !withTerminator)
        break;
      if (failed(emitOp(op)))
        return failure();
    }
    return success();
  }

  void carryOutOnDemand(Operation *forwardBranch) override {
    onDemandBranches.insert(forwardBranch);
  }

  FailureOr<OpBuilder>
  getLoopEntryBuilder(Operation *op, SmallVectorImpl<Value> &values) override {
    for (Block *block = builder.getInsertionBlock(); block != entry;
         block = block->getParentOp()->getBlock()) {
      if (rowScopes.count(block)) {
        generator.emitError(op, "cannot differentiate this loop yet: it is "
                                "nested in a loop whose trip count is "
                                "unknown at entry");
        return failure();
      }
    }
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
    Location loc = iteration.getLoc();
    OpBuilder entryBuilder(entryOpAt(forwardBody));
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

  /// The growable tapes written inside `original` (or by itself), in
  /// program order: those of loops, and the tape of the recursion when
  /// `original` contains a call within it.
  SmallVector<Operation *> growableTapeUsers(Operation *original) {
    llvm::SetVector<Operation *> keys;
    original->walk<WalkOrder::PreOrder>([&](Operation *op) {
      auto rule = dyn_cast<ReverseRuleOpInterface>(op);
      // In a recursive function every loop fills rows of the recursion's
      // tape, so any region op or call may carry it.
      auto call = dyn_cast<func::CallOp>(op);
      if (recursionKey && (isRecursiveCall(op) ||
                           (call && usesSharedTape(call)) ||
                           (rule && op->getNumRegions() > 0)))
        keys.insert(recursionKey);
      else if ((call && usesSharedTape(call)) ||
               (rule && rule.usesGrowableTape()))
        keys.insert(tapeKeyOf(op));
    });
    return keys.takeVector();
  }

  bool inRecursion() override { return recursionKey != nullptr; }

  bool usesSharedTape(func::CallOp call) override {
    func::FuncOp callee = generator.lookupFunction(call.getCalleeAttr());
    if (!callee || callee.isExternal() ||
        !generator.inSameRecursion(callee, callee) ||
        generator.inSameRecursion(function, callee))
      return false;
    if (recursionKey)
      return true;
    for (Operation *parent = call->getParentOp(); parent != function;
         parent = parent->getParentOp())
      if (isa<scf::ForOp, scf::WhileOp>(parent))
        return true;
    return false;
  }

  void shareTapeWith(Operation *originalCall, func::FuncOp callee) override {
    if (recursionKey) {
      generator.shareRecursionTape(function, callee);
      return;
    }
    // Every such call in this function fills one tape (see tapeKeyOf): the
    // recursions of all their callees get one row width.
    GrowableTape &tape = growableTape(tapeKeyOf(originalCall));
    if (tape.filledByRecursion) {
      generator.shareRecursionTape(firstSharedCallee, callee);
      return;
    }
    tape.filledByRecursion = true;
    firstSharedCallee = callee;
    generator.addRecursionWidth(callee, tape.forwardWidth, 0);
  }

  /// The callee of the first call that filled the function's shared tape.
  func::FuncOp firstSharedCallee;

  /// The tape `original` writes its rows to: its own; in a recursive
  /// function the recursion's; for a call of a recursive function from a
  /// loop, the one all such calls of the function share (keyed by it).
  Operation *tapeKeyOf(Operation *original) {
    if (recursionKey)
      return recursionKey;
    auto call = dyn_cast<func::CallOp>(original);
    return call && usesSharedTape(call) ? function.getOperation() : original;
  }

  /// Whether `op` calls a function of the recursion being differentiated.
  bool isRecursiveCall(Operation *op) {
    auto call = dyn_cast<CallOpInterface>(op);
    if (!call)
      return false;
    auto symbol = dyn_cast<SymbolRefAttr>(call.getCallableForCallee());
    func::FuncOp callee = generator.lookupFunction(symbol);
    return callee && generator.inSameRecursion(function, callee);
  }

  /// When generating the recursive versions: the original function, whose
  /// invocations each fill one row of the shared tape.
  Operation *recursionKey = nullptr;

  SmallVector<Value> getCarriedTapes(Operation *original) override {
    SmallVector<Value> values;
    for (Operation *user : growableTapeUsers(original)) {
      GrowableTape &tape = growableTape(user);
      if (!tape.buffer) {
        Location loc = user->getLoc();
        tape.buffer = createGrowableTape(builder, loc,
                                         tape.forwardWidth->getResult(0));
        tape.nextRow = arith::ConstantIndexOp::create(builder, loc, 0);
      }
      values.push_back(tape.buffer);
      values.push_back(tape.nextRow);
    }
    return values;
  }

  void setCarriedTapes(Operation *original, ValueRange values) override {
    for (auto [index, user] : llvm::enumerate(growableTapeUsers(original))) {
      GrowableTape &tape = growableTape(user);
      tape.buffer = values[2 * index];
      tape.nextRow = values[2 * index + 1];
      tape.bufferHistory.push_back(tape.buffer);
    }
  }

  Value getRowWidth(Operation *originalWhile) override {
    return growableTape(tapeKeyOf(originalWhile)).forwardWidth->getResult(0);
  }

  void beginRows(Block *forwardBlock, Operation *originalWhile, Value row,
                 Value tape) override {
    rowScopes[forwardBlock] = {tapeKeyOf(originalWhile), row, tape};
  }

  /// The growable tape of `originalLoop`, created empty on first use.
  GrowableTape &growableTape(Operation *originalLoop) {
    GrowableTape &tape = growableTapes[originalLoop];
    if (!tape.forwardWidth) {
      OpBuilder prologue = OpBuilder::atBlockBegin(entry);
      tape.forwardWidth =
          arith::ConstantIndexOp::create(prologue, originalLoop->getLoc(), 0);
    }
    return tape;
  }

  /// The row scope of forward block `block`, or null.
  const ForwardRowScope *rowScopeOf(Block *block) const {
    auto it = rowScopes.find(block);
    return it == rowScopes.end() ? nullptr : &it->second;
  }

  /// The slot of `value` in the rows of its growable tape, storing it there
  /// in every iteration (once per value).
  unsigned storeInRow(Value value, const ForwardRowScope &scope) {
    GrowableTape &tape = growableTape(scope.originalLoop);
    auto [it, inserted] = tape.slots.insert({value, tape.width});
    if (!inserted)
      return it->second;
    tape.width += slotsFor(value.getType());
    Location loc = value.getLoc();
    OpBuilder b = builderAfterBoth(value, scope.buffer);
    Operation *def = value.getDefiningOp();
    Value buffer = scope.buffer;
    for (Value candidate : tape.bufferHistory) {
      Operation *candidateDef = candidate.getDefiningOp();
      if (def && candidateDef && candidateDef->getBlock() == def->getBlock() &&
          (candidateDef == def || candidateDef->isBeforeInBlock(def)))
        buffer = candidate;
    }
    Value base = arith::MulIOp::create(b, loc, scope.row,
                                       tape.forwardWidth->getResult(0));
    Value slot = arith::ConstantIndexOp::create(b, loc, it->second);
    Value index = arith::AddIOp::create(b, loc, base, slot);
    if (auto tensorType = dyn_cast<RankedTensorType>(value.getType()))
      bufferization::MaterializeInDestinationOp::create(
          b, loc, /*result=*/Type(), encodeAsF64(b, loc, value),
          rowSlots(b, loc, buffer, index, tensorType.getShape()),
          b.getUnitAttr(), b.getUnitAttr());
    else
      memref::StoreOp::create(b, loc, encodeAsF64(b, loc, value), buffer,
                              index);
    return it->second;
  }

  /// Whether the adjoint reads `value` (a scalar of at most 64 bits, defined
  /// in branch ops nested at least kBranchTapeDepth deep, with no loop
  /// between them and the entry of a non-recursive function) from the
  /// branch tape instead of through results carried out of every level.
  bool storesInBranchTape(Value value) const {
    if (recursionKey || !isa<OpResult>(value) ||
        isa<RankedTensorType>(value.getType()) || slotsFor(value.getType()) != 1)
      return false;
    unsigned depth = 0;
    for (Block *block = value.getParentBlock(); block != entry;
         block = block->getParentOp()->getBlock()) {
      if (!onDemandBranches.contains(block->getParentOp()))
        return false;
      ++depth;
    }
    return depth >= kBranchTapeDepth;
  }

  /// The slot of `value` in the branch tape, storing it there right after
  /// its definition (once per value).
  unsigned storeInBranchTape(Value value) {
    auto [it, inserted] =
        branchTape.slots.insert({value, branchTape.slots.size()});
    if (!inserted)
      return it->second;
    Location loc = value.getLoc();
    if (!branchTape.buffer) {
      OpBuilder prologue = OpBuilder::atBlockBegin(entry);
      branchTape.width = arith::ConstantIndexOp::create(prologue, loc, 0);
      branchTape.buffer = memref::AllocOp::create(
          prologue, loc,
          MemRefType::get({ShapedType::kDynamic}, prologue.getF64Type()),
          branchTape.width->getResult(0));
    }
    OpBuilder b(value.getContext());
    b.setInsertionPointAfterValue(value);
    memref::StoreOp::create(
        b, loc, encodeAsF64(b, loc, value), branchTape.buffer,
        ValueRange{arith::ConstantIndexOp::create(b, loc, it->second)});
    return it->second;
  }

  /// The branch tape (a buffer of f64 slots allocated at entry), once a
  /// value has been stored in it, and its number of slots.
  Value getBranchTape() const { return branchTape.buffer; }
  unsigned getBranchTapeWidth() const { return branchTape.slots.size(); }
  /// Erases the placeholder of the branch tape's width once the buffer is
  /// allocated with a static size.
  void eraseBranchTapeWidthIfUnused() {
    if (branchTape.width && branchTape.width->use_empty()) {
      branchTape.width->erase();
      branchTape.width = nullptr;
    }
  }

  /// Sets every row width now that all slots are known.
  void finalizeGrowableTapes() {
    if (branchTape.width)
      branchTape.width->setAttr(
          "value", IntegerAttr::get(IndexType::get(entry->getParentOp()->getContext()),
                                    branchTape.slots.size()));
    for (auto &[loop, tape] : growableTapes) {
      if (loop == recursionKey || tape.filledByRecursion)
        continue; // Rows of a recursion; the generator sets the width.
      auto width = IntegerAttr::get(IndexType::get(loop->getContext()),
                                    tape.width);
      for (Operation *placeholder : {tape.forwardWidth, tape.pullbackWidth})
        if (placeholder)
          placeholder->setAttr("value", width);
    }
  }

  /// The loop scope whose body is `block`, or null outside loops.
  const ForwardLoopScope *scopeOf(Block *block) const {
    auto it = loopScopes.find(block);
    return it == loopScopes.end() ? nullptr : &it->second;
  }

  /// Where `value` (a forward value) can be read from outside the branch
  /// ops that define it: a placeholder after each branch op it is defined
  /// in directly, which finalizeEscapes turns into a result of that op.
  Value escape(Value value) {
    while (true) {
      if (Value outer = escapes.lookup(value)) {
        value = outer;
        continue;
      }
      Operation *branch = value.getParentBlock()->getParentOp();
      Type type = value.getType();
      if (!onDemandBranches.contains(branch) || !canCarryOut(type))
        return value;
      OpBuilder b(branch->getContext());
      b.setInsertionPointAfter(branch);
      Value placeholder = ub::PoisonOp::create(b, value.getLoc(), type);
      escapeRequests[branch].push_back({value, placeholder});
      escapes[value] = placeholder;
      value = placeholder;
    }
  }

  /// Rebuilds each branch op with a value to carry out, with one more
  /// result per value, and replaces the placeholders by those results.
  /// Call once the forward function is complete.
  void finalizeEscapes() {
    // Outer branch ops first: an inner op's placeholder is yielded by the
    // outer one, and replaced when the inner op is rebuilt in turn.
    SmallVector<Operation *> branches;
    for (auto &entry : escapeRequests)
      branches.push_back(entry.first);
    auto depth = [](Operation *op) {
      unsigned levels = 0;
      for (; op; op = op->getParentOp())
        ++levels;
      return levels;
    };
    llvm::stable_sort(branches, [&](Operation *a, Operation *b) {
      return depth(a) < depth(b);
    });
    for (Operation *branch : branches)
      carryOut(branch, escapeRequests[branch]);
    escapeRequests.clear();
  }

  /// A value a branch op carries out, and the placeholder standing for it.
  struct EscapeRequest {
    Value value, placeholder;
  };

  /// Rebuilds `branch` with one more result per carried slot. Only one
  /// region runs, so values of different regions share a slot when their
  /// types match (the adjoint reads each only in the reverse of its own
  /// region): what the op carries out grows as the largest region, not as
  /// their sum (a callee's tape from calls in both branches is one result).
  static void carryOut(Operation *branch,
                       MutableArrayRef<EscapeRequest> requests) {
    OpBuilder b(branch);
    Location loc = branch->getLoc();
    unsigned numResults = branch->getNumResults();
    // Slot of each request, and per slot its type and value per region.
    struct Slot {
      Type type;
      DenseMap<Block *, Value> values;
    };
    SmallVector<Slot> slots;
    SmallVector<unsigned> slotOf;
    for (EscapeRequest &request : requests) {
      Block *block = request.value.getParentBlock();
      Type type = request.value.getType();
      auto *slot = llvm::find_if(slots, [&](const Slot &candidate) {
        return candidate.type == type && !candidate.values.contains(block);
      });
      if (slot == slots.end()) {
        slots.emplace_back();
        slots.back().type = type;
        slot = std::prev(slots.end());
      }
      slot->values[block] = request.value;
      slotOf.push_back(slot - slots.begin());
    }
    OperationState state(loc, branch->getName());
    state.addOperands(branch->getOperands());
    state.addAttributes(llvm::to_vector(branch->getDiscardableAttrs()));
    state.propertiesAttr = branch->getPropertiesAsAttribute();
    state.addTypes(branch->getResultTypes());
    for (const Slot &slot : slots)
      state.addTypes(slot.type);
    for (unsigned i = 0; i < branch->getNumRegions(); ++i)
      state.addRegion();
    Operation *rebuilt = b.create(state);
    for (auto [index, region] : llvm::enumerate(branch->getRegions())) {
      Region &target = rebuilt->getRegion(index);
      Block *original = region.empty() ? nullptr : &region.front();
      target.takeBody(region);
      if (target.empty())
        continue;
      Block &block = target.front();
      assert(&block == original && "taking a body keeps its blocks");
      (void)original;
      Operation *terminator = block.getTerminator();
      OpBuilder yieldBuilder(terminator);
      SmallVector<Value> carried;
      for (const Slot &slot : slots) {
        Value value = slot.values.lookup(&block);
        carried.push_back(value ? value
                                : placeholderOf(yieldBuilder, loc, slot.type));
      }
      terminator->insertOperands(terminator->getNumOperands(), carried);
    }
    branch->replaceAllUsesWith(rebuilt->getResults().take_front(numResults));
    for (auto [index, request] : llvm::enumerate(requests)) {
      request.placeholder.replaceAllUsesWith(
          rebuilt->getResult(numResults + slotOf[index]));
      request.placeholder.getDefiningOp()->erase();
    }
    branch->erase();
  }

  /// A buffer of `scope.capacity` elements, filled with `value` at each
  /// iteration of the loop nest (created once per value).
  Value storePerIteration(Value value, const ForwardLoopScope &scope) {
    if (Value buffer = perIterationBuffers.lookup(value))
      return buffer;
    Location loc = value.getLoc();
    // Right after the capacity: the op that contained the loop when it was
    // emitted may have been replaced since (a branch op is rebuilt once its
    // results are known).
    OpBuilder entryBuilder(value.getContext());
    Operation *&previous = lastBufferOf[scope.capacity];
    if (previous)
      entryBuilder.setInsertionPointAfter(previous);
    else
      entryBuilder.setInsertionPointAfterValue(scope.capacity);
    // A scalar per iteration, or a statically shaped tensor per iteration
    // (the buffer has one leading dimension more).
    auto tensorType = dyn_cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape = {ShapedType::kDynamic};
    if (tensorType)
      llvm::append_range(shape, tensorType.getShape());
    auto type = MemRefType::get(
        shape, tensorType ? tensorType.getElementType() : value.getType());
    auto buffer =
        memref::AllocOp::create(entryBuilder, loc, type, scope.capacity);
    previous = buffer;
    // Store once both the value and the iteration's index exist.
    OpBuilder storeBuilder = builderAfterBoth(value, scope.linearIndex);
    if (tensorType)
      bufferization::MaterializeInDestinationOp::create(
          storeBuilder, loc, /*result=*/Type(), value,
          iterationSlice(storeBuilder, loc, buffer, scope.linearIndex),
          storeBuilder.getUnitAttr(), storeBuilder.getUnitAttr());
    else
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
    bool active = activity.isActive(&op);
    auto rule = dyn_cast<ReverseRuleOpInterface>(&op);
    if (active && !rule) {
      if (isa_and_nonnull<ADDialect>(op.getDialect()))
        generator.emitError(&op, kOwnDerivativeMessage);
      else
        generator.emitError(&op, "no derivative rule for '" +
                                     op.getName().getStringRef() +
                                     "', whose result depends on a "
                                     "differentiated argument");
      return failure();
    }
    // An active call's rule differentiates its callee, whose ops are
    // checked then.
    if (!(active && isa<CallOpInterface>(op)) &&
        failed(checkNoDifferentiableStore(op)))
      return failure();
    if (!active)
      return cloneOp(&op);
    if (failed(checkOperandsCarryDerivatives(op)))
      return failure();
    return rule.emitForward(*this);
  }

  /// Values that depend on a differentiated argument must not flow through
  /// memory: the analysis follows SSA values only, so a write would make
  /// the gradient silently wrong. Looks at `op`, the ops nested in it and
  /// the functions they call (each op once per sweep).
  LogicalResult checkNoDifferentiableStore(Operation &op) {
    return generator.getMemoryWriteCheck().check(
        &op, [&](Value value) { return activity.isVaried(value); },
        memoryChecked, [&](Operation *at, const Twine &message) {
          return generator.emitError(at, message);
        });
  }

  /// An active op whose operand depends on a differentiated argument but
  /// has a type that cannot carry a derivative (an unranked tensor, a
  /// vector, a memref) would drop that operand's cotangent.
  LogicalResult checkOperandsCarryDerivatives(Operation &op) {
    Value operand = findUncarriedOperand(
        &op, [&](Value value) { return activity.isVaried(value); });
    if (!operand)
      return success();
    generator.emitError(&op, describeUncarriedOperand(&op, operand));
    return failure();
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
  /// Branch ops that carry out what the adjoint reads, and what it reads.
  llvm::SmallPtrSet<Operation *, 8> onDemandBranches;
  llvm::MapVector<Operation *, SmallVector<EscapeRequest>> escapeRequests;
  /// Ops the memory-write check has looked at.
  llvm::DenseSet<Operation *> memoryChecked;
  DenseMap<Block *, ForwardLoopScope> loopScopes;
  DenseMap<Value, Value> perIterationBuffers;
  /// Per capacity: the last buffer allocated with it (buffers follow it in
  /// the order they are requested).
  DenseMap<Value, Operation *> lastBufferOf;
  DenseMap<Block *, ForwardRowScope> rowScopes;
  llvm::MapVector<Operation *, GrowableTape> growableTapes;
  /// Scalars of deeply nested branches (see storesInBranchTape).
  struct {
    Value buffer;
    Operation *width = nullptr;
    llvm::MapVector<Value, unsigned> slots;
  } branchTape;
};

/// One iteration of a reverse loop being emitted.
struct ReverseLoopScope {
  Block *originalBody = nullptr;
  /// The loop whose growable tape rows this scope reads, or null for a loop
  /// with a per-iteration buffer.
  Operation *growableLoop = nullptr;
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
               const ActivityAnalysis &activity, func::FuncOp function,
               ForwardSweep &forward, Block *pullbackBody)
      : Sweep(generator, activity, function, pullbackBody), forward(forward),
        body(pullbackBody) {}

  Value getRecursionTape() override { return recursionTape; }
  Value getGrowableTape(Operation *original) override {
    return tapeEntryValue(
        forward.growableTape(forward.tapeKeyOf(original)).buffer);
  }
  bool inRecursion() override { return recursionTape != nullptr; }
  bool usesSharedTape(func::CallOp call) override {
    return forward.usesSharedTape(call);
  }
  /// In a recursive pullback: the shared tape argument.
  Value recursionTape;

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
    Type type = originalResult.getType();
    auto tensorType = dyn_cast<RankedTensorType>(type);
    Value like = tensorType && !tensorType.hasStaticShape()
                     ? getPrimal(originalResult)
                     : Value();
    return createZerosLike(builder, originalResult.getLoc(), type, like);
  }
  void addCotangent(Value originalOperand, Value contribution) override {
    if (activity.isActive(originalOperand))
      cotangents.add(builder, originalOperand, contribution);
  }
  Value lookupCotangent(Value original) override {
    return cotangents.lookup(original);
  }
  void setCotangent(Value original, Value cotangent) override {
    cotangents.set(original, cotangent);
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

  void beginRows(Block *originalBlock, Operation *originalWhile,
                 Value row) override {
    // Loads of this scope go right after the row's definition, which must
    // then be an op here, not a block argument at the top of the function.
    if (isa<BlockArgument>(row)) {
      Location loc = row.getLoc();
      row = arith::AddIOp::create(builder, loc, row,
                                  arith::ConstantIndexOp::create(builder, loc, 0));
    }
    ReverseLoopScope scope;
    scope.originalBody = originalBlock;
    scope.growableLoop = originalWhile;
    scope.linearIndex = row;
    loops.push_back(std::move(scope));
  }

  void endRows(Block *originalBlock) override { endLoop(originalBlock); }

  void resetCotangents(Block &original) override {
    original.walk([&](Block *block) {
      for (Value argument : block->getArguments())
        cotangents.erase(argument);
      for (Operation &op : *block)
        for (Value result : op.getResults())
          cotangents.erase(result);
    });
  }

  /// The whole reverse sweep over function body `original`: seeds the float
  /// results with `seeds`, reverses every op, and returns the gradients of
  /// the arguments at `wrt` (the pullback's return values).
  FailureOr<SmallVector<Value>> reverseFunction(Block &original,
                                                ValueRange seeds,
                                                ArrayRef<int64_t> wrt) {
    auto seed = seeds.begin();
    for (Value returned : original.getTerminator()->getOperands())
      if (isDifferentiableType(returned.getType()))
        addCotangent(returned, *seed++);
    if (failed(emitReverseOps(original)))
      return failure();
    SmallVector<Value> gradients;
    for (int64_t position : wrt)
      gradients.push_back(getCotangent(original.getArgument(position)));
    func::ReturnOp::create(builder, original.getTerminator()->getLoc(),
                           gradients);
    return gradients;
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
    if (forward.storesInBranchTape(value)) {
      Location loc = value.getLoc();
      unsigned slot = forward.storeInBranchTape(value);
      Value buffer = tapeEntryValue(forward.getBranchTape());
      Value loaded = memref::LoadOp::create(
          builder, loc, buffer,
          ValueRange{arith::ConstantIndexOp::create(builder, loc, slot)});
      return decodeFromF64(builder, loc, loaded, value.getType());
    }
    value = forward.escape(value);
    Block *home = value.getParentBlock();
    if (const ForwardRowScope *rows = forward.rowScopeOf(home))
      return loadFromRow(value, *rows, forward.originalBlockOf(home));
    if (home == forward.getEntry())
      return tapeEntryValue(value);
    const ForwardLoopScope *scope = forward.scopeOf(home);
    auto tensorType = dyn_cast<RankedTensorType>(value.getType());
    if (!scope || !(value.getType().isIntOrIndexOrFloat() ||
                    (tensorType && tensorType.hasStaticShape())))
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
      Value loaded =
          tensorType
              ? bufferization::ToTensorOp::create(
                    loadBuilder, value.getLoc(), tensorType,
                    iterationSlice(loadBuilder, value.getLoc(), buffer,
                                   loop.linearIndex),
                    /*restrict=*/true, /*writable=*/false)
                    .getResult()
              : memref::LoadOp::create(loadBuilder, value.getLoc(), buffer,
                                       loop.linearIndex)
                    .getResult();
      loop.loaded[value] = loaded;
      return loaded;
    }
    return failMaterialization(value);
  }

  /// Reads forward value `value`, stored in a row of a growable tape, in the
  /// reverse iteration of `originalHome` being emitted.
  Value loadFromRow(Value value, const ForwardRowScope &rows,
                    Block *originalHome) {
    if (!slotsFor(value.getType()))
      return failMaterialization(value);
    for (ReverseLoopScope &loop : llvm::reverse(loops)) {
      if (loop.originalBody != originalHome)
        continue;
      if (Value loaded = loop.loaded.lookup(value))
        return loaded;
      unsigned slot = forward.storeInRow(value, rows);
      GrowableTape &tape = forward.growableTape(rows.originalLoop);
      Value buffer = tape.pullbackBuffer ? tape.pullbackBuffer
                                         : tapeEntryValue(tape.buffer);
      if (!tape.pullbackWidth) {
        OpBuilder prologue = OpBuilder::atBlockBegin(body);
        tape.pullbackWidth = arith::ConstantIndexOp::create(
            prologue, rows.originalLoop->getLoc(), 0);
      }
      Location loc = value.getLoc();
      OpBuilder b(value.getContext());
      b.setInsertionPointAfterValue(loop.linearIndex);
      Value base = arith::MulIOp::create(b, loc, loop.linearIndex,
                                         tape.pullbackWidth->getResult(0));
      Value index = arith::AddIOp::create(
          b, loc, base, arith::ConstantIndexOp::create(b, loc, slot));
      Value slotValue;
      if (auto tensorType = dyn_cast<RankedTensorType>(value.getType()))
        slotValue = bufferization::ToTensorOp::create(
            b, loc, tensorType.clone(b.getF64Type()),
            rowSlots(b, loc, buffer, index, tensorType.getShape()),
            /*restrict=*/true, /*writable=*/false);
      else
        slotValue = memref::LoadOp::create(b, loc, buffer, index);
      Value loaded = decodeFromF64(b, loc, slotValue, value.getType());
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
          << " for the adjoint of this op yet (only scalars and statically "
             "shaped tensors of floats, of at most 64 bits, can be stored per "
           "iteration)";
    materializeFailed = true;
    OpBuilder prologue = OpBuilder::atBlockBegin(body);
    return ub::PoisonOp::create(prologue, value.getLoc(), value.getType());
  }

  ForwardSweep &forward;
  Block *body;
  DenseMap<Value, Value> availableInPullback;
  CotangentMap cotangents;
  DenseMap<Value, Value> primalOverrides;
  SmallVector<ReverseLoopScope> loops;
  Operation *currentOp = nullptr;
  bool materializeFailed = false;
};

} // namespace

DerivativeGenerator::DerivativeGenerator(ModuleOp module)
    : ownedSymbols(std::make_unique<SymbolTable>(module)),
      symbolTable(*ownedSymbols) {}

DerivativeGenerator::DerivativeGenerator(SymbolTable &symbols)
    : symbolTable(symbols) {}

InFlightDiagnostic DerivativeGenerator::emitError(Operation *op,
                                                  const Twine &message) {
  return emitErrorWithCallChain(op, message, requesters);
}

FailureOr<DerivativeFunctions>
DerivativeGenerator::getOrCreate(func::FuncOp callee, ArrayRef<int64_t> varied,
                                 Operation *requester) {
  auto key = std::make_pair(callee.getOperation(),
                            std::vector<int64_t>(varied.begin(), varied.end()));
  auto it = generated.find(key);
  if (it != generated.end())
    return it->second;
  if (CustomVjpOp rule = lookupCustomVjp(callee)) {
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

CallGraph &DerivativeGenerator::getCallGraph(func::FuncOp function) {
  // Built on demand; rebuilt for a function generated after it.
  if (!callGraph || !callGraph->lookupNode(&function.getBody()))
    callGraph = std::make_unique<CallGraph>(symbolTable.getOp());
  return *callGraph;
}

const llvm::SmallPtrSetImpl<Operation *> &
DerivativeGenerator::reachableFrom(func::FuncOp function) {
  auto it = reachable.find(function);
  if (it != reachable.end())
    return it->second;
  llvm::SmallPtrSet<Operation *, 8> found;
  if (!function.isExternal()) {
    CallGraph &graph = getCallGraph(function);
    SmallVector<CallGraphNode *> worklist = {
        graph.lookupNode(&function.getBody())};
    while (!worklist.empty())
      for (const CallGraphNode::Edge &edge : *worklist.pop_back_val()) {
        CallGraphNode *callee = edge.getTarget();
        if (!callee->isExternal() &&
            found.insert(callee->getCallableRegion()->getParentOp()).second)
          worklist.push_back(callee);
      }
  }
  return reachable[function] = std::move(found);
}

void DerivativeGenerator::invalidateCallGraph() {
  callGraph.reset();
  reachable.clear();
  componentOf.clear();
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

/// The strongly connected components of the module's call graph (upstream
/// CallGraph; llvm::scc_iterator keeps its own stack, so call chains
/// thousands deep are fine). A component is a recursion when it has a
/// cycle (a self call included).
void DerivativeGenerator::computeRecursions() {
  callGraph = std::make_unique<CallGraph>(symbolTable.getOp());
  componentOf.clear();
  componentIsRecursion.clear();
  componentRoot.clear();
  for (auto scc = llvm::scc_begin<const CallGraph *>(callGraph.get());
       !scc.isAtEnd(); ++scc) {
    // The first member by name: the same whichever member asks.
    Operation *root = nullptr;
    unsigned id = componentIsRecursion.size();
    for (CallGraphNode *node : *scc) {
      if (node->isExternal())
        continue;
      auto function =
          dyn_cast<func::FuncOp>(node->getCallableRegion()->getParentOp());
      if (!function)
        continue;
      componentOf[function] = id;
      if (!root ||
          function.getSymName() < cast<func::FuncOp>(root).getSymName())
        root = function;
    }
    if (!root)
      continue;
    componentIsRecursion.push_back(scc.hasCycle());
    componentRoot.push_back(root);
  }
}

bool DerivativeGenerator::inSameRecursion(func::FuncOp a, func::FuncOp b) {
  if (componentOf.empty())
    computeRecursions();
  auto itA = componentOf.find(a), itB = componentOf.find(b);
  if (itA == componentOf.end() || itB == componentOf.end())
    return false;
  return itA->second == itB->second && componentIsRecursion[itA->second];
}

Operation *DerivativeGenerator::recursionRoot(func::FuncOp function) {
  if (componentOf.empty())
    computeRecursions();
  auto it = componentOf.find(function);
  return it == componentOf.end() ? function.getOperation()
                                 : componentRoot[it->second];
}

Operation *DerivativeGenerator::widthGroup(Operation *root) {
  while (Operation *merged = mergedWidths.lookup(root))
    root = merged;
  return root;
}

void DerivativeGenerator::shareRecursionTape(func::FuncOp a, func::FuncOp b) {
  Operation *groupA = widthGroup(recursionRoot(a));
  Operation *groupB = widthGroup(recursionRoot(b));
  if (groupA == groupB)
    return;
  unsigned moved = recursionWidths.lookup(groupB);
  recursionWidths.erase(groupB);
  unsigned &width = recursionWidths[groupA];
  width = std::max(width, moved);
  mergedWidths[groupB] = groupA;
}

void DerivativeGenerator::addRecursionWidth(func::FuncOp function,
                                            Operation *placeholder,
                                            unsigned slots) {
  Operation *root = recursionRoot(function);
  unsigned &width = recursionWidths[widthGroup(root)];
  width = std::max(width, slots);
  if (placeholder)
    placeholder->setAttr(kRowWidthAttrName,
                         cast<func::FuncOp>(root).getSymNameAttr());
}

void DerivativeGenerator::finalize() {
  // Placeholders in functions discarded after a failure went with them;
  // copies made by forward mode are found like the originals.
  symbolTable.getOp()->walk([&](arith::ConstantOp placeholder) {
    auto root = placeholder->getAttrOfType<StringAttr>(kRowWidthAttrName);
    if (!root)
      return;
    Operation *group = widthGroup(symbolTable.lookup(root));
    placeholder.setValueAttr(IntegerAttr::get(
        placeholder.getType(), recursionWidths.lookup(group)));
    placeholder->removeAttr(kRowWidthAttrName);
  });
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

/// A forward function packs its tape into a record when more than this
/// many tape values fit one: small tapes stay scalars in registers.
static constexpr unsigned kRecordThreshold = 16;

unsigned DerivativeGenerator::packTape(
    func::FuncOp forward, func::FuncOp pullback, unsigned numResults,
    unsigned numTapeValues,
    ArrayRef<std::pair<unsigned, unsigned>> ownRecords) {
  auto returnOp = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  Block &pullbackEntry = pullback.getBody().front();
  // What goes in: scalars of at most 64 bits (one slot each), and records
  // of callees (a slice each), at increasing offsets.
  struct Packed {
    unsigned position, offset, width;
    bool isRecord;
  };
  SmallVector<Packed> packed;
  unsigned width = 0;
  // Whether a value passes on part of a callee's tape: only those make the
  // tapes of a chain of calls grow with its depth.
  bool passesCalleeTape = false;
  // The call results `value` stands for: itself, or, for a value carried
  // out of branch ops, what their branches yield.
  auto callSources = [](Value value) {
    SmallVector<OpResult> sources;
    SmallVector<Value> worklist = {value};
    while (!worklist.empty()) {
      auto result = dyn_cast<OpResult>(worklist.pop_back_val());
      if (!result)
        continue;
      Operation *def = result.getOwner();
      if (isa<func::CallOp>(def)) {
        sources.push_back(result);
        continue;
      }
      if (!isa<scf::IfOp, scf::IndexSwitchOp>(def))
        continue;
      for (Region &region : def->getRegions())
        if (!region.empty())
          worklist.push_back(region.front().getTerminator()->getOperand(
              result.getResultNumber()));
    }
    return sources;
  };
  // The callee's record that `source` is, or null.
  auto recordOf = [&](OpResult source) -> const TapeRecord * {
    auto it = records.find(symbolTable.lookup(
        cast<func::CallOp>(source.getOwner()).getCallee()));
    if (it == records.end())
      return nullptr;
    const TapeRecord *record =
        llvm::find_if(it->second, [&](const TapeRecord &candidate) {
          return candidate.resultNumber == source.getResultNumber();
        });
    return record == it->second.end() ? nullptr : record;
  };
  for (unsigned position = 0; position < numTapeValues; ++position) {
    Value value = returnOp.getOperand(numResults + position);
    Type type = value.getType();
    SmallVector<OpResult> sources = callSources(value);
    for (OpResult source : sources) {
      auto count = forwardResultCounts.find(symbolTable.lookup(
          cast<func::CallOp>(source.getOwner()).getCallee()));
      if (count != forwardResultCounts.end() &&
          source.getResultNumber() >= count->second)
        passesCalleeTape = true;
    }
    if (type.isIndex() ||
        (type.isIntOrFloat() && type.getIntOrFloatBitWidth() <= 64)) {
      packed.push_back({position, width, 1, false});
      width += 1;
      continue;
    }
    const auto *own = llvm::find_if(ownRecords, [&](const auto &record) {
      return record.first == position;
    });
    if (own != ownRecords.end()) {
      packed.push_back({position, width, own->second, true});
      width += own->second;
      continue;
    }
    // A callee's record, directly or carried out of branches (where a
    // branch not taken yields a placeholder of the same type).
    const TapeRecord *calleeRecord = nullptr;
    for (OpResult source : sources)
      if ((calleeRecord = recordOf(source)))
        break;
    if (!calleeRecord || type != RankedTensorType::get(
                                     {calleeRecord->width},
                                     Float64Type::get(type.getContext())))
      continue;
    packed.push_back({position, width, calleeRecord->width, true});
    width += calleeRecord->width;
  }
  forwardResultCounts[forward] = numResults;
  if (packed.size() <= kRecordThreshold || !passesCalleeTape) {
    // The callees' records this function passes on stay records.
    for (const Packed &item : packed)
      if (item.isRecord)
        records[forward].push_back({numResults + item.position, item.width});
    return numTapeValues;
  }

  MLIRContext *context = forward.getContext();
  Location loc = returnOp.getLoc();
  Type f64 = Float64Type::get(context);
  auto recordType = RankedTensorType::get({width}, f64);

  // The forward function fills the record: its scalars at once, then the
  // callees' records.
  OpBuilder b(returnOp);
  SmallVector<Value> scalars;
  for (const Packed &item : packed)
    if (!item.isRecord)
      scalars.push_back(
          encodeAsF64(b, loc, returnOp.getOperand(numResults + item.position)));
  Value record;
  if (scalars.size() == packed.size()) {
    record = tensor::FromElementsOp::create(b, loc, recordType, scalars);
  } else {
    record = tensor::EmptyOp::create(b, loc, recordType.getShape(), f64);
    auto insertAt = [&](Value part, unsigned offset, unsigned count) {
      record = tensor::InsertSliceOp::create(
          b, loc, part, record, ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(count)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    };
    unsigned scalarIndex = 0;
    for (const Packed &item : packed) {
      if (item.isRecord) {
        insertAt(returnOp.getOperand(numResults + item.position), item.offset,
                 item.width);
        continue;
      }
      record = tensor::InsertOp::create(
          b, loc, scalars[scalarIndex++], record,
          ValueRange{arith::ConstantIndexOp::create(b, loc, item.offset)});
    }
  }
  SmallVector<Value> results(returnOp.getOperands().take_front(numResults));
  results.push_back(record);
  llvm::BitVector isPacked(numTapeValues);
  for (const Packed &item : packed)
    isPacked.set(item.position);
  for (unsigned position = 0; position < numTapeValues; ++position)
    if (!isPacked.test(position))
      results.push_back(returnOp.getOperand(numResults + position));
  returnOp->setOperands(results);
  forward.setType(FunctionType::get(context, forward.getArgumentTypes(),
                                    ValueRange(results).getTypes()));

  // The pullback takes the record first and reads each part back.
  BlockArgument recordArgument =
      pullbackEntry.insertArgument(0u, recordType, loc);
  OpBuilder reader = OpBuilder::atBlockBegin(&pullbackEntry);
  for (const Packed &item : packed) {
    BlockArgument argument = pullbackEntry.getArgument(1 + item.position);
    Value offset = arith::ConstantIndexOp::create(reader, loc, item.offset);
    Value part;
    if (item.isRecord)
      part = tensor::ExtractSliceOp::create(
          reader, loc, recordArgument,
          ArrayRef<OpFoldResult>{offset},
          ArrayRef<OpFoldResult>{reader.getIndexAttr(item.width)},
          ArrayRef<OpFoldResult>{reader.getIndexAttr(1)});
    else
      part = decodeFromF64(
          reader, loc,
          tensor::ExtractOp::create(reader, loc, recordArgument, offset),
          argument.getType());
    argument.replaceAllUsesWith(part);
  }
  llvm::BitVector erased(pullbackEntry.getNumArguments());
  for (const Packed &item : packed)
    erased.set(1 + item.position);
  pullbackEntry.eraseArguments(erased);
  pullback.setType(FunctionType::get(context, pullbackEntry.getArgumentTypes(),
                                     pullback.getResultTypes()));
  records[forward] = {TapeRecord{numResults, width}};
  return numTapeValues - packed.size() + 1;
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
  forward.finalizeGrowableTapes();
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
  // The branch tape leaves the forward function as a tensor of static
  // shape, which a caller can keep per loop iteration, in a row, or in its
  // record, like any other; the pullback reads it with tensor.extract.
  SmallVector<std::pair<unsigned, unsigned>> ownRecords;
  if (Value buffer = forward.getBranchTape()) {
    auto position = llvm::find(reverse.tape, buffer);
    if (position != reverse.tape.end()) {
      unsigned index = position - reverse.tape.begin();
      unsigned width = forward.getBranchTapeWidth();
      auto alloc = buffer.getDefiningOp<memref::AllocOp>();
      Location loc = alloc.getLoc();
      Type f64 = Float64Type::get(callee.getContext());
      OpBuilder b(alloc);
      Value fixed =
          memref::AllocOp::create(b, loc, MemRefType::get({width}, f64));
      alloc.replaceAllUsesWith(
          memref::CastOp::create(b, loc, alloc.getType(), fixed).getResult());
      alloc.erase();
      forward.eraseBranchTapeWidthIfUnused();
      auto tensorType = RankedTensorType::get({width}, f64);
      reverse.tape[index] = bufferization::ToTensorOp::create(
          forward.getBuilder(), loc, tensorType, fixed, /*restrict=*/true,
          /*writable=*/false);
      BlockArgument argument = pullbackBody->getArgument(index);
      argument.setType(tensorType);
      for (Operation *user : llvm::make_early_inc_range(argument.getUsers())) {
        auto load = cast<memref::LoadOp>(user);
        OpBuilder reader(load);
        load.replaceAllUsesWith(
            tensor::ExtractOp::create(reader, load.getLoc(), argument,
                                      load.getIndices())
                .getResult());
        load.erase();
      }
      ownRecords.push_back({index, width});
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
  func::ReturnOp::create(forwardBuilder, terminator->getLoc(), forwardResults);
  forwardFunction.setType(FunctionType::get(
      callee.getContext(), type.getInputs(),
      ValueRange(forwardResults).getTypes()));
  forward.finalizeEscapes();

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
  SmallVector<Type> recursiveResults(type.getResults());
  recursiveResults.append({tapeType, indexType});
  SmallVector<Type> pullbackInputs = {tapeType, indexType};
  llvm::append_range(pullbackInputs, cotangentTypes);
  SmallVector<Type> entryResults(type.getResults());
  entryResults.push_back(tapeType);
  SmallVector<Type> entryPullbackInputs = {tapeType};
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
  functions.numTapeValues = 1;
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

  // The recursive forward: this invocation fills row `row` of the tape.
  Block *forwardEntry = &recursiveForward.getBody().front();
  ForwardSweep forward(*this, activity, callee, forwardEntry);
  forward.recursionKey = callee;
  forward.mapping.map(original.getArguments(),
                      forwardEntry->getArguments().take_front(numArgs));
  GrowableTape &tape = forward.growableTape(callee);
  Value row = forwardEntry->getArgument(numArgs + 1);
  OpBuilder &forwardBuilder = forward.getBuilder();
  tape.buffer =
      growTapeIfFull(forwardBuilder, loc, forwardEntry->getArgument(numArgs),
                     row, tape.forwardWidth->getResult(0));
  tape.nextRow = arith::AddIOp::create(
      forwardBuilder, loc, row,
      arith::ConstantIndexOp::create(forwardBuilder, loc, 1));
  forward.beginRows(forwardEntry, callee, row, tape.buffer);
  if (failed(forward.emitOps(original, /*withTerminator=*/false)))
    return discard();

  // The recursive pullback reads row `row` of the final tape.
  Block *pullbackEntry = &recursivePullback.getBody().front();
  ReverseSweep reverse(*this, activity, callee, forward, pullbackEntry);
  reverse.recursionTape = pullbackEntry->getArgument(0);
  tape.pullbackBuffer = pullbackEntry->getArgument(0);
  reverse.beginRows(&original, callee, pullbackEntry->getArgument(1));
  Operation *terminator = original.getTerminator();
  if (failed(reverse.reverseFunction(
          original, pullbackEntry->getArguments().drop_front(2), wrt)))
    return discard();
  if (!reverse.tape.empty()) {
    emitError(callee, "cannot differentiate '" + callee.getSymName() +
                          "' yet: its adjoint needs values that do not fit "
                          "in the rows of a recursive function's tape");
    return discard();
  }
  forward.finalizeGrowableTapes();
  addRecursionWidth(callee, tape.forwardWidth, tape.width);
  addRecursionWidth(callee, tape.pullbackWidth, tape.width);

  SmallVector<Value> forwardResults;
  for (Value returned : terminator->getOperands())
    forwardResults.push_back(forward.lookup(returned));
  forwardResults.append({tape.buffer, tape.nextRow});
  func::ReturnOp::create(forwardBuilder, terminator->getLoc(), forwardResults);
  forward.finalizeEscapes();

  // Entry points for callers outside the recursion: a fresh tape, row 0.
  {
    OpBuilder b = OpBuilder::atBlockEnd(&forwardFunction.getBody().front());
    auto width = arith::ConstantIndexOp::create(b, loc, 0);
    addRecursionWidth(callee, width, 0);
    SmallVector<Value> operands(forwardFunction.getArguments());
    operands.push_back(createGrowableTape(b, loc, width));
    operands.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    auto call = func::CallOp::create(b, loc, recursiveForward, operands);
    SmallVector<Value> results(call.getResults().take_front(numResults));
    results.push_back(call.getResult(numResults));
    func::ReturnOp::create(b, loc, results);
  }
  {
    OpBuilder b = OpBuilder::atBlockEnd(&pullbackFunction.getBody().front());
    SmallVector<Value> operands = {pullbackFunction.getArgument(0),
                                   arith::ConstantIndexOp::create(b, loc, 0)};
    llvm::append_range(operands, pullbackFunction.getArguments().drop_front());
    auto call = func::CallOp::create(b, loc, recursivePullback, operands);
    func::ReturnOp::create(b, loc, call.getResults());
  }
  return functions;
}
