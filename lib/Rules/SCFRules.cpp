//===- SCFRules.cpp - reverse rules for scf.for and scf.if ------*- C++ -*-===//
//
// scf.for runs backwards: the forward loop records nothing itself (values its
// body's adjoints read are stored per iteration by the emitter), the reverse
// loop counts down over the same iterations and carries the cotangents of
// the loop-carried values and of the outer values the body reads.
//
// scf.if replays the recorded condition. Its forward version also yields the
// values computed in its branches that the adjoint reads after the branch
// (added once the adjoint is complete: ForwardEmitter::carryOutOnDemand).
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADInterfaces.h"
#include "ad/IR/TapeUtils.h"
#include "ad/Rules/RegionRuleUtils.h"
#include "ad/Rules/Rules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

#include <array>

using namespace mlir;
using namespace mlir::ad;

namespace {

/// Removes the terminator a builder may have added to `block`.
static void dropTerminator(Block *block) {
  if (!block->empty() && block->back().hasTrait<OpTrait::IsTerminator>())
    block->back().erase();
}

/// `value`, an integer or index, as an index: zero-extended when
/// `isUnsigned`, sign-extended otherwise.
static Value toIndex(OpBuilder &b, Location loc, Value value,
                     bool isUnsigned) {
  if (value.getType().isIndex())
    return value;
  if (isUnsigned)
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), value);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), value);
}

/// The bounds of `loop` (forward values `lb`, `ub`, `step`) as indices, in
/// which `ub - lb` cannot overflow for induction variables narrower than
/// 64 bits.
static std::array<Value, 3> boundsAsIndices(OpBuilder &b, Location loc,
                                            scf::ForOp loop, Value lb,
                                            Value ub, Value step) {
  bool isUnsigned = loop.getUnsignedCmp();
  return {toIndex(b, loc, lb, isUnsigned), toIndex(b, loc, ub, isUnsigned),
          toIndex(b, loc, step, isUnsigned)};
}

/// The trip count of `loop`, whose forward bounds are `lb`, `ub`, `step`:
/// ceil((ub - lb) / step) when ub > lb (compared as the loop compares),
/// zero otherwise. scf.for steps are positive.
static Value tripCount(OpBuilder &b, Location loc, scf::ForOp loop, Value lb,
                       Value ub, Value step) {
  auto [lbIndex, ubIndex, stepIndex] =
      boundsAsIndices(b, loc, loop, lb, ub, step);
  bool isUnsigned = loop.getUnsignedCmp();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  // Once ub > lb, ub - lb is exact as an unsigned number even where it
  // overflows as a signed one (bounds 2^62 apart on either side of zero).
  Value diff = arith::SubIOp::create(b, loc, ubIndex, lbIndex);
  Value count = arith::CeilDivUIOp::create(b, loc, diff, stepIndex);
  Value runs = arith::CmpIOp::create(
      b, loc,
      isUnsigned ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt,
      ubIndex, lbIndex);
  return arith::SelectOp::create(b, loc, runs, count, zero);
}

/// The number of the iteration whose induction variable is `iv`, in a
/// forward loop over `loop`'s bounds `lb` and `step`.
static Value iterationNumber(OpBuilder &b, Location loc, scf::ForOp loop,
                             Value iv, Value lb, Value step) {
  bool isUnsigned = loop.getUnsignedCmp();
  Value offset = arith::SubIOp::create(b, loc, toIndex(b, loc, iv, isUnsigned),
                                       toIndex(b, loc, lb, isUnsigned));
  return arith::DivUIOp::create(b, loc, offset,
                                toIndex(b, loc, step, isUnsigned));
}

/// A forward loop like `loop` (same bounds, comparison and signedness)
/// carrying `inits`, with an empty body.
static scf::ForOp createForwardLoop(OpBuilder &b, scf::ForOp loop, Value lb,
                                    Value ub, Value step, ValueRange inits) {
  auto forward = scf::ForOp::create(b, loop.getLoc(), lb, ub, step, inits,
                                    /*bodyBuilder=*/nullptr,
                                    loop.getUnsignedCmp());
  dropTerminator(forward.getBody());
  return forward;
}

/// Whether the trip counts of `loop` and of the loops around it cannot all
/// be computed at function entry: it is nested in an scf.while or in such a
/// loop, or its bounds are computed inside an enclosing region. Such a loop
/// keeps its tape in rows of a growable tape instead of buffers sized once.
static bool needsGrowableTape(scf::ForOp loop) {
  auto function = loop->getParentOfType<func::FuncOp>();
  if (!function)
    return false;
  Block *entry = &function.getBody().front();
  for (Value bound :
       {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()}) {
    Operation *def = bound.getDefiningOp();
    bool constant = def && def->hasTrait<OpTrait::ConstantLike>();
    if (bound.getParentBlock() != entry && !constant)
      return true;
  }
  // The nearest enclosing loop answers for all the outer ones (asking each
  // of them would be exponential in the nesting depth).
  for (Operation *parent = loop->getParentOp(); parent != function;
       parent = parent->getParentOp()) {
    if (isa<scf::WhileOp>(parent))
      return true;
    if (auto outer = dyn_cast<scf::ForOp>(parent))
      return needsGrowableTape(outer);
  }
  return false;
}

struct ForRule : ReverseRuleOpInterface::ExternalModel<ForRule, scf::ForOp> {
  bool usesGrowableTape(Operation *op) const {
    return needsGrowableTape(cast<scf::ForOp>(op));
  }

  /// The forward loop when its tape is a growable one. The trip count is
  /// known at entry: the loop takes the next trip-count rows of the tape at
  /// once, iteration i row `first + i`, and what runs inside an iteration
  /// (another loop, a recursive call) takes rows after them; the loop
  /// carries the tape and its next free row. The adjoint reads row `first +
  /// i` for iteration i, so a row needs no link to the row of the iteration
  /// before (one slot less per iteration than links).
  LogicalResult emitForwardWithRows(scf::ForOp loop,
                                    ForwardEmitter &emitter) const {
    OpBuilder &b = emitter.getBuilder();
    Location loc = loop.getLoc();
    Value lb = emitter.lookup(loop.getLowerBound());
    Value ub = emitter.lookup(loop.getUpperBound());
    Value step = emitter.lookup(loop.getStep());
    Value trips = tripCount(b, loc, loop, lb, ub, step);
    SmallVector<Value> tapes = emitter.getCarriedTapes(loop);
    Value firstRow = tapes[1];
    Value width = emitter.getRowWidth(loop);
    Value freeRow = arith::AddIOp::create(b, loc, firstRow, trips);
    Value reserved = emitter.fillsRestartableRows(loop)
                         ? tapes[0]
                         : growTapeIfFull(b, loc, tapes[0], freeRow, width);

    SmallVector<Value> inits;
    for (Value init : loop.getInitArgs())
      inits.push_back(emitter.lookup(init));
    unsigned numResults = inits.size();
    unsigned numTapes = tapes.size();
    inits.append({reserved, freeRow});
    llvm::append_range(inits, ArrayRef<Value>(tapes).drop_front(2));
    scf::ForOp forward = createForwardLoop(b, loop, lb, ub, step, inits);
    Block *body = forward.getBody();
    emitter.mapValues(loop.getBody()->getArguments(),
                      body->getArguments().take_front(1 + numResults));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(body);
      Value iteration =
          iterationNumber(b, loc, loop, forward.getInductionVar(),
                          forward.getLowerBound(), forward.getStep());
      Value row = arith::AddIOp::create(b, loc, firstRow, iteration);
      Value buffer = body->getArgument(1 + numResults);
      emitter.setCarriedTapes(
          loop, body->getArguments().slice(1 + numResults, numTapes));
      emitter.beginRows(body, loop, row, buffer);
      if (failed(emitter.emitOps(*loop.getBody(), /*withTerminator=*/false)))
        return failure();
      SmallVector<Value> yields;
      for (Value value : loop.getBody()->getTerminator()->getOperands())
        yields.push_back(emitter.lookup(value));
      llvm::append_range(yields, emitter.getCarriedTapes(loop));
      scf::YieldOp::create(b, loc, yields);
    }
    emitter.mapResults(loop, forward.getResults().take_front(numResults));
    emitter.setCarriedTapes(
        loop, forward.getResults().slice(numResults, numTapes));
    emitter.setResiduals(loop, {trips, lb, step, firstRow});
    return success();
  }

  LogicalResult emitForward(Operation *op, ForwardEmitter &emitter) const {
    auto loop = cast<scf::ForOp>(op);
    if (needsGrowableTape(loop) || emitter.inRecursion())
      return emitForwardWithRows(loop, emitter);
    OpBuilder &b = emitter.getBuilder();
    Location loc = loop.getLoc();
    SmallVector<Value> bounds = {emitter.lookup(loop.getLowerBound()),
                                 emitter.lookup(loop.getUpperBound()),
                                 emitter.lookup(loop.getStep())};
    FailureOr<OpBuilder> entry = emitter.getLoopEntryBuilder(op, bounds);
    if (failed(entry))
      return failure();
    Value trips =
        tripCount(*entry, loc, loop, bounds[0], bounds[1], bounds[2]);

    SmallVector<Value> inits;
    for (Value init : loop.getInitArgs())
      inits.push_back(emitter.lookup(init));
    unsigned numResults = inits.size();
    llvm::append_range(inits, emitter.getCarriedTapes(op));
    scf::ForOp forward = createForwardLoop(
        b, loop, emitter.lookup(loop.getLowerBound()),
        emitter.lookup(loop.getUpperBound()), emitter.lookup(loop.getStep()),
        inits);
    Block *body = forward.getBody();
    emitter.mapValues(loop.getBody()->getArguments(),
                      body->getArguments().take_front(1 + numResults));
    emitter.setCarriedTapes(op, body->getArguments().drop_front(1 + numResults));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(body);
      Value iteration =
          iterationNumber(b, loc, loop, forward.getInductionVar(),
                          forward.getLowerBound(), forward.getStep());
      emitter.beginLoop(body, iteration, trips);
      if (failed(emitter.emitOps(*loop.getBody(), /*withTerminator=*/false)))
        return failure();
      SmallVector<Value> yields;
      for (Value value : loop.getBody()->getTerminator()->getOperands())
        yields.push_back(emitter.lookup(value));
      llvm::append_range(yields, emitter.getCarriedTapes(op));
      scf::YieldOp::create(b, loc, yields);
    }
    emitter.mapResults(op, forward.getResults().take_front(numResults));
    emitter.setCarriedTapes(op, forward.getResults().drop_front(numResults));
    emitter.setResiduals(op, {trips, bounds[0], bounds[2]});
    return success();
  }

  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto loop = cast<scf::ForOp>(op);
    OpBuilder &b = emitter.getBuilder();
    Location loc = loop.getLoc();
    SmallVector<Value> residuals = emitter.getResiduals(op);
    Value trips = residuals[0], lb = residuals[1], step = residuals[2];
    bool rows = needsGrowableTape(loop) || emitter.inRecursion();
    Block &body = *loop.getBody();
    auto yield = cast<scf::YieldOp>(body.getTerminator());

    SmallVector<unsigned> carried;
    for (auto [index, result] : llvm::enumerate(loop.getResults()))
      if (isDifferentiableType(result.getType()))
        carried.push_back(index);
    SmallVector<Value> outer = activeValuesFromAbove(loop.getRegion(), emitter);


    SmallVector<Value> inits;
    for (unsigned index : carried)
      inits.push_back(emitter.getCotangent(loop.getResult(index)));
    llvm::append_range(inits, currentCotangents(outer, emitter));
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    auto reverse = scf::ForOp::create(b, loc, c0, trips, c1, inits);
    Block *reverseBody = reverse.getBody();
    dropTerminator(reverseBody);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(reverseBody);
      Value last = arith::SubIOp::create(b, loc, trips, c1);
      Value iteration =
          arith::SubIOp::create(b, loc, last, reverse.getInductionVar());
      if (rows) {
        emitter.beginRows(&body, op,
                          arith::AddIOp::create(b, loc, residuals[3],
                                                iteration));
      } else {
        emitter.beginLoop(&body, iteration, trips);
      }
      // The induction variable of the iteration being reversed.
      Type ivType = loop.getInductionVar().getType();
      Value typedIteration =
          ivType.isIndex()
              ? iteration
              : arith::IndexCastOp::create(b, loc, ivType, iteration);
      Value scaled = arith::MulIOp::create(b, loc, typedIteration, step);
      emitter.mapPrimal(loop.getInductionVar(),
                        arith::AddIOp::create(b, loc, lb, scaled));

      unsigned numCarried = carried.size();
      for (auto [index, value] : llvm::enumerate(outer))
        emitter.setCotangent(value,
                             reverseBody->getArgument(1 + numCarried + index));
      for (auto [index, position] : llvm::enumerate(carried))
        emitter.addCotangent(yield.getOperand(position),
                             reverseBody->getArgument(1 + index));
      if (failed(emitter.emitReverseOps(body)))
        return failure();

      SmallVector<Value> yields;
      for (unsigned position : carried)
        yields.push_back(emitter.getCotangent(loop.getRegionIterArg(position)));
      for (Value value : outer)
        yields.push_back(emitter.lookupCotangent(value));
      scf::YieldOp::create(b, loc, yields);
      if (rows)
        emitter.endRows(&body);
      else
        emitter.endLoop(&body);
    }
    // Outer values first: an init may be one of them.
    for (auto [index, value] : llvm::enumerate(outer))
      emitter.setCotangent(value, reverse.getResult(carried.size() + index));
    for (auto [index, position] : llvm::enumerate(carried))
      emitter.addCotangent(loop.getInitArgs()[position],
                           reverse.getResult(index));
    return success();
  }
};

/// A new op like `original` (scf.if or scf.index_switch) choosing with
/// `selector`, with results of `types` and one empty block per region.
static Operation *createBranchOp(OpBuilder &b, Location loc, Operation *original,
                                 Value selector, TypeRange types) {
  Operation *created;
  if (auto ifOp = dyn_cast<scf::IfOp>(original))
    created = scf::IfOp::create(b, loc, types, selector,
                                /*withElseRegion=*/true);
  else {
    auto switchOp = cast<scf::IndexSwitchOp>(original);
    created = scf::IndexSwitchOp::create(b, loc, types, selector,
                                         switchOp.getCasesAttr(),
                                         switchOp.getNumCases());
  }
  for (Region &region : created->getRegions()) {
    if (region.empty())
      region.push_back(new Block());
    dropTerminator(&region.front());
  }
  return created;
}

/// The selector of an scf.if or scf.index_switch.
static Value branchSelector(Operation *op) {
  if (auto ifOp = dyn_cast<scf::IfOp>(op))
    return ifOp.getCondition();
  return cast<scf::IndexSwitchOp>(op).getArg();
}

/// scf.if and scf.index_switch: the forward op also yields the values
/// computed in its branches that the adjoint reads after the branch; the
/// reverse op replays the recorded selector.
template <typename OpT>
struct BranchRule
    : ReverseRuleOpInterface::ExternalModel<BranchRule<OpT>, OpT> {
  LogicalResult emitForward(Operation *op, ForwardEmitter &emitter) const {
    OpBuilder &b = emitter.getBuilder();
    Location loc = op->getLoc();
    Value selector = emitter.lookup(branchSelector(op));
    SmallVector<Value> tapes = emitter.getCarriedTapes(op);
    unsigned numBranches = op->getNumRegions();

    // Emit every branch first: the tapes they carry decide the result types.
    Operation *draft = createBranchOp(b, loc, op, selector, TypeRange());
    SmallVector<SmallVector<Value>> branchTapes(numBranches);
    for (unsigned branch = 0; branch < numBranches; ++branch) {
      Region &original = op->getRegion(branch);
      Block *target = &draft->getRegion(branch).front();
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(target);
      emitter.setCarriedTapes(op, tapes);
      if (!original.empty() &&
          failed(emitter.emitOps(original.front(), /*withTerminator=*/false)))
        return failure();
      branchTapes[branch] = emitter.getCarriedTapes(op);
    }

    SmallVector<Type> types(op->getResultTypes());
    for (Value tape : tapes)
      types.push_back(tape.getType());
    Operation *forward = createBranchOp(b, loc, op, selector, types);
    for (unsigned branch = 0; branch < numBranches; ++branch) {
      Region &target = forward->getRegion(branch);
      target.getBlocks().clear();
      target.takeBody(draft->getRegion(branch));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(&target.front());
      SmallVector<Value> yields;
      Region &original = op->getRegion(branch);
      if (!original.empty())
        for (Value value : original.front().getTerminator()->getOperands())
          yields.push_back(emitter.lookup(value));
      llvm::append_range(yields, branchTapes[branch]);
      scf::YieldOp::create(b, loc, yields);
    }
    draft->erase();

    unsigned numResults = op->getNumResults();
    emitter.mapResults(op, forward->getResults().take_front(numResults));
    emitter.setCarriedTapes(
        op, forward->getResults().slice(numResults, tapes.size()));
    emitter.carryOutOnDemand(forward);
    return success();
  }

  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    OpBuilder &b = emitter.getBuilder();
    Location loc = op->getLoc();
    Value selector = emitter.getPrimal(branchSelector(op));

    SmallVector<Value> outer = activeValuesFromAbove(op->getRegions(), emitter);
    SmallVector<Value> entry = currentCotangents(outer, emitter);
    SmallVector<Value> resultCotangents;
    for (Value result : op->getResults())
      resultCotangents.push_back(isDifferentiableType(result.getType())
                                     ? emitter.getCotangent(result)
                                     : Value());

    SmallVector<Type> types;
    for (Value value : outer)
      types.push_back(value.getType());
    Operation *reverse = createBranchOp(b, loc, op, selector, types);
    for (unsigned branch = 0; branch < op->getNumRegions(); ++branch) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&reverse->getRegion(branch).front());
      for (auto [value, cotangent] : llvm::zip(outer, entry))
        emitter.setCotangent(value, cotangent);
      Region &original = op->getRegion(branch);
      if (!original.empty()) {
        Block &block = original.front();
        for (auto [operand, cotangent] :
             llvm::zip(block.getTerminator()->getOperands(), resultCotangents))
          if (cotangent)
            emitter.addCotangent(operand, cotangent);
        if (failed(emitter.emitReverseOps(block)))
          return failure();
      }
      SmallVector<Value> yields;
      for (Value value : outer)
        yields.push_back(emitter.lookupCotangent(value));
      scf::YieldOp::create(b, loc, yields);
    }
    for (auto [index, value] : llvm::enumerate(outer))
      emitter.setCotangent(value, reverse->getResult(index));
    return success();
  }
};

/// scf.execute_region with one block is inlined into the forward function;
/// its adjoint is that of its ops.
struct ExecuteRegionRule
    : ReverseRuleOpInterface::ExternalModel<ExecuteRegionRule,
                                            scf::ExecuteRegionOp> {
  LogicalResult emitForward(Operation *op, ForwardEmitter &emitter) const {
    Region &region = op->getRegion(0);
    if (!region.hasOneBlock())
      return op->emitError("cannot differentiate an scf.execute_region with "
                           "several blocks yet; run lift-cf-to-scf first");
    Block &block = region.front();
    if (failed(emitter.emitOps(block, /*withTerminator=*/false)))
      return failure();
    SmallVector<Value> results;
    for (Value value : block.getTerminator()->getOperands())
      results.push_back(emitter.lookup(value));
    emitter.mapResults(op, results);
    return success();
  }

  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    Block &block = op->getRegion(0).front();
    for (auto [operand, result] :
         llvm::zip(block.getTerminator()->getOperands(), op->getResults()))
      if (Value cotangent = emitter.lookupCotangent(result))
        emitter.addCotangent(operand, cotangent);
    return emitter.emitReverseOps(block);
  }
};

/// scf.while, whose trip count is known only when it ends. The forward loop
/// counts its rows (one per evaluation of the condition) and stores what
/// the adjoint reads in a growable tape, doubled when full. The adjoint
/// reverses the last evaluation of the condition region, then each
/// iteration (body, then condition region) from the last to the first.
struct WhileRule
    : ReverseRuleOpInterface::ExternalModel<WhileRule, scf::WhileOp> {
  bool usesGrowableTape(Operation *) const { return true; }

  LogicalResult emitForward(Operation *op, ForwardEmitter &emitter) const {
    auto loop = cast<scf::WhileOp>(op);
    // In a recursive function, what runs inside an evaluation (another
    // loop, a recursive call) takes the rows after the evaluation's own:
    // each row then keeps the row of the evaluation before it (a back link,
    // a residual of the condition op), and the loop counts its iterations.
    bool linked = emitter.inRecursion();
    OpBuilder &b = emitter.getBuilder();
    Location loc = loop.getLoc();
    // The carried tapes: this loop's (buffer, next row) first, then those
    // of loops nested in it.
    SmallVector<Value> tapes = emitter.getCarriedTapes(op);
    Value firstRow = tapes[1];
    Value width = emitter.getRowWidth(op);
    ArrayRef<Value> nested = ArrayRef<Value>(tapes).drop_front(2);
    Type indexType = b.getIndexType();

    // Carried: the original values, the current row, the tape, the nested
    // tapes; with back links, also the previous evaluation's row and the
    // number of iterations so far (into the body, the first free row after
    // the condition region's instead of the previous row).
    SmallVector<Value> inits;
    for (Value init : loop.getInits())
      inits.push_back(emitter.lookup(init));
    unsigned numInits = inits.size();
    inits.push_back(firstRow);
    inits.push_back(tapes[0]);
    llvm::append_range(inits, nested);
    if (linked) {
      inits.push_back(firstRow); // never followed
      inits.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    }
    unsigned numPassed = loop.getNumResults();
    SmallVector<Type> resultTypes(loop.getResultTypes());
    resultTypes.push_back(indexType);
    resultTypes.push_back(tapes[0].getType());
    for (Value tape : nested)
      resultTypes.push_back(tape.getType());
    if (linked)
      resultTypes.append({indexType, indexType});
    auto forward = scf::WhileOp::create(b, loc, resultTypes, inits);

    Block &originalBefore = loop.getBefore().front();
    Block &originalAfter = loop.getAfter().front();
    Block *before = new Block();
    forward.getBefore().push_back(before);
    for (Value init : inits)
      before->addArgument(init.getType(), loc);
    Block *after = new Block();
    forward.getAfter().push_back(after);
    for (Type type : resultTypes)
      after->addArgument(type, loc);
    unsigned numNested = nested.size();

    // Emits one region whose block carries (row, tape, nested...) from
    // position `first` (then, with back links, (previous row or first free
    // row, count)); returns the values to pass on after its ops.
    auto emitRegion = [&](Block &original, Block *target, unsigned first,
                          bool isBefore) -> FailureOr<SmallVector<Value>> {
      Value row = target->getArgument(first);
      Value tape = target->getArgument(first + 1);
      ValueRange nestedTapes =
          target->getArguments().slice(first + 2, numNested);
      if (isBefore && !emitter.fillsRestartableRows(op))
        tape = growTapeIfFull(b, loc, tape, row, width);
      Value freeRow = row;
      if (linked) {
        Value link = target->getArgument(first + 2 + numNested);
        if (isBefore) {
          freeRow = arith::AddIOp::create(
              b, loc, row, arith::ConstantIndexOp::create(b, loc, 1));
          emitter.setResiduals(original.getTerminator(), {link});
        } else {
          freeRow = link;
        }
      }
      SmallVector<Value> carried = {tape, freeRow};
      llvm::append_range(carried, nestedTapes);
      emitter.setCarriedTapes(op, carried);
      emitter.beginRows(target, op, row, tape);
      if (failed(emitter.emitOps(original, /*withTerminator=*/false)))
        return failure();
      SmallVector<Value> current = emitter.getCarriedTapes(op);
      SmallVector<Value> passed = {row, current[0]};
      llvm::append_range(passed, ArrayRef<Value>(current).drop_front(2));
      if (linked) {
        Value count = target->getArguments().back();
        if (isBefore) {
          passed.push_back(current[1]);
          passed.push_back(count);
        } else {
          // The next evaluation's row, and its back link.
          passed[0] = current[1];
          passed.push_back(row);
          passed.push_back(arith::AddIOp::create(
              b, loc, count, arith::ConstantIndexOp::create(b, loc, 1)));
        }
      }
      return passed;
    };
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(before);
      emitter.mapValues(originalBefore.getArguments(),
                        before->getArguments().take_front(numInits));
      FailureOr<SmallVector<Value>> carried =
          emitRegion(originalBefore, before, numInits, /*isBefore=*/true);
      if (failed(carried))
        return failure();
      auto condition = cast<scf::ConditionOp>(originalBefore.getTerminator());
      SmallVector<Value> passed;
      for (Value value : condition.getArgs())
        passed.push_back(emitter.lookup(value));
      llvm::append_range(passed, *carried);
      scf::ConditionOp::create(b, loc,
                               emitter.lookup(condition.getCondition()),
                               passed);
    }
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(after);
      emitter.mapValues(originalAfter.getArguments(),
                        after->getArguments().take_front(numPassed));
      FailureOr<SmallVector<Value>> carried =
          emitRegion(originalAfter, after, numPassed, /*isBefore=*/false);
      if (failed(carried))
        return failure();
      SmallVector<Value> yields;
      for (Value value : originalAfter.getTerminator()->getOperands())
        yields.push_back(emitter.lookup(value));
      if (!linked) {
        Value one = arith::ConstantIndexOp::create(b, loc, 1);
        (*carried)[0] = arith::AddIOp::create(b, loc, (*carried)[0], one);
      }
      llvm::append_range(yields, *carried);
      scf::YieldOp::create(b, loc, yields);
    }

    Value lastRow = forward.getResult(numPassed);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value freeRow = linked ? forward.getResult(numPassed + 2 + numNested)
                           : arith::AddIOp::create(b, loc, lastRow, one);
    SmallVector<Value> carried = {forward.getResult(numPassed + 1), freeRow};
    llvm::append_range(carried,
                       forward.getResults().slice(numPassed + 2, numNested));
    emitter.mapResults(op, forward.getResults().take_front(numPassed));
    emitter.setCarriedTapes(op, carried);
    // The adjoint reads the first and the last row of this execution (with
    // back links, the last row and the number of iterations).
    emitter.setResiduals(op, {linked ? forward.getResults().back() : firstRow,
                              lastRow});
    return success();
  }

  LogicalResult emitReverse(Operation *op, ReverseEmitter &emitter) const {
    auto loop = cast<scf::WhileOp>(op);
    OpBuilder &b = emitter.getBuilder();
    Location loc = loop.getLoc();
    SmallVector<Value> residuals = emitter.getResiduals(op);
    bool linked = emitter.inRecursion();
    Value lastRow = residuals[1];
    Block &before = loop.getBefore().front();
    Block &after = loop.getAfter().front();
    auto condition = cast<scf::ConditionOp>(before.getTerminator());
    auto yield = cast<scf::YieldOp>(after.getTerminator());
    SmallVector<unsigned> carried = differentiablePositions(before.getArguments());
    SmallVector<unsigned> passed = differentiablePositions(after.getArguments());

    SmallVector<Value> outer =
        activeValuesFromAbove(loop->getRegions(), emitter);

    // The condition region in `row`, given the cotangents of what it passes;
    // returns the cotangents of its arguments (with back links, then the
    // row of the evaluation before).
    auto reverseBefore = [&](Value row,
                             ArrayRef<Value> passedCotangents)
        -> FailureOr<SmallVector<Value>> {
      emitter.resetCotangents(before);
      emitter.beginRows(&before, op, row);
      Value previousRow;
      if (linked)
        previousRow = emitter.getResiduals(condition)[0];
      for (auto [position, cotangent] : llvm::zip(passed, passedCotangents))
        emitter.addCotangent(condition.getArgs()[position], cotangent);
      if (failed(emitter.emitReverseOps(before)))
        return failure();
      SmallVector<Value> cotangents;
      for (unsigned position : carried)
        cotangents.push_back(emitter.getCotangent(before.getArgument(position)));
      if (linked)
        cotangents.push_back(previousRow);
      emitter.endRows(&before);
      return cotangents;
    };

    // The last evaluation of the condition, which ended the loop.
    SmallVector<Value> resultCotangents;
    for (unsigned position : passed)
      resultCotangents.push_back(emitter.getCotangent(loop.getResult(position)));
    FailureOr<SmallVector<Value>> lastCotangents =
        reverseBefore(lastRow, resultCotangents);
    if (failed(lastCotangents))
      return failure();

    // Then every iteration, last first: body, then condition region.
    SmallVector<Value> inits(*lastCotangents);
    for (Value value : outer)
      inits.push_back(emitter.getCotangent(value));
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    Value iterations =
        linked ? residuals[0]
               : arith::SubIOp::create(b, loc, lastRow, residuals[0]);
    // With back links the row of the iteration being reversed is carried
    // after the cotangents of the arguments (the link of the last row
    // first, from reverseBefore), before the cotangents of outer values.
    unsigned numLinks = linked ? 1 : 0;
    auto reverse = scf::ForOp::create(b, loc, c0, iterations, c1, inits);
    Block *reverseBody = reverse.getBody();
    dropTerminator(reverseBody);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(reverseBody);
      Value row;
      if (linked) {
        row = reverseBody->getArgument(1 + carried.size());
      } else {
        Value fromLast = arith::AddIOp::create(
            b, loc, reverse.getInductionVar(), c1);
        row = arith::SubIOp::create(b, loc, lastRow, fromLast);
      }
      for (auto [index, value] : llvm::enumerate(outer))
        emitter.setCotangent(value, reverseBody->getArgument(
                                        1 + carried.size() + numLinks + index));

      emitter.resetCotangents(after);
      emitter.beginRows(&after, op, row);
      for (auto [index, position] : llvm::enumerate(carried))
        emitter.addCotangent(yield.getOperand(position),
                             reverseBody->getArgument(1 + index));
      if (failed(emitter.emitReverseOps(after)))
        return failure();
      SmallVector<Value> passedCotangents;
      for (unsigned position : passed)
        passedCotangents.push_back(
            emitter.getCotangent(after.getArgument(position)));
      emitter.endRows(&after);

      FailureOr<SmallVector<Value>> cotangents =
          reverseBefore(row, passedCotangents);
      if (failed(cotangents))
        return failure();
      SmallVector<Value> yields(*cotangents);
      for (Value value : outer)
        yields.push_back(emitter.lookupCotangent(value));
      scf::YieldOp::create(b, loc, yields);
    }
    for (auto [index, value] : llvm::enumerate(outer))
      emitter.setCotangent(
          value, reverse.getResult(carried.size() + numLinks + index));
    for (auto [index, position] : llvm::enumerate(carried))
      emitter.addCotangent(loop.getInits()[position], reverse.getResult(index));
    return success();
  }
};

} // namespace

void mlir::ad::registerSCFReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, scf::SCFDialect *) {
    scf::ForOp::attachInterface<ForRule>(*context);
    scf::IfOp::attachInterface<BranchRule<scf::IfOp>>(*context);
    scf::IndexSwitchOp::attachInterface<BranchRule<scf::IndexSwitchOp>>(
        *context);
    scf::ExecuteRegionOp::attachInterface<ExecuteRegionRule>(*context);
    scf::WhileOp::attachInterface<WhileRule>(*context);
  });
}
