//===- ForwardSweep.h - the augmented forward function ----------*- C++ -*-===//
//
// The forward sweep emits the augmented forward function: the original ops,
// each active op emitted by its rule (calls become calls of the callee's
// forward function), and the values the adjoint reads stored on the tape.
// Private to lib/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_TRANSFORMS_FORWARDSWEEP_H
#define AD_LIB_TRANSFORMS_FORWARDSWEEP_H

#include "Sweep.h"

namespace mlir::ad::sweeps {

/// The forward sweep over one function.
class ForwardSweep : public Sweep<ForwardEmitter> {
public:
  ForwardSweep(DerivativeGenerator &generator,
               const ActivityAnalysis &activity, func::FuncOp function,
               Block *entry)
      : Sweep(generator, activity, function, entry), entry(entry),
        rows(entry), branchTape(entry, onDemandBranches) {}
  // The branch tape refers to this sweep's set of branch ops.
  ForwardSweep(const ForwardSweep &) = delete;
  ForwardSweep &operator=(const ForwardSweep &) = delete;

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
      if (rows.coversBlock(block)) {
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
    OpBuilder entryBuilder(entryOpAt(forwardBody));
    iterations.beginLoop(forwardBody, iteration, tripCount, entryBuilder,
                         builder);
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
    // A checkpointed call tapes nothing here: its callee's tape is made
    // and read in the reverse sweep.
    if (!callee || callee.isExternal() || isCheckpointed(call) ||
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
    GrowableTape &tape = rows.tape(tapeKeyOf(originalCall));
    if (tape.widthOfRecursion) {
      generator.shareRecursionTape(firstSharedCallee, callee);
      return;
    }
    tape.widthOfRecursion = true;
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


  SmallVector<Value> getCarriedTapes(Operation *original) override {
    SmallVector<Value> values;
    for (Operation *user : growableTapeUsers(original)) {
      GrowableTape &tape = rows.tape(user);
      if (!tape.buffer) {
        Location loc = user->getLoc();
        tape.rowsHint = generator.createTapeRowsHint(function, loc);
        tape.buffer = createGrowableTape(
            builder, loc, tape.forwardWidth->getResult(0), tape.rowsHint);
        tape.nextRow = arith::ConstantIndexOp::create(builder, loc, 0);
      }
      values.push_back(tape.buffer);
      values.push_back(tape.nextRow);
    }
    return values;
  }

  void setCarriedTapes(Operation *original, ValueRange values) override {
    for (auto [index, user] : llvm::enumerate(growableTapeUsers(original))) {
      GrowableTape &tape = rows.tape(user);
      tape.buffer = values[2 * index];
      tape.nextRow = values[2 * index + 1];
      tape.bufferHistory.push_back(tape.buffer);
    }
  }

  Value getRowWidth(Operation *originalWhile) override {
    return rows.tape(tapeKeyOf(originalWhile)).forwardWidth->getResult(0);
  }

  bool fillsRestartableRows(Operation *original) override {
    return rows.tape(tapeKeyOf(original)).restartable;
  }

  void beginRows(Block *forwardBlock, Operation *originalWhile, Value row,
                 Value tape) override {
    rows.beginRows(forwardBlock, tapeKeyOf(originalWhile), originalWhile,
                   row, tape);
  }

  /// The storage that keeps `value` (a forward value, carried out of the
  /// branch ops holding it) per iteration of its loop or per invocation of
  /// a recursion, or null for a value defined once per invocation (one of
  /// the entry block is passed to the pullback as is).
  TapeStorage *iterationStorageOf(Value value) {
    if (rows.covers(value))
      return &rows;
    if (iterations.covers(value))
      return &iterations;
    return nullptr;
  }

  /// Makes this the forward sweep of recursive function `key`'s invocations,
  /// each of which fills one row of the recursion's tape.
  void beginRecursion(Operation *key) {
    recursionKey = key;
    rows.tape(key).widthOfRecursion = true;
    branchTape.disable();
  }

  /// At the end of the forward function: each growable tape it created
  /// and passes to its pullback in `tape` remembers the rows it needed.
  void recordTapeRows(ArrayRef<Value> tape) {
    for (auto &[key, growable] : rows.getTapes())
      if (growable.rowsHint && llvm::is_contained(tape, growable.buffer))
        ad::recordTapeRows(builder, key->getLoc(), growable.buffer,
                           growable.forwardWidth->getResult(0),
                           growable.rowsHint);
  }

  /// Sets the sizes of every tape now that all values are stored.
  void finalizeTapes() {
    iterations.finalize();
    rows.finalize();
    branchTape.finalize();
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
    // checked then (a callee with a user-written rule is checked here).
    auto call = dyn_cast<func::CallOp>(op);
    func::FuncOp callee = call ? lookupCallee(call) : func::FuncOp();
    bool checkedInCallee =
        active && isa<CallOpInterface>(op) &&
        !(callee && generator.getCustomRules().getVjp(callee));
    if (!checkedInCallee && failed(checkNoDifferentiableStore(op)))
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

  Block *entry;
  /// When generating the recursive versions: the original function, whose
  /// invocations each fill one row of the shared tape (see beginRecursion).
  Operation *recursionKey = nullptr;
  DenseMap<Block *, Block *> originalOf;
  DenseMap<Value, Value> escapes;
  /// Branch ops that carry out what the adjoint reads, and what it reads.
  llvm::SmallPtrSet<Operation *, 8> onDemandBranches;
  llvm::MapVector<Operation *, SmallVector<EscapeRequest>> escapeRequests;
  /// Ops the memory-write check has looked at.
  llvm::DenseSet<Operation *> memoryChecked;

public:
  /// The tape storage strategies (see TapeStorage.h).
  IterationBuffers iterations;
  TapeRows rows;
  BranchTape branchTape;
};

} // namespace mlir::ad::sweeps

#endif // AD_LIB_TRANSFORMS_FORWARDSWEEP_H
