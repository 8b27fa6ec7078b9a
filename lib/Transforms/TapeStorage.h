//===- TapeStorage.h - where the forward function keeps values --*- C++ -*-===//
//
// The pullback reads forward values. One of the forward function's entry
// block is passed to it as is (a tape argument); one defined in a loop body,
// a recursive invocation or deeply nested branches is stored by one of the
// strategies below, each of which owns both sides: where the forward
// function writes the value, and how the pullback reads it back in the
// iteration it is reversing.
//
//  - IterationBuffers: loop nests whose trip count is known at entry
//    (scf.for): one buffer per value, an element per iteration of the nest,
//    allocated before the outermost loop (a tensor's dynamic sizes must be
//    the same in every iteration: see InvariantSizes.h).
//  - TapeRows: loops whose trip count is not (scf.while, loops holding one)
//    and recursive functions: rows of f64 slots in a growable tape, one row
//    per iteration or invocation, the buffer doubled when full. The row
//    width is known once every value is stored, so it is a placeholder
//    constant until finalize (the generator sets a recursion's, which all
//    functions of the recursion share).
//  - BranchTape: scalars of deeply nested branch ops, in f64 slots of one
//    buffer per invocation, instead of a result per level of nesting.
//
// Private to lib/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_TRANSFORMS_TAPESTORAGE_H
#define AD_LIB_TRANSFORMS_TAPESTORAGE_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::ad::sweeps {

/// Where the pullback reads a stored value.
struct TapeRead {
  /// The pullback's builder, at the point the read goes.
  OpBuilder &builder;
  /// The pullback's position of the iteration or invocation being reversed
  /// (null for the branch tape).
  Value position;
  /// The pullback's entry block, where placeholders of sizes go.
  Block *pullbackEntry;
  /// Makes a value of the forward function available in the pullback (as a
  /// tape argument), once per value.
  llvm::function_ref<Value(Value)> pass;
};

/// One way of keeping forward values for the pullback.
class TapeStorage {
public:
  virtual ~TapeStorage() = default;
  /// Whether this storage keeps `value`, a value of the forward function
  /// (the branch tape takes it where it is defined; the others once it is
  /// carried out of the branch ops holding it, see ForwardSweep::escape).
  virtual bool covers(Value value) const = 0;
  /// Stores `value`, which this storage covers, in the forward function
  /// (once per value) and reads it at `read`; null when a value of its type
  /// cannot be stored here.
  virtual Value storeAndRead(Value value, const TapeRead &read) = 0;
  /// Sets the sizes that are known only once every value is stored.
  virtual void finalize() = 0;
  /// What this storage can keep, for diagnostics ("a ... holds ...").
  virtual StringRef describeCapacity() const = 0;
};

/// Per-iteration buffers of scf.for nests.
class IterationBuffers final : public TapeStorage {
public:
  /// Starts the body `forwardBody` of a loop whose iterations are numbered
  /// by `iteration` out of `tripCount`. `entryBuilder` is before the op of
  /// the function's entry block holding the loop (where the nest's capacity
  /// is computed), `bodyBuilder` at the start of the body.
  void beginLoop(Block *forwardBody, Value iteration, Value tripCount,
                 OpBuilder &entryBuilder, OpBuilder &bodyBuilder);

  bool covers(Value value) const override;
  Value storeAndRead(Value value, const TapeRead &read) override;
  void finalize() override {}
  StringRef describeCapacity() const override {
    return "a buffer per value of a loop nest holds integer, index and float "
           "scalars and tensors whose sizes are the same in every iteration "
           "and known before the nest";
  }

private:
  struct Scope {
    /// Position of the current iteration among all iterations of the nest
    /// (defined at the start of the body).
    Value linearIndex;
    /// Number of iterations of the whole nest, defined in the forward
    /// entry block before the op that contains the loop.
    Value capacity;
  };
  struct Buffer {
    Value memref;
    /// The dynamic sizes of a tensor stored per iteration, defined before
    /// the nest.
    SmallVector<Value> sizes;
  };
  const Scope *scopeContaining(Block *block) const;
  OpBuilder beforeNest(const Scope &scope);
  const Buffer *bufferOf(Value value, const Scope &scope);

  DenseMap<Block *, Scope> scopes;
  DenseMap<Value, Buffer> buffers;
  /// Index values the same in every iteration, computed before the nest
  /// (null when they are not).
  DenseMap<Value, Value> invariants;
  /// Per capacity: the last buffer allocated with it (buffers follow it in
  /// the order they are requested).
  DenseMap<Value, Operation *> lastBufferOf;
};

/// The growable tape of one loop whose trip count is unknown at entry, or
/// of a recursion: rows of `width` f64 slots, one row per iteration.
struct GrowableTape {
  /// Current forward values of the buffer and of the next free row.
  Value buffer, nextRow;
  /// Placeholders for the row width, set once the adjoint is complete.
  Operation *forwardWidth = nullptr, *pullbackWidth = nullptr;
  /// Slot of each forward value stored per row.
  llvm::MapVector<Value, unsigned> slots;
  /// Slots per row so far (a tensor takes one per element): the most any
  /// kind of row takes.
  unsigned width = 0;
  /// Slots taken so far in the rows of each kind, keyed by the op whose
  /// iterations (a loop) or invocations (a recursive function) take them.
  /// A row is of one kind only (a while loop's condition and body share
  /// their iteration's), so kinds reuse each other's slots.
  DenseMap<Operation *, unsigned> kindWidth;
  /// What mergeSlots needs of each value stored: its kind and the slots it
  /// takes. The ops holding its slot number (the store's constant and every
  /// load's) and its store (a memref.store for a scalar) carry its index
  /// here as attribute kSlotOfAttrName / kStoreOfAttrName (ops may be
  /// rebuilt between the store and mergeSlots).
  struct StoredValue {
    Operation *kind = nullptr;
    unsigned size = 0;
  };
  SmallVector<StoredValue> stored;
  /// The index in `stored` of each value stored.
  DenseMap<Value, unsigned> storedIndex;
  /// The number of this tape among those of its function (in the
  /// attributes).
  unsigned number = 0;
  /// The pullback's value of the final buffer when it is an argument.
  Value pullbackBuffer;
  /// Every forward value the buffer took, in program order: a store goes to
  /// the buffer current where it is inserted (a call may have reallocated
  /// the one the row started with).
  SmallVector<Value> bufferHistory;
  /// Where the function that created the buffer remembers the rows its
  /// calls needed (see createGrowableTape); null for a tape it was given.
  memref::GlobalOp rowsHint;
  /// Whether the rows are those of a recursion (the function's own, or a
  /// recursive callee's filling this tape), whose width the generator sets.
  bool widthOfRecursion = false;
  /// Whether this is a restartable recursion's tape (see
  /// DerivativeFunctions::restartable): the buffer is never reallocated,
  /// and a row past its end is stored in its last row.
  bool restartable = false;
};

/// Rows of the growable tapes of one function.
class TapeRows final : public TapeStorage {
public:
  explicit TapeRows(Block *forwardEntry) : forwardEntry(forwardEntry) {}

  /// The growable tape keyed by `key` (a loop, a function), created empty
  /// with a placeholder width on first use.
  GrowableTape &tape(Operation *key);
  /// Values of forward block `forwardBlock` go to row `row` of `key`'s
  /// tape, whose buffer there is `buffer`; the row is one of those `kind`
  /// (a loop, a recursive function) takes.
  void beginRows(Block *forwardBlock, Operation *key, Operation *kind,
                 Value row, Value buffer);
  /// Values of `forwardBlock` (whose ops are all emitted) are stored at its
  /// end instead, into row `row` of `buffer` (defined there): a recursive
  /// invocation takes its row once its callees have taken theirs. False
  /// (nothing changed) when a value is already stored.
  bool storeRowsAtEnd(Block *forwardBlock, Value row, Value buffer);
  /// The tapes, by key.
  llvm::MapVector<Operation *, GrowableTape> &getTapes() { return tapes; }
  /// Whether values of forward block `block` go to rows.
  bool coversBlock(Block *block) const { return scopes.contains(block); }

  bool covers(Value value) const override;
  Value storeAndRead(Value value, const TapeRead &read) override;
  void finalize() override;
  /// Once the branch ops carry their values out (finalizeEscapes) and both
  /// functions are complete: a scalar stored twice in one kind of row
  /// (values of different branches carried out in one result) keeps one
  /// slot, the slots of each kind are numbered again without gaps, and the
  /// widths are set again. `functions` hold the stores and loads. Only
  /// before any simplification of them (constant uniquing would merge a
  /// slot number with an equal constant that is not one); with `merge`
  /// false, only the attributes naming the slots are removed.
  void mergeSlots(ArrayRef<Operation *> functions, bool merge = true);
  StringRef describeCapacity() const override {
    return "a row of a while loop's or a recursion's tape has a fixed width "
           "and holds scalars of at most 64 bits and statically shaped "
           "tensors of such floats or of integers of at most 32 bits";
  }

private:
  struct Scope {
    Operation *key, *kind;
    Value row, buffer;
    /// Whether stores go to the end of the block (storeRowsAtEnd).
    bool atEnd = false;
  };
  unsigned store(Value value, const Scope &scope);

  Block *forwardEntry;
  llvm::MapVector<Operation *, GrowableTape> tapes;
  DenseMap<Block *, Scope> scopes;
};

/// Scalars of branch ops nested at least kBranchTapeDepth deep (any value
/// it covers can be stored).
class BranchTape final : public TapeStorage {
public:
  /// `branches` are the branch ops that carry out what the adjoint reads;
  /// a value defined at least kBranchTapeDepth levels deep in them goes to
  /// the branch tape. Disabled in recursive functions (rows hold all).
  BranchTape(Block *forwardEntry,
             const llvm::SmallPtrSetImpl<Operation *> &branches)
      : forwardEntry(forwardEntry), branches(branches) {}
  void disable() { enabled = false; }

  bool covers(Value value) const override;
  Value storeAndRead(Value value, const TapeRead &read) override;
  void finalize() override;
  StringRef describeCapacity() const override {
    return "the branch tape holds scalars of at most 64 bits";
  }

  /// The buffer (allocated at entry), once a value has been stored in it.
  Value getBuffer() const { return buffer; }
  unsigned getWidth() const { return slots.size(); }
  /// Once the pullback is simplified and the buffer is the pullback's
  /// argument `argument`: allocates it with its static size and passes it
  /// as a tensor (which a caller can keep per iteration, in a row or in its
  /// record, like any other value) built at `forwardBuilder`, read with
  /// tensor.extract. Returns that tensor.
  Value passAsTensor(BlockArgument argument, OpBuilder &forwardBuilder);

private:
  Block *forwardEntry;
  const llvm::SmallPtrSetImpl<Operation *> &branches;
  bool enabled = true;
  Value buffer;
  Operation *widthPlaceholder = nullptr;
  llvm::MapVector<Value, unsigned> slots;
};

} // namespace mlir::ad::sweeps

#endif // AD_LIB_TRANSFORMS_TAPESTORAGE_H
