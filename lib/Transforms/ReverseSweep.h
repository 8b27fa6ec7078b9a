//===- ReverseSweep.h - the pullback function -------------------*- C++ -*-===//
//
// The reverse sweep walks the ops backwards and lets each active op's rule
// emit its adjoint into the pullback function, reading the tape the forward
// sweep stored. Private to lib/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_TRANSFORMS_REVERSESWEEP_H
#define AD_LIB_TRANSFORMS_REVERSESWEEP_H

#include "ForwardSweep.h"

#include "ad/Transforms/Preparation.h"

#include "mlir/Transforms/RegionUtils.h"

namespace mlir::ad::sweeps {

/// One iteration of a reverse loop being emitted.
struct ReverseLoopScope {
  Block *originalBody = nullptr;
  /// The position of the iteration (or invocation) being reversed among
  /// those its tape storage keeps.
  Value linearIndex;
  /// Per-iteration values already loaded in this iteration.
  DenseMap<Value, Value> loaded;
  /// Primal values rebuilt for this iteration (induction variables).
  SmallVector<Value> mappedPrimals;
  /// Whether this is an iteration of an scf.for (not a row of a while loop
  /// or a recursion).
  bool forLoop = false;
  /// Values of the original body computed again in this iteration
  /// (recomputeCheapTensor).
  DenseMap<Value, Value> recomputed;
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
    return tapeEntryValue(forward.rows.tape(forward.tapeKeyOf(original)).buffer);
  }
  bool inRecursion() override { return recursionTape != nullptr; }
  bool usesSharedTape(func::CallOp call) override {
    return forward.usesSharedTape(call);
  }
  /// In a recursive pullback: the shared tape argument.
  Value recursionTape;

  /// Makes `pullbackValue` the value of argument `original` of the function
  /// being differentiated everywhere in the pullback (an invariant of a
  /// recursion, which the recursive pullback takes as an argument): rules
  /// asking for it, and ops rebuilt from it (a slice), use it instead of a
  /// tape.
  void passArgument(BlockArgument original, Value pullbackValue) {
    mapPrimal(original, pullbackValue);
    availableInPullback[forward.lookup(original)] = pullbackValue;
  }

  Value getPrimal(Value original) override {
    if (Value mapped = primalOverrides.lookup(original))
      return mapped;
    if (Value recomputed = recomputeFromInductionVariables(original))
      return recomputed;
    if (Value element = rereadElement(original))
      return element;
    if (Value recomputed = recomputeCheapTensor(original))
      return recomputed;
    return materialize(forward.lookup(original));
  }
  Value getPrimalShape(Value original) override {
    auto type = dyn_cast<RankedTensorType>(original.getType());
    if (!type)
      return getPrimal(original);
    // A static shape needs nothing kept (reading the tensor would keep its
    // elements in every row of a while loop's tape, unread).
    if (type.hasStaticShape())
      return tensor::EmptyOp::create(builder, original.getLoc(), type,
                                     ValueRange());
    // The tensor itself when the pullback has it without a tape (a value
    // of the forward entry block, a slice taken again, a tensor already
    // computed again in this iteration); else its sizes (materialize). Not
    // computed again for its shape: that could keep the loop-carried
    // tensor it is computed from in every iteration, where the sizes
    // (often the same in every iteration: computed before the loop) cost
    // nothing.
    if (Value mapped = primalOverrides.lookup(original))
      return mapped;
    if (!loops.empty())
      if (Value recomputed = loops.back().recomputed.lookup(original))
        return recomputed;
    return materialize(forward.lookup(original), original);
  }
  Value tryGetPrimal(Value original) override {
    bool wasQuiet = std::exchange(quietFailures, true);
    Value primal = getPrimal(original);
    quietFailures = wasQuiet;
    return primal;
  }
  SmallVector<Value> getResiduals(Operation *original) override {
    SmallVector<Value> values;
    residualsOf = original;
    for (Value residual : forward.residuals.lookup(original))
      values.push_back(materialize(residual));
    residualsOf = nullptr;
    return values;
  }
  Value getCotangent(Value originalResult) override {
    if (Value cotangent = cotangents.lookup(originalResult))
      return cotangent;
    Type type = originalResult.getType();
    auto tensorType = dyn_cast<RankedTensorType>(type);
    Value like = tensorType && !tensorType.hasStaticShape()
                     ? getPrimalShape(originalResult)
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
      // Restored after: a region op's rule reads values once its body's
      // ops are reversed, and errors then belong to the region op.
      Operation *enclosingOp = std::exchange(currentOp, &op);
      if (failed(cast<ReverseRuleOpInterface>(op).emitReverse(*this)) ||
          materializeFailed)
        return failure();
      currentOp = enclosingOp;
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
    scope.forLoop = true;
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
  /// the arguments at `wrt` (the pullback's return values). The arguments
  /// at `wrt[threaded[i]]` start from `accumulators[i]` instead of zero.
  FailureOr<SmallVector<Value>>
  reverseFunction(Block &original, ValueRange seeds, ArrayRef<int64_t> wrt,
                  ArrayRef<unsigned> threaded = {},
                  ValueRange accumulators = {}) {
    for (auto [index, accumulator] : llvm::zip_equal(threaded, accumulators))
      setCotangent(original.getArgument(wrt[index]), accumulator);
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
  /// At most this many ops are computed again for one value.
  static constexpr unsigned kMaxRecomputedOps = 8;

  /// `original`, an integer computed by a few pure arith ops from
  /// constants and the induction variables of the loops being reversed
  /// (whose values the pullback rebuilds), computed again at the builder's
  /// position instead of being kept per iteration: a loop's parity, or an
  /// offset of its induction variable, takes no tape. Null for any other
  /// value.
  Value recomputeFromInductionVariables(Value original) {
    SmallVector<Operation *> ops;
    if (!collectRecomputable(original, ops))
      return Value();
    IRMapping mapping;
    for (auto &[originalValue, pullbackValue] : primalOverrides)
      mapping.map(originalValue, pullbackValue);
    for (Operation *op : ops)
      builder.clone(*op, mapping);
    return mapping.lookup(original);
  }

  /// Whether recomputeFromInductionVariables computes `original` again;
  /// `ops` are then the ops to clone, each after those of its operands.
  bool collectRecomputable(Value original, SmallVectorImpl<Operation *> &ops) {
    if (!isa<IntegerType, IndexType>(original.getType()) ||
        !original.getDefiningOp())
      return false;
    llvm::SmallPtrSet<Operation *, 8> visited;
    bool readsInductionVariable = false;
    unsigned computed = 0;
    std::function<bool(Value)> collect = [&](Value value) {
      if (primalOverrides.contains(value)) {
        readsInductionVariable = true;
        return true;
      }
      Operation *def = value.getDefiningOp();
      if (!def || !isa<arith::ArithDialect>(def->getDialect()) ||
          def->getNumRegions() != 0 || !isPure(def) ||
          !llvm::all_of(def->getResultTypes(),
                        llvm::IsaPred<IntegerType, IndexType>))
        return false;
      if (!visited.insert(def).second)
        return true;
      bool constant = def->hasTrait<OpTrait::ConstantLike>();
      if (!constant && ++computed > kMaxRecomputedOps)
        return false;
      if (!llvm::all_of(def->getOperands(), collect))
        return false;
      ops.push_back(def);
      return true;
    };
    return collect(original) && readsInductionVariable;
  }

  /// Whether a tensor of type `a` may hold more elements than one of type
  /// `b`, judging by their types: more dimensions, a larger static size, or
  /// a dynamic size where `b`'s is static. (Two dynamic sizes count as
  /// equal.)
  static bool mayHoldMore(RankedTensorType a, RankedTensorType b) {
    if (a.getRank() > b.getRank())
      return true;
    if (a.getRank() < b.getRank())
      return false;
    for (auto [x, y] : llvm::zip(a.getShape(), b.getShape()))
      if ((ShapedType::isDynamic(x) && !ShapedType::isDynamic(y)) ||
          (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x > y))
        return true;
    return false;
  }

  /// At most this many ops are computed again for one tensor.
  static constexpr unsigned kMaxRecomputedTensorOps = 32;

  /// `original`, a tensor computed in an iteration of the innermost scf.for
  /// being reversed by cheap ops (isCheapToRecompute: elementwise generics
  /// of a few additions and multiplications, pads, slices) from at most one
  /// tensor the loop carries, its induction variable and values defined
  /// before the loop, computed again at the start of the reverse iteration
  /// instead of being kept per iteration: the tape keeps the carried tensor
  /// once instead of every value computed from it (the four stages of an
  /// RK4 step). Null for any other value.
  Value recomputeCheapTensor(Value original) {
    if (loops.empty() || !loops.back().forLoop ||
        !isa<RankedTensorType>(original.getType()))
      return Value();
    ReverseLoopScope &loop = loops.back();
    if (Value done = loop.recomputed.lookup(original))
      return done;
    Operation *def = original.getDefiningOp();
    if (!def || def->getBlock() != loop.originalBody)
      return Value();
    // The ops to clone, each after those of its operands, and the values
    // they read that are not computed again.
    SmallVector<Operation *> ops;
    llvm::SetVector<Value> leaves;
    llvm::SmallPtrSet<Operation *, 16> visited;
    llvm::SmallPtrSet<Value, 2> carriedTensors;
    std::function<bool(Value)> collect = [&](Value value) {
      // A tensor.empty from before the loop (hoisted) is made again rather
      // than passed to the pullback.
      bool outside = value.getParentBlock() != loop.originalBody &&
                     !value.getDefiningOp<tensor::EmptyOp>();
      if (loop.recomputed.contains(value) || outside) {
        leaves.insert(value);
        return true;
      }
      if (isa<BlockArgument>(value)) {
        if (isa<RankedTensorType>(value.getType())) {
          carriedTensors.insert(value);
          if (carriedTensors.size() > 1)
            return false;
        }
        leaves.insert(value);
        return true;
      }
      Operation *op = value.getDefiningOp();
      if (!visited.insert(op).second)
        return true;
      if (!isCheapToRecompute(op) || visited.size() > kMaxRecomputedTensorOps)
        return false;
      // A slice of an iteration's tensor that may be smaller than it (a row
      // of the carried matrix) is kept: computing it again would keep the
      // whole tensor per iteration instead (review finding).
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
        if (slice.getSource().getParentBlock() == loop.originalBody &&
            mayHoldMore(slice.getSourceType(), slice.getResultType()))
          return false;
      // Values of the op's regions read from outside are operands too (a
      // generic's body reading a scalar of the iteration).
      llvm::SetVector<Value> captured;
      for (Region &region : op->getRegions())
        getUsedValuesDefinedAbove(region, captured);
      if (!llvm::all_of(op->getOperands(), collect) ||
          !llvm::all_of(captured, collect))
        return false;
      ops.push_back(op);
      return true;
    };
    if (!collect(original))
      return Value();
    // The tape keeps the carried tensor instead of `original`: only when
    // that is no more.
    for (Value carried : carriedTensors)
      if (mayHoldMore(cast<RankedTensorType>(carried.getType()),
                      cast<RankedTensorType>(original.getType())))
        return Value();
    // At the start of the reverse iteration, after everything it reads
    // (as rebuildSlice).
    OpBuilder at(original.getContext());
    at.setInsertionPointAfterValue(loop.linearIndex);
    Region *iteration = at.getInsertionBlock()->getParent();
    IRMapping mapping;
    for (Value leaf : leaves) {
      Value available = loop.recomputed.lookup(leaf);
      if (!available) {
        // A leaf the tape cannot keep (a tensor whose size may change from
        // one iteration to the next) is no error: the value is kept instead.
        bool wasQuiet = std::exchange(quietFailures, true);
        available = getPrimal(leaf);
        quietFailures = wasQuiet;
      }
      if (!available || !moveAfter(at, available, iteration))
        return Value();
      mapping.map(leaf, available);
    }
    for (Operation *op : ops) {
      Operation *copy = at.clone(*op, mapping);
      for (auto [result, recomputed] :
           llvm::zip(op->getResults(), copy->getResults()))
        loop.recomputed[result] = recomputed;
    }
    return mapping.lookup(original);
  }

  /// `original`, an element of a tensor the pullback has without a tape
  /// (an invariant tensor argument of a recursion, which the recursive
  /// pullback takes), read again at its indices where the pullback needs
  /// it, instead of being kept. Only when that keeps nothing more: the
  /// extract's own adjoint reads the indices (its tensor is active), or
  /// they are recomputed from induction variables. Null for any other
  /// value. (Not for an argument of another function: its caller would
  /// then keep the whole tensor, in every iteration of a loop around the
  /// call, instead of the element.)
  Value rereadElement(Value original) {
    auto extract = original.getDefiningOp<tensor::ExtractOp>();
    if (!extract)
      return Value();
    Value source = extract.getTensor();
    if (!primalOverrides.contains(source))
      return Value();
    if (!activity.isActive(source) &&
        !llvm::all_of(extract.getIndices(), [&](Value index) {
          SmallVector<Operation *> ops;
          return collectRecomputable(index, ops);
        }))
      return Value();
    SmallVector<Value> indices;
    for (Value index : extract.getIndices())
      indices.push_back(getPrimal(index));
    return tensor::ExtractOp::create(builder, extract.getLoc(),
                                     getPrimal(source), indices);
  }

  /// Makes forward value `value` available at the builder's position:
  /// rebuilds constants, passes values of the forward entry block as tape
  /// arguments (once), and reads the others from the tape storage that
  /// keeps them, in the iteration being reversed (once per iteration).
  ///
  /// With `shapeOf` (the original of a dynamically shaped tensor whose
  /// shape alone is needed: getPrimalShape), a tensor that would be read
  /// from tape storage, or could not be, is an empty tensor of its sizes
  /// instead, which are kept (keepSizes).
  Value materialize(Value value, Value shapeOf = Value()) {
    if (Value available = availableInPullback.lookup(value))
      return available;
    Operation *def = value.getDefiningOp();
    if (def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
        def->hasTrait<OpTrait::ConstantLike>())
      return rebuildConstant(value);
    auto pass = [&](Value forwardValue) { return tapeEntryValue(forwardValue); };
    if (forward.branchTape.covers(value))
      return forward.branchTape.storeAndRead(
          value, TapeRead{builder, Value(), body, pass});
    Value defined = value;
    value = forward.escape(value);
    Block *home = value.getParentBlock();
    TapeStorage *storage = forward.iterationStorageOf(value);
    if (!storage) {
      if (home == forward.getEntry())
        return tapeEntryValue(value);
      return shapeOf ? keepSizes(shapeOf) : failMaterialization(value, nullptr);
    }
    Block *originalHome = forward.originalBlockOf(home);
    for (ReverseLoopScope &loop : llvm::reverse(loops)) {
      if (loop.originalBody != originalHome)
        continue;
      if (Value loaded = loop.loaded.lookup(value))
        return loaded;
      // For its shape only, a slice whose source cannot be had (an argument
      // of a recursion that changes from level to level) is no error: its
      // sizes are kept instead.
      bool wasQuiet = quietFailures;
      quietFailures |= static_cast<bool>(shapeOf);
      Value view = rebuildSlice(value, loop);
      quietFailures = wasQuiet;
      if (view) {
        loop.loaded[value] = view;
        return view;
      }
      if (shapeOf)
        return keepSizes(shapeOf);
      // Read right after the iteration's position is known, so that the
      // whole reverse iteration can use it.
      OpBuilder reader(value.getContext());
      reader.setInsertionPointAfterValue(loop.linearIndex);
      // A dynamically shaped tensor carried out of the branches of a loop
      // body is stored where it is defined, in the iterations that define
      // it (the branch op carries out an empty tensor in the others, whose
      // size is not the buffer's); the pullback reads it in the reverse of
      // that branch only.
      auto tensorType = dyn_cast<RankedTensorType>(defined.getType());
      Value stored = defined != value && storage == &forward.iterations &&
                             tensorType && !tensorType.hasStaticShape()
                         ? defined
                         : value;
      Value loaded = storage->storeAndRead(
          stored, TapeRead{reader, loop.linearIndex, body, pass});
      if (!loaded)
        return failMaterialization(value, storage);
      loop.loaded[value] = loaded;
      return loaded;
    }
    return shapeOf ? keepSizes(shapeOf) : failMaterialization(value, nullptr);
  }

  /// An empty tensor of the sizes of `original` (a dynamically shaped
  /// tensor), each dynamic size computed in the forward sweep next to the
  /// tensor and kept like any index.
  Value keepSizes(Value original) {
    auto type = cast<RankedTensorType>(original.getType());
    Value forwardValue = forward.lookup(original);
    SmallVector<Value> sizes;
    for (auto [dim, size] : llvm::enumerate(type.getShape())) {
      if (!ShapedType::isDynamic(size))
        continue;
      Value &forwardSize = forwardSizes[{forwardValue, dim}];
      if (!forwardSize) {
        OpBuilder at(forwardValue.getContext());
        at.setInsertionPointAfterValue(forwardValue);
        forwardSize =
            tensor::DimOp::create(at, original.getLoc(), forwardValue, dim);
      }
      Value kept = materialize(forwardSize);
      if (!kept)
        return Value();
      sizes.push_back(kept);
    }
    return tensor::EmptyOp::create(builder, original.getLoc(), type, sizes);
  }

  /// A slice of a value of the forward entry block (a layer's parameters,
  /// a row of the input) taken in an iteration of `loop` is taken again in
  /// the pullback from the whole value, with the iteration's offsets and
  /// sizes: the slice is not kept per iteration. Null for other values.
  Value rebuildSlice(Value value, ReverseLoopScope &loop) {
    auto slice = value.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || slice.getSource().getParentBlock() != forward.getEntry())
      return Value();
    OpBuilder at(value.getContext());
    at.setInsertionPointAfterValue(loop.linearIndex);
    Region *iteration = at.getInsertionBlock()->getParent();
    IRMapping mapping;
    for (Value operand : slice->getOperands()) {
      Value available = materialize(operand);
      if (!available || !moveAfter(at, available, iteration))
        return Value();
      mapping.map(operand, available);
    }
    return at.clone(*slice, mapping)->getResult(0);
  }

  /// Moves `at` (in the top block of the reverse iteration `iteration`)
  /// after `available`'s definition if that comes later, so that ops built
  /// there can read it. False when `available` is read inside a nested
  /// region of the iteration (the branch tape reads where it is asked):
  /// it cannot be used there, and the caller keeps its value instead.
  static bool moveAfter(OpBuilder &at, Value available, Region *iteration) {
    Block *home = available.getParentBlock();
    if (home != at.getInsertionBlock() &&
        !home->getParent()->isProperAncestor(iteration))
      return false;
    Operation *def = available.getDefiningOp();
    if (def && def->getBlock() == at.getInsertionBlock() &&
        (at.getInsertionPoint() == at.getInsertionBlock()->end() ||
         !def->isBeforeInBlock(&*at.getInsertionPoint())))
      at.setInsertionPointAfter(def);
    return true;
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

  /// Reports a value the adjoint needs but `storage` (if known) cannot
  /// keep, and returns a placeholder so that the rule can finish.
  Value failMaterialization(Value value, const TapeStorage *storage) {
    if (quietFailures)
      return Value();
    if (!materializeFailed) {
      InFlightDiagnostic diagnostic =
          generator.emitError(currentOp, "cannot keep a value of type ")
          << value.getType() << " for the adjoint of this op yet";
      if (storage)
        diagnostic << " (" << storage->describeCapacity() << ")";
      else
        diagnostic << " (it cannot be carried out of the region that "
                      "defines it: branch ops carry out scalars, ranked "
                      "tensors and buffers with the identity layout)";
      auto tensorType = dyn_cast<RankedTensorType>(value.getType());
      if (storage == &forward.iterations && tensorType &&
          !tensorType.hasStaticShape())
        diagnostic.attachNote(value.getLoc())
            << "the value is defined here; its size could not be shown to "
               "be the same in every iteration of the loop nest (sizes "
               "taken from values defined before the loop, or from the "
               "loop-carried tensor it is computed from, can be)";
      // A residual of a user-written rule: say which.
      auto call = dyn_cast_if_present<func::CallOp>(residualsOf);
      func::FuncOp callee = call ? lookupCallee(call) : func::FuncOp();
      if (CustomVjpOp rule =
              callee ? generator.getCustomRules().getVjp(callee)
                     : CustomVjpOp())
        diagnostic.attachNote(rule.getLoc())
            << "the value is a residual of " << rule.getForwardAttr()
            << ", the forward function of this rule";
    }
    materializeFailed = true;
    OpBuilder prologue = OpBuilder::atBlockBegin(body);
    return ub::PoisonOp::create(prologue, value.getLoc(), value.getType());
  }

  ForwardSweep &forward;
  Block *body;
  DenseMap<Value, Value> availableInPullback;
  CotangentMap cotangents;
  DenseMap<Value, Value> primalOverrides;
  /// The sizes keepSizes computed in the forward sweep, by tensor and
  /// dimension.
  DenseMap<std::pair<Value, unsigned>, Value> forwardSizes;
  SmallVector<ReverseLoopScope> loops;
  Operation *currentOp = nullptr;
  /// The op whose residuals are being read, or null.
  Operation *residualsOf = nullptr;
  bool materializeFailed = false;
  /// While set, a value the tape cannot keep makes materialize return null
  /// instead of reporting an error (recomputeCheapTensor's attempts).
  bool quietFailures = false;
};

} // namespace mlir::ad::sweeps

#endif // AD_LIB_TRANSFORMS_REVERSESWEEP_H
