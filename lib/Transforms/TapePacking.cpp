//===- TapePacking.cpp - records of tape values -----------------*- C++ -*-===//
//
// A generated forward function returns its tape values after its results.
// When a chain of calls would pass many of them on (each caller keeping its
// callees' tapes), the scalars and the callees' records are packed into one
// record (a tensor of f64 slots) that the pullback unpacks.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/DerivativeGenerator.h"
#include "ad/IR/TapeUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/BitVector.h"

using namespace mlir;
using namespace mlir::ad;

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
