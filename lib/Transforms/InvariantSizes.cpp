//===- InvariantSizes.cpp - sizes of loop values known at loop entry ------===//

#include "InvariantSizes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

using namespace mlir;
using namespace mlir::ad::sweeps;

InvariantSizes::InvariantSizes(OpBuilder &builder)
    : builder(builder), entry(builder.getInsertionBlock()) {}

/// Records the ops a builder creates.
namespace {
struct CreatedOps : OpBuilder::Listener {
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    ops.push_back(op);
  }
  SmallVector<Operation *> ops;
};
} // namespace

template <typename T>
FailureOr<T> InvariantSizes::attempt(llvm::function_ref<FailureOr<T>()> compute) {
  CreatedOps created;
  OpBuilder::Listener *previous = builder.getListener();
  builder.setListener(&created);
  FailureOr<T> result = compute();
  builder.setListener(previous);
  if (succeeded(result))
    return result;
  // Nothing built for the failed attempt stays, nor any size found with it.
  for (Operation *op : llvm::reverse(created.ops))
    op->erase();
  known.clear();
  return failure();
}

FailureOr<SmallVector<Value>> InvariantSizes::dynamicSizes(Value shaped,
                                                           bool &check) {
  runTimeChecks = true;
  needsCheck = false;
  auto sizes = attempt<SmallVector<Value>>([&]() -> FailureOr<SmallVector<Value>> {
    auto type = cast<RankedTensorType>(shaped.getType());
    SmallVector<Value> sizes;
    for (int64_t dim = 0; dim < type.getRank(); ++dim) {
      if (!type.isDynamicDim(dim))
        continue;
      SmallVector<func::CallOp> calls;
      FailureOr<Value> size = this->size(shaped, dim, calls);
      if (failed(size))
        return failure();
      sizes.push_back(*size);
    }
    return sizes;
  });
  check = needsCheck;
  return sizes;
}

FailureOr<Value> InvariantSizes::invariantIndex(Value value) {
  // An index that is not provably invariant is kept per iteration: no
  // check at run time.
  runTimeChecks = false;
  return attempt<Value>([&]() -> FailureOr<Value> {
    SmallVector<func::CallOp> calls;
    return size(value, std::nullopt, calls);
  });
}

bool InvariantSizes::availableAtEntry(Value value) const {
  if (value.getParentBlock() != entry)
    return false;
  Operation *def = value.getDefiningOp();
  if (!def)
    return true;
  Block::iterator point = builder.getInsertionPoint();
  return point == entry->end() || def->isBeforeInBlock(&*point);
}

/// The scf.for whose iter_arg or result `value` is, if any.
static scf::ForOp loopOf(Value value) {
  if (auto result = dyn_cast<OpResult>(value))
    return dyn_cast<scf::ForOp>(result.getOwner());
  auto argument = cast<BlockArgument>(value);
  auto loop = dyn_cast_or_null<scf::ForOp>(argument.getOwner()->getParentOp());
  if (!loop || argument.getArgNumber() == 0)
    return nullptr;
  return loop;
}

/// The argument of the innermost callee being followed that `value` is.
static BlockArgument calleeArgument(Value value,
                                    ArrayRef<func::CallOp> calls) {
  auto argument = dyn_cast<BlockArgument>(value);
  if (calls.empty() || !argument || !argument.getOwner()->isEntryBlock())
    return nullptr;
  func::CallOp call = calls.back();
  if (argument.getOwner()->getParentOp() !=
      SymbolTable::lookupNearestSymbolFrom(call, call.getCalleeAttr()))
    return nullptr;
  return argument;
}

/// Whether size() follows `value`'s size itself, rather than upstream's
/// value bounds: call results, loop-carried values, and tensors that are
/// branch results, results of elementwise ops or concatenations.
static bool followedHere(Value value) {
  Operation *def = value.getDefiningOp();
  if (isa_and_nonnull<func::CallOp>(def) || loopOf(value))
    return true;
  return isa<RankedTensorType>(value.getType()) && def &&
         (isa<scf::IfOp, tensor::ConcatOp>(def) ||
          def->hasTrait<OpTrait::Elementwise>());
}

bool InvariantSizes::isLeaf(Value value, ArrayRef<func::CallOp> calls) const {
  return (calls.empty() && availableAtEntry(value)) ||
         calleeArgument(value, calls) || followedHere(value);
}

FailureOr<Value> InvariantSizes::size(Value value, std::optional<int64_t> dim,
                                      SmallVectorImpl<func::CallOp> &calls) {
  Location loc = value.getLoc();
  if (dim) {
    auto type = cast<ShapedType>(value.getType());
    if (!type.isDynamicDim(*dim))
      return Value(arith::ConstantIndexOp::create(builder, loc,
                                                  type.getDimSize(*dim)));
  }
  std::pair<Value, int64_t> key = {value, dim.value_or(-1)};
  if (Value found = assumed(value, key.second, calls))
    return found;
  if (calls.empty())
    if (Value found = known.lookup(key))
      return found;
  if (calls.empty() && availableAtEntry(value)) {
    Value result = dim ? Value(tensor::DimOp::create(builder, loc, value, *dim))
                       : value;
    known[key] = result;
    return result;
  }
  // An argument of the callee being followed: the call's operand.
  if (BlockArgument argument = calleeArgument(value, calls)) {
    func::CallOp call = calls.pop_back_val();
    FailureOr<Value> result =
        size(call.getOperand(argument.getArgNumber()), dim, calls);
    calls.push_back(call);
    return result;
  }
  FailureOr<Value> result;
  Operation *def = value.getDefiningOp();
  if (!followedHere(value))
    result = sizeByValueBounds(value, dim, calls);
  else if (loopOf(value))
    result = sizeOfLoopValue(value, dim, calls);
  else if (isa<func::CallOp>(def))
    result = sizeOfCallResult(cast<OpResult>(value), dim, calls);
  else if (!dim)
    result = failure();
  else if (isa<scf::IfOp>(def))
    result = sizeOfBranchResult(cast<OpResult>(value), dim, calls);
  else if (auto concat = dyn_cast<tensor::ConcatOp>(def))
    result = sizeOfConcat(concat, *dim, calls);
  else
    result = sizeOfElementwise(def, *dim, calls);
  if (succeeded(result) && calls.empty())
    known[key] = *result;
  return result;
}

FailureOr<Value>
InvariantSizes::sizeOfElementwise(Operation *op, int64_t dim,
                                  SmallVectorImpl<func::CallOp> &calls) {
  // Elementwise ops on tensors (math.sin, arith.mulf): every tensor operand
  // has the result's shape.
  auto shaped = llvm::find_if(op->getOperands(), [](Value operand) {
    return isa<RankedTensorType>(operand.getType());
  });
  if (shaped == op->operand_end())
    return failure();
  return size(*shaped, dim, calls);
}

FailureOr<Value>
InvariantSizes::sizeOfConcat(tensor::ConcatOp concat, int64_t dim,
                             SmallVectorImpl<func::CallOp> &calls) {
  // The first operand's size along the other dimensions, the sum of the
  // operands' along the concatenated one.
  if (static_cast<uint64_t>(dim) != concat.getDim())
    return size(concat.getInputs().front(), dim, calls);
  Value total;
  for (Value input : concat.getInputs()) {
    FailureOr<Value> part = size(input, dim, calls);
    if (failed(part))
      return failure();
    total = total ? Value(arith::AddIOp::create(builder, concat.getLoc(),
                                                total, *part))
                  : *part;
  }
  return total;
}

FailureOr<Value>
InvariantSizes::sizeOfCallResult(OpResult result, std::optional<int64_t> dim,
                                 SmallVectorImpl<func::CallOp> &calls) {
  auto call = cast<func::CallOp>(result.getOwner());
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  // A body with one return (no recursion through the calls followed).
  if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock() ||
      llvm::any_of(calls, [&](func::CallOp outer) {
        return outer.getCalleeAttr() == call.getCalleeAttr();
      }))
    return failure();
  Value returned = callee.getBody().front().getTerminator()->getOperand(
      result.getResultNumber());
  calls.push_back(call);
  FailureOr<Value> size = this->size(returned, dim, calls);
  calls.pop_back();
  return size;
}

FailureOr<Value>
InvariantSizes::sizeOfLoopValue(Value value, std::optional<int64_t> dim,
                                SmallVectorImpl<func::CallOp> &calls) {
  scf::ForOp loop = loopOf(value);
  unsigned position = isa<OpResult>(value)
                          ? cast<OpResult>(value).getResultNumber()
                          : cast<BlockArgument>(value).getArgNumber() - 1;
  if (!dim) {
    // An index carried by the loop changes per iteration unless the body
    // yields its iter_arg unchanged.
    BlockArgument carried = loop.getRegionIterArgs()[position];
    if (loop.getYieldedValues()[position] != carried)
      return failure();
    return size(loop.getInits()[position], dim, calls);
  }
  FailureOr<Value> initial = size(loop.getInits()[position], dim, calls);
  if (failed(initial))
    return failure();
  // Assume the iter_arg keeps the init's size, then check that the yielded
  // value has it too (the assumption holds for this loop reached through
  // these calls only: another call of its function has other sizes).
  Value iterArg = loop.getRegionIterArgs()[position];
  if (Value found = assumed(iterArg, *dim, calls))
    return found;
  assumptions.push_back(
      {iterArg, *dim, SmallVector<func::CallOp>(calls.begin(), calls.end()),
       *initial});
  FailureOr<Value> yielded =
      size(loop.getYieldedValues()[position], dim, calls);
  assumptions.pop_back();
  if (failed(yielded))
    return failure();
  // A yielded size computed from the assumed one but not equal to it (one
  // more element per iteration) changes per iteration: a failure, not a
  // check that would fail at run time.
  if (failed(checkSame(*initial, *yielded,
                       /*allowCheck=*/!dependsOn(*yielded, *initial))))
    return failure();
  if (calls.empty())
    known[{iterArg, *dim}] = *initial;
  return initial;
}

LogicalResult InvariantSizes::checkSame(Value expected, Value actual,
                                        bool allowCheck) {
  if (actual == expected)
    return success();
  FailureOr<bool> equal = ValueBoundsConstraintSet::areEqual(
      ValueBoundsConstraintSet::Variable(actual),
      ValueBoundsConstraintSet::Variable(expected));
  if (succeeded(equal))
    return success(*equal);
  // Sizes known before the nest whose equality is not provable (one taken
  // from an argument, the other from another): the stores check, in each
  // iteration that runs, that the value has the sizes of its buffer.
  if (!allowCheck || !runTimeChecks)
    return failure();
  needsCheck = true;
  return success();
}

/// Whether `value` (an index built before the nest) is computed from
/// `source` (a few levels of ops at most).
bool InvariantSizes::dependsOn(Value value, Value source) {
  SmallVector<Value> worklist = {value};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (current == source)
      return true;
    Operation *def = current.getDefiningOp();
    if (!def || def->getBlock() != entry || !seen.insert(def).second)
      continue;
    llvm::append_range(worklist, def->getOperands());
  }
  return false;
}

FailureOr<Value>
InvariantSizes::sizeOfBranchResult(OpResult result, std::optional<int64_t> dim,
                                   SmallVectorImpl<func::CallOp> &calls) {
  auto branch = cast<scf::IfOp>(result.getOwner());
  if (branch.getElseRegion().empty())
    return failure();
  FailureOr<Value> thenSize =
      size(branch.thenYield()->getOperand(result.getResultNumber()), dim,
           calls);
  if (failed(thenSize))
    return failure();
  FailureOr<Value> elseSize =
      size(branch.elseYield()->getOperand(result.getResultNumber()), dim,
           calls);
  if (failed(elseSize) || failed(checkSame(*thenSize, *elseSize)))
    return failure();
  return thenSize;
}

Value InvariantSizes::assumed(Value value, int64_t dim,
                              ArrayRef<func::CallOp> calls) const {
  for (const Assumption &assumption : assumptions)
    if (assumption.value == value && assumption.dim == dim &&
        ArrayRef<func::CallOp>(assumption.calls) == calls)
      return assumption.size;
  return Value();
}

FailureOr<Value>
InvariantSizes::sizeByValueBounds(Value value, std::optional<int64_t> dim,
                                  SmallVectorImpl<func::CallOp> &calls) {
  AffineMap map;
  ValueDimList operands;
  auto stop = [&](Value candidate, std::optional<int64_t> candidateDim,
                  ValueBoundsConstraintSet &) {
    return !(candidate == value && candidateDim == dim) &&
           isLeaf(candidate, calls);
  };
  ValueBoundsConstraintSet::Variable variable =
      dim ? ValueBoundsConstraintSet::Variable(value, *dim)
          : ValueBoundsConstraintSet::Variable(value);
  if (failed(ValueBoundsConstraintSet::computeBound(
          map, operands, presburger::BoundType::EQ, variable, stop)))
    return failure();
  SmallVector<Value> operandSizes;
  for (auto &[operand, operandDim] : operands) {
    FailureOr<Value> operandSize = size(operand, operandDim, calls);
    if (failed(operandSize))
      return failure();
    operandSizes.push_back(*operandSize);
  }
  std::optional<SmallVector<Value, 8>> expanded =
      affine::expandAffineMap(builder, value.getLoc(), map, operandSizes);
  if (!expanded || expanded->size() != 1)
    return failure();
  return expanded->front();
}
