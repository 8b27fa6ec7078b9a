//===- TapeUtils.h - growable tapes of f64 slots ----------------*- C++ -*-===//
//
// A growable tape is a memref<?xf64> of rows of a fixed number of slots,
// reallocated to twice its size when a row does not fit. Loops with unknown
// trip counts and recursive functions store what their adjoints read in one.
//
//===----------------------------------------------------------------------===//

#ifndef AD_IR_TAPEUTILS_H
#define AD_IR_TAPEUTILS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::ad {

/// A new, empty growable tape of rows of `width` slots, with room for as
/// many rows as the most an earlier call needed at this place (`rowsHint`,
/// an i64 global updated by recordTapeRows) up to 1 GiB, and at least 16:
/// a program called again with a similar size never grows its tape.
Value createGrowableTape(OpBuilder &b, Location loc, Value width,
                         memref::GlobalOp rowsHint);

/// Raises `rowsHint` to the rows `tape`, a growable tape of `width` slots
/// per row, has room for (atomically: calls may run in parallel).
void recordTapeRows(OpBuilder &b, Location loc, Value tape, Value width,
                    memref::GlobalOp rowsHint);

/// The i64 global, initially 0, that createGrowableTape reads, inserted
/// into `symbols` under a fresh name derived from `name`.
memref::GlobalOp createTapeRowsHint(SymbolTable &symbols, Operation *before,
                                    Location loc, StringRef name);

/// `tape`, reallocated to max(2 * capacity, needed) when row `row` of
/// `width` slots does not fit (amortized O(1) per row).
Value growTapeIfFull(OpBuilder &b, Location loc, Value tape, Value row,
                     Value width);

/// After a restartable recursion (see DerivativeFunctions::restartable)
/// filled rows up to `nextRow` (excluded) of `tape`, whose rows are `width`
/// slots wide and whose last row took the rows that did not fit: `tape`
/// when the rows fit in front of the last row, otherwise `tape`
/// reallocated to max(2 * capacity, (nextRow + 1) * width) slots, on which
/// `rerun` is called to run the recursion again.
Value rerunIfOverflowed(OpBuilder &b, Location loc, Value tape, Value nextRow,
                        Value width,
                        function_ref<void(OpBuilder &, Value)> rerun);

/// The row a recursive forward call filled for its own invocation, from the
/// next free row it returns: an invocation takes its row after its callees
/// (rows in post-order), so it is the last one.
Value lastRowFilled(OpBuilder &b, Location loc, Value nextRow);

/// Marks the arith.bitcast that puts an integer's bits into an f64 tape slot.
/// The slot is only ever decoded back into that integer, so the bitcast's
/// tangent is zero in forward mode over a generated function (a user's
/// integer-to-float bitcast has no derivative rule). Internal: not for user
/// programs.
inline constexpr const char kTapeSlotAttrName[] = "ad.tape_slot";

/// `value` (a float, integer or index) widened or bitcast into an f64 slot;
/// a ranked tensor of floats widened, or of integers of at most 32 bits
/// converted, elementwise to f64.
Value encodeAsF64(OpBuilder &b, Location loc, Value value);

/// The inverse of encodeAsF64.
Value decodeFromF64(OpBuilder &b, Location loc, Value slot, Type type);

} // namespace mlir::ad

#endif // AD_IR_TAPEUTILS_H
