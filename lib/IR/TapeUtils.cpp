//===- TapeUtils.cpp - growable tapes of f64 slots --------------*- C++ -*-===//
//
// Builders for growable tapes: creation, doubling, and the encoding of
// scalars of any type (and tensors of floats, elementwise) into f64 slots.
//
//===----------------------------------------------------------------------===//

#include "ad/IR/TapeUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

/// The most f64 slots (1 GiB) a growable tape starts with from its hint.
/// Only the pages a call writes are mapped in, so a small call after a
/// huge one pays for the address range only.
static constexpr int64_t kMaxHintedSlots = int64_t(1) << 27;

/// Raises global `rowsHint` to `rows` atomically; returns its value before
/// (an i64).
static Value raiseRowsHint(OpBuilder &b, Location loc, Value rows,
                           memref::GlobalOp rowsHint) {
  Value global = memref::GetGlobalOp::create(b, loc, rowsHint.getType(),
                                             rowsHint.getSymName());
  Value bits = arith::IndexCastOp::create(b, loc, b.getI64Type(), rows);
  return memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::maxu, bits,
                                     global, ValueRange());
}

Value mlir::ad::createGrowableTape(OpBuilder &b, Location loc, Value width,
                                   memref::GlobalOp rowsHint) {
  Value least = arith::ConstantIndexOp::create(b, loc, 16);
  // An atomic max with the least size reads the hint (no plain load may
  // race with another call's update).
  Value hinted = arith::IndexCastOp::create(
      b, loc, b.getIndexType(), raiseRowsHint(b, loc, least, rowsHint));
  // At most 1 GiB from the hint (a larger tape grows by doubling): the
  // address range of a huge call is reserved, not its memory.
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value slots = arith::ConstantIndexOp::create(b, loc, kMaxHintedSlots);
  Value capped = arith::DivUIOp::create(
      b, loc, slots, arith::MaxUIOp::create(b, loc, width, one));
  Value rows = arith::MaxUIOp::create(
      b, loc, arith::MinUIOp::create(b, loc, hinted, capped), least);
  Value size = arith::MulIOp::create(b, loc, rows, width);
  auto type = MemRefType::get({ShapedType::kDynamic}, b.getF64Type());
  return memref::AllocOp::create(b, loc, type, size);
}

void mlir::ad::recordTapeRows(OpBuilder &b, Location loc, Value tape,
                              Value width, memref::GlobalOp rowsHint) {
  Value capacity = memref::DimOp::create(b, loc, tape, 0);
  // A recursion may store nothing (rows of width 0).
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value rows = arith::DivUIOp::create(
      b, loc, capacity, arith::MaxUIOp::create(b, loc, width, one));
  raiseRowsHint(b, loc, rows, rowsHint);
}

memref::GlobalOp mlir::ad::createTapeRowsHint(SymbolTable &symbols,
                                              Operation *before, Location loc,
                                              StringRef name) {
  OpBuilder b(before);
  auto type = MemRefType::get({}, b.getI64Type());
  auto global = memref::GlobalOp::create(
      b, loc, name, b.getStringAttr("private"), type,
      DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                             b.getI64IntegerAttr(0).getValue()),
      /*constant=*/false, /*alignment=*/IntegerAttr());
  symbols.insert(global, Block::iterator(before));
  return global;
}

Value mlir::ad::growTapeIfFull(OpBuilder &b, Location loc, Value tape,
                               Value row, Value width) {
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value c2 = arith::ConstantIndexOp::create(b, loc, 2);
  Value rows = arith::AddIOp::create(b, loc, row, c1);
  Value needed = arith::MulIOp::create(b, loc, rows, width);
  Value capacity = memref::DimOp::create(b, loc, tape, c0);
  Value full = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, needed,
                                     capacity);
  auto grow = scf::IfOp::create(b, loc, tape.getType(), full,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(grow.thenBlock());
  Value doubled = arith::MulIOp::create(b, loc, capacity, c2);
  Value size = arith::MaxUIOp::create(b, loc, doubled, needed);
  Value larger = memref::ReallocOp::create(
      b, loc, cast<MemRefType>(tape.getType()), tape, size);
  scf::YieldOp::create(b, loc, larger);
  b.setInsertionPointToStart(grow.elseBlock());
  scf::YieldOp::create(b, loc, tape);
  return grow.getResult(0);
}

Value mlir::ad::rerunIfOverflowed(
    OpBuilder &b, Location loc, Value tape, Value nextRow, Value width,
    function_ref<void(OpBuilder &, Value)> rerun) {
  // Rows 0 .. nextRow - 1 and the last row, which takes the rows past the
  // end: rows fit when nextRow + 1 do.
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value c2 = arith::ConstantIndexOp::create(b, loc, 2);
  Value needed = arith::MulIOp::create(
      b, loc, arith::AddIOp::create(b, loc, nextRow, c1), width);
  Value capacity = memref::DimOp::create(b, loc, tape, c0);
  Value overflowed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                           needed, capacity);
  auto grow = scf::IfOp::create(b, loc, tape.getType(), overflowed,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(grow.thenBlock());
  Value size = arith::MaxUIOp::create(
      b, loc, arith::MulIOp::create(b, loc, capacity, c2), needed);
  Value larger = memref::ReallocOp::create(
      b, loc, cast<MemRefType>(tape.getType()), tape, size);
  rerun(b, larger);
  scf::YieldOp::create(b, loc, larger);
  b.setInsertionPointToStart(grow.elseBlock());
  scf::YieldOp::create(b, loc, tape);
  return grow.getResult(0);
}

Value mlir::ad::lastRowFilled(OpBuilder &b, Location loc, Value nextRow) {
  return arith::SubIOp::create(b, loc, nextRow,
                               arith::ConstantIndexOp::create(b, loc, 1));
}

Value mlir::ad::encodeAsF64(OpBuilder &b, Location loc, Value value) {
  Type type = value.getType();
  Type f64 = b.getF64Type();
  // A tensor is encoded elementwise: floats extended, integers of at most
  // 32 bits (a select's condition) converted, both exactly.
  if (auto tensorType = dyn_cast<RankedTensorType>(type)) {
    if (tensorType.getElementType() == f64)
      return value;
    if (tensorType.getElementType().isInteger())
      return arith::SIToFPOp::create(b, loc, tensorType.clone(f64), value);
    return arith::ExtFOp::create(b, loc, tensorType.clone(f64), value);
  }
  if (type == f64)
    return value;
  if (isa<FloatType>(type))
    return arith::ExtFOp::create(b, loc, f64, value);
  Type i64 = b.getI64Type();
  if (type.isIndex())
    value = arith::IndexCastOp::create(b, loc, i64, value);
  else if (type.getIntOrFloatBitWidth() < 64)
    value = arith::ExtUIOp::create(b, loc, i64, value);
  auto bits = arith::BitcastOp::create(b, loc, f64, value);
  bits->setAttr(kTapeSlotAttrName, b.getUnitAttr());
  return bits;
}

Value mlir::ad::decodeFromF64(OpBuilder &b, Location loc, Value slot,
                              Type type) {
  if (type == slot.getType())
    return slot;
  if (isa<FloatType>(getElementTypeOrSelf(type)))
    return arith::TruncFOp::create(b, loc, type, slot);
  if (isa<RankedTensorType>(type))
    return arith::FPToSIOp::create(b, loc, type, slot);
  Value bits = arith::BitcastOp::create(b, loc, b.getI64Type(), slot);
  if (type.isIndex())
    return arith::IndexCastOp::create(b, loc, type, bits);
  if (type.getIntOrFloatBitWidth() < 64)
    return arith::TruncIOp::create(b, loc, type, bits);
  return bits;
}
