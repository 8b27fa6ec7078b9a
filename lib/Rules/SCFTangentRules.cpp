//===- SCFTangentRules.cpp - forward-mode rules of scf ops -------*- C++ -*-===//
//
// Forward mode needs no tape: each region op is rebuilt with the tangents
// of its active loop-carried values and results carried next to the primal
// values (extra iter_args, extra results), and its regions are emitted with
// the ops' own tangent rules. A loop whose trip count is only known at run
// time (scf.while) is no harder than one whose trip count is known.
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADInterfaces.h"
#include "ad/Rules/RegionRuleUtils.h"
#include "ad/Rules/Rules.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::ad;

namespace {

/// Positions i of a type with tangents (a buffer's is its shadow) at which
/// any of `groups` holds an active value: the values a rebuilt region op
/// carries a tangent for.
static SmallVector<unsigned>
carriedPositions(TangentEmitter &emitter, TypeRange types,
                 ArrayRef<ValueRange> groups) {
  SmallVector<unsigned> positions;
  for (auto [index, type] : llvm::enumerate(types)) {
    if (!hasTangentType(type))
      continue;
    if (llvm::any_of(groups, [&, index = index](ValueRange group) {
          return emitter.isActive(group[index]);
        }))
      positions.push_back(index);
  }
  return positions;
}

/// The primal values of `originals` followed by the tangents of those at
/// `positions`.
static SmallVector<Value> primalsAndTangents(TangentEmitter &emitter,
                                             ValueRange originals,
                                             ArrayRef<unsigned> positions) {
  SmallVector<Value> values;
  for (Value original : originals)
    values.push_back(emitter.lookup(original));
  for (unsigned position : positions)
    values.push_back(emitter.getTangent(originals[position]));
  return values;
}

/// `types` followed by those at `positions`.
static SmallVector<Type> withTangentTypes(TypeRange types,
                                          ArrayRef<unsigned> positions) {
  SmallVector<Type> all(types);
  for (unsigned position : positions)
    all.push_back(types[position]);
  return all;
}

/// Maps `originals` to the first values of `values` and sets the tangents
/// of those at `positions` to the values after them.
static void mapWithTangents(TangentEmitter &emitter, ValueRange originals,
                            ValueRange values, ArrayRef<unsigned> positions) {
  emitter.mapValues(originals, values.take_front(originals.size()));
  for (auto [index, position] : llvm::enumerate(positions))
    emitter.setTangent(originals[position],
                       values[originals.size() + index]);
}

/// Emits the ops of `original` into `target` (at its end), then `target`'s
/// terminator: `makeTerminator(yielded)` with the primal values of what
/// `original`'s terminator yields followed by the tangents of those at
/// `positions`.
static LogicalResult
emitRegionBody(TangentEmitter &emitter, Block &original, Block *target,
               ArrayRef<unsigned> positions,
               function_ref<void(OpBuilder &, ValueRange)> makeTerminator) {
  OpBuilder &b = emitter.getBuilder();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(target);
  if (failed(emitter.emitOps(original)))
    return failure();
  SmallVector<Value> yielded = primalsAndTangents(
      emitter, original.getTerminator()->getOperands(), positions);
  makeTerminator(b, yielded);
  return success();
}

struct ForTangentRule
    : TangentRuleOpInterface::ExternalModel<ForTangentRule, scf::ForOp> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    auto loop = cast<scf::ForOp>(op);
    Block &body = *loop.getBody();
    SmallVector<unsigned> carried = carriedPositions(
        emitter, loop.getResultTypes(),
        {loop.getInitArgs(), loop.getRegionIterArgs(), loop.getResults(),
         body.getTerminator()->getOperands()});
    OpBuilder &b = emitter.getBuilder();
    auto tangentLoop = scf::ForOp::create(
        b, loop.getLoc(), emitter.lookup(loop.getLowerBound()),
        emitter.lookup(loop.getUpperBound()), emitter.lookup(loop.getStep()),
        primalsAndTangents(emitter, loop.getInitArgs(), carried),
        /*bodyBuilder=*/nullptr, loop.getUnsignedCmp());
    Block *target = tangentLoop.getBody();
    if (!target->empty())
      target->getTerminator()->erase();
    emitter.mapValues(loop.getInductionVar(), tangentLoop.getInductionVar());
    mapWithTangents(emitter, loop.getRegionIterArgs(),
                    tangentLoop.getRegionIterArgs(), carried);
    if (failed(emitRegionBody(emitter, body, target, carried,
                              [&](OpBuilder &builder, ValueRange yielded) {
                                scf::YieldOp::create(builder, loop.getLoc(),
                                                     yielded);
                              })))
      return failure();
    mapWithTangents(emitter, loop.getResults(), tangentLoop.getResults(),
                    carried);
    return success();
  }
};

/// scf.if, scf.index_switch and scf.execute_region: regions of one block
/// without arguments, each yielding the op's results. The rebuilt op
/// yields the tangents of the active results too.
template <typename OpT>
struct BranchTangentRule
    : TangentRuleOpInterface::ExternalModel<BranchTangentRule<OpT>, OpT> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    for (Region &region : op->getRegions())
      if (!region.empty() && !region.hasOneBlock())
        return emitter.emitError(op, "cannot differentiate '" +
                                         op->getName().getStringRef() +
                                         "' with several blocks in a region; "
                                         "run lift-cf-to-scf first");
    SmallVector<Value> results(op->getResults());
    SmallVector<unsigned> carried =
        carriedPositions(emitter, op->getResultTypes(), {results});
    SmallVector<Value> operands;
    for (Value operand : op->getOperands())
      operands.push_back(emitter.lookup(operand));
    Operation *rebuilt =
        createEmptyLike(emitter.getBuilder(), op, operands,
                        withTangentTypes(op->getResultTypes(), carried));
    for (auto [original, target] :
         llvm::zip(op->getRegions(), rebuilt->getRegions())) {
      if (original.empty())
        continue;
      Block *block = new Block();
      target.push_back(block);
      if (failed(emitRegionBody(emitter, original.front(), block, carried,
                                [&](OpBuilder &builder, ValueRange yielded) {
                                  scf::YieldOp::create(builder, op->getLoc(),
                                                       yielded);
                                })))
        return failure();
    }
    mapWithTangents(emitter, op->getResults(), rebuilt->getResults(), carried);
    return success();
  }
};

struct WhileTangentRule
    : TangentRuleOpInterface::ExternalModel<WhileTangentRule, scf::WhileOp> {
  LogicalResult emitTangent(Operation *op, TangentEmitter &emitter) const {
    auto loop = cast<scf::WhileOp>(op);
    Block &before = loop.getBefore().front();
    Block &after = loop.getAfter().front();
    auto condition = cast<scf::ConditionOp>(before.getTerminator());
    // Values entering the condition region, and values passed to the body
    // and out of the loop.
    SmallVector<unsigned> entering = carriedPositions(
        emitter, loop.getInits().getTypes(),
        {loop.getInits(), before.getArguments(),
         after.getTerminator()->getOperands()});
    SmallVector<unsigned> passed = carriedPositions(
        emitter, loop.getResultTypes(),
        {condition.getArgs(), after.getArguments(), loop.getResults()});
    OpBuilder &b = emitter.getBuilder();
    Location loc = loop.getLoc();
    SmallVector<Type> resultTypes =
        withTangentTypes(loop.getResultTypes(), passed);
    auto rebuilt = scf::WhileOp::create(
        b, loc, resultTypes,
        primalsAndTangents(emitter, loop.getInits(), entering));
    SmallVector<Type> enteringTypes =
        withTangentTypes(loop.getInits().getTypes(), entering);
    Block *beforeTarget = b.createBlock(
        &rebuilt.getBefore(), {}, enteringTypes,
        SmallVector<Location>(enteringTypes.size(), loc));
    Block *afterTarget =
        b.createBlock(&rebuilt.getAfter(), {}, resultTypes,
                      SmallVector<Location>(resultTypes.size(), loc));
    b.setInsertionPointAfter(rebuilt);

    mapWithTangents(emitter, before.getArguments(),
                    beforeTarget->getArguments(), entering);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(beforeTarget);
      if (failed(emitter.emitOps(before)))
        return failure();
      scf::ConditionOp::create(
          b, condition.getLoc(), emitter.lookup(condition.getCondition()),
          primalsAndTangents(emitter, condition.getArgs(), passed));
    }
    mapWithTangents(emitter, after.getArguments(), afterTarget->getArguments(),
                    passed);
    if (failed(emitRegionBody(emitter, after, afterTarget, entering,
                              [&](OpBuilder &builder, ValueRange yielded) {
                                scf::YieldOp::create(builder, loc, yielded);
                              })))
      return failure();
    mapWithTangents(emitter, loop.getResults(), rebuilt.getResults(), passed);
    return success();
  }
};

} // namespace

void mlir::ad::registerSCFTangentRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, scf::SCFDialect *) {
    scf::ForOp::attachInterface<ForTangentRule>(*context);
    scf::IfOp::attachInterface<BranchTangentRule<scf::IfOp>>(*context);
    scf::IndexSwitchOp::attachInterface<
        BranchTangentRule<scf::IndexSwitchOp>>(*context);
    scf::ExecuteRegionOp::attachInterface<
        BranchTangentRule<scf::ExecuteRegionOp>>(*context);
    scf::WhileOp::attachInterface<WhileTangentRule>(*context);
  });
}
