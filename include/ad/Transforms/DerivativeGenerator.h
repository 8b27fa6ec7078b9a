//===- DerivativeGenerator.h - forward and pullback functions ---*- C++ -*-===//
//
// Generates, once per (callee, wrt) pair, the augmented forward function and
// the pullback function of a func.func. Compilers embedding MLIR-AD can use
// it directly instead of the ad ops.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_DERIVATIVEGENERATOR_H
#define AD_TRANSFORMS_DERIVATIVEGENERATOR_H

#include "ad/IR/ADDialect.h"
#include "ad/IR/ADInterfaces.h"
#include "ad/Transforms/MemoryWrites.h"

#include "mlir/Analysis/CallGraph.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

#include <map>
#include <memory>
#include <vector>

namespace mlir::ad {

/// Values defined in scf.if / scf.index_switch ops nested at least this deep
/// directly under a function's entry are stored in the function's branch
/// tape (a buffer) instead of being carried out of every enclosing branch
/// op, which would grow as depth x values.
inline constexpr unsigned kBranchTapeDepth = 3;

/// Marks a row-width placeholder of a recursion's tape; its value is the
/// symbol of the recursion's root function (see
/// DerivativeGenerator::addRecursionWidth).
inline constexpr const char kRowWidthAttrName[] = "ad.row_width_of";

/// The default of DerivativeGenerator::setCheckpointLevels.
inline constexpr unsigned kDefaultCheckpointLevels = 3;

/// `<callee>_ad_<kind>_<wrt positions joined by '_'>`: the name of a
/// function generated for `callee` ("fwd", "pb", "jvp", ...), renamed by
/// the symbol table on a clash.
std::string getDerivativeName(func::FuncOp callee, StringRef kind,
                              ArrayRef<int64_t> wrt);

/// Fails through `emitError` when a float's bits reach `callee` (which has a
/// user-written rule) through an integer argument at `varied`: the rule
/// would take them as a constant.
LogicalResult checkRuleSeesNoFloatBits(
    func::FuncOp callee, ArrayRef<int64_t> varied,
    function_ref<InFlightDiagnostic(Operation *, const Twine &)> emitError);

/// The func.func of `symbols` named by `symbol` (a flat reference), or
/// null.
func::FuncOp lookupFunction(SymbolTable &symbols, SymbolRefAttr symbol);

/// Owns the derivative functions generated in one module.
class DerivativeGenerator {
public:
  explicit DerivativeGenerator(ModuleOp module);
  /// Uses `symbols`, the symbol table of the module, which other
  /// generators (TangentGenerator) working on the module share: each sees
  /// the functions the others add.
  explicit DerivativeGenerator(SymbolTable &symbols);

  /// The derivative functions of `callee` with respect to the argument
  /// positions `wrt` (strictly increasing), generating them next to the
  /// callee on first request. The positions of differentiable type get
  /// gradients; integer positions (varied in a caller, possibly holding a
  /// float's bits) only seed the activity analysis, so a derivative that
  /// flows through them is differentiated or reported, never dropped. On failure a
  /// diagnostic has been emitted (at the offending op, with notes naming the
  /// chain of calls from `requester`) and the module is unchanged.
  FailureOr<DerivativeFunctions> getOrCreate(func::FuncOp callee,
                                             ArrayRef<int64_t> wrt,
                                             Operation *requester);

  /// Emits an error at `op` with a note for each call being differentiated
  /// on the way to it.
  InFlightDiagnostic emitError(Operation *op, const Twine &message);

  /// Whether `a` and `b` call each other, directly or through other
  /// functions (a function calling itself is in its own recursion). The
  /// recursions are those of the module when first asked (preparation only
  /// inlines non-recursive callees, which keeps them).
  bool inSameRecursion(func::FuncOp a, func::FuncOp b);

  /// The function of the module named by `symbol`, or null (constant time,
  /// unlike a lookup from an op, which scans the module).
  func::FuncOp lookupFunction(SymbolRefAttr symbol);

  /// Registers a row-width placeholder (an arith.constant of index type) of
  /// the tape shared by the recursion of `function`, and the slots one of
  /// its functions needs; finalize() sets every placeholder to the maximum.
  /// The placeholder is marked with kRowWidthAttrName, naming the
  /// recursion, so that its copies (forward mode over the function clones
  /// it) are set too.
  void addRecursionWidth(func::FuncOp function, Operation *placeholder,
                         unsigned slots);

  /// A new global, placed before `function`, in which the growable tape
  /// `function` creates at one place remembers the most rows any call
  /// needed (see createGrowableTape).
  memref::GlobalOp createTapeRowsHint(func::FuncOp function, Location loc);

  /// Makes the rows of the tapes of the recursions of `a` and `b` equally
  /// wide: one of them writes rows into the other's tape.
  void shareRecursionTape(func::FuncOp a, func::FuncOp b);

  /// Completes what needs every function generated: row widths of the tapes
  /// shared by recursive functions. Call after the last getOrCreate.
  void finalize();

  /// A tree recursion (one calling itself from inside a loop) differentiated
  /// from outside it runs its first `levels` levels of invocations as
  /// copies of its functions (`<f>_ad_level<i>`) whose calls to the next
  /// level are checkpointed (kCheckpointAttrName): the forward sweep runs
  /// the recursion's primal, and the pullback of each invocation of the
  /// first levels recomputes one subtree at a time, taping only that
  /// subtree. The tape shrinks by the product of the first levels' loop
  /// trip counts (GradBench's det at 11 x 11: from 5 GB to 5 MB, reused)
  /// for `levels` more runs of the primal. 0 keeps the whole tree's tape.
  /// Only recursions that do nothing but compute (no memory, no calls of
  /// functions without a body, no user-written rule in the recursion) are
  /// recomputed.
  void setCheckpointLevels(unsigned levels) { checkpointLevels = levels; }

  /// Whether `function` is one of the copies of a level of a tree
  /// recursion, whose calls marked kCheckpointAttrName are checkpointed.
  bool isCheckpointedLevel(func::FuncOp function) const {
    return levelCopies.contains(function);
  }

  /// The user-written rules of the module's functions.
  CustomRuleIndex &getCustomRules() { return customRules; }

  /// The check for values written to memory, shared by every function
  /// generated in this module.
  MemoryWriteCheck &getMemoryWriteCheck() { return memoryWrites; }

  /// Forgets what was learnt of the calls between functions (reachability,
  /// recursions): call after changing which functions call which.
  void invalidateCallGraph();

  /// Functions reachable from `function` through calls.
  const llvm::SmallPtrSetImpl<Operation *> &reachableFrom(func::FuncOp function);

  /// A result of a generated forward function holding a record of packed
  /// tape values (its own, or a callee's it passes on): its number of
  /// slots.
  struct TapeRecord {
    unsigned resultNumber = 0, width = 0;
  };

private:
  /// Packs the scalar tape values of a generated pair (and the records of
  /// the callees among them) into one record when there are many and some
  /// come from the tapes of callees: a chain of calls then passes one value
  /// per level instead of every value of every level below. Returns the
  /// number of tape values left.
  /// `ownRecords` are (tape position, slots) of the function's own records
  /// (its branch tape).
  unsigned packTape(func::FuncOp forward, func::FuncOp pullback,
                    unsigned numResults, unsigned numTapeValues,
                    ArrayRef<std::pair<unsigned, unsigned>> ownRecords);

  /// Fails (with a diagnostic naming the calls on the way from `requester`)
  /// when a float's bits reach `callee`, which has a rule, through an
  /// integer argument at `varied`.
  LogicalResult checkRuleSeesNoFloatBits(func::FuncOp callee,
                                         ArrayRef<int64_t> varied,
                                         Operation *requester);
  /// The functions of a callee with a user-written rule: the rule's forward
  /// function, and a pullback that calls the rule's and returns the
  /// gradients of the float positions among `varied`.
  DerivativeFunctions createFromCustomVjp(func::FuncOp callee,
                                          ArrayRef<int64_t> varied,
                                          CustomVjpOp rule);
  FailureOr<DerivativeFunctions> generate(func::FuncOp callee,
                                          ArrayRef<int64_t> varied);
  /// getOrCreate without the checkpointed levels of a tree recursion.
  FailureOr<DerivativeFunctions> getOrCreateWhole(func::FuncOp callee,
                                                  ArrayRef<int64_t> varied,
                                                  Operation *requester);
  /// `functions` (of `callee`, a recursion) with the entry points replaced
  /// by those of its checkpointed levels when the recursion qualifies
  /// (see setCheckpointLevels).
  DerivativeFunctions withCheckpointedLevels(func::FuncOp callee,
                                             ArrayRef<int64_t> varied,
                                             DerivativeFunctions functions,
                                             Operation *requester);
  /// Whether `callee` is recursive and can be run again at will:
  /// everything it reaches computes with values only (no memory, no
  /// function without a body, no user-written rule of a member of the
  /// recursion), and every other recursion it reaches is recomputable too.
  bool isRecomputableRecursion(func::FuncOp callee);
  /// Whether the recursion of `callee` is recomputable and calls itself
  /// from inside a loop.
  bool isRecomputableTreeRecursion(func::FuncOp callee);
  /// The copy of `callee`'s body at level 0 of its checkpointed levels
  /// (creating the copies of every level).
  func::FuncOp createCheckpointedLevels(func::FuncOp callee);
  FailureOr<DerivativeFunctions> generateRecursive(func::FuncOp callee,
                                                   ArrayRef<int64_t> varied);
  /// The first function of the module in the recursion of `function`.
  Operation *recursionRoot(func::FuncOp function);
  /// The positions of the ranked tensor and scalar arguments of
  /// `function`, a member of a recursion, for which every call within the
  /// recursion passes one of the caller's own such arguments (at any such
  /// position: f(x, y) calling f(y, x) keeps both): the pullback of each
  /// call can pass the callee's value from its own arguments, so the
  /// recursive pullback takes it as an argument instead of a tape row.
  SmallVector<unsigned> invariantArguments(func::FuncOp function);

  std::unique_ptr<SymbolTable> ownedSymbols;
  SymbolTable &symbolTable;
  std::map<std::pair<Operation *, std::vector<int64_t>>, DerivativeFunctions>
      generated;
  /// Calls (or ad ops) whose callee is being differentiated, outermost first.
  SmallVector<Operation *> requesters;
  /// The module's call graph, built on demand (and again for a function
  /// generated after it).
  std::unique_ptr<CallGraph> callGraph;
  CallGraph &getCallGraph(func::FuncOp function);
  /// Reachability through calls, computed on demand.
  DenseMap<Operation *, llvm::SmallPtrSet<Operation *, 8>> reachable;
  /// The strongly connected component of each function in the call graph,
  /// and whether it is a recursion (a cycle), computed on first use.
  DenseMap<Operation *, unsigned> componentOf;
  SmallVector<bool> componentIsRecursion;
  SmallVector<Operation *> componentRoot;
  void computeRecursions();
  CustomRuleIndex customRules;
  unsigned checkpointLevels = kDefaultCheckpointLevels;
  /// Per (recursion, wrt) requested from outside: the functions with the
  /// entry points of its checkpointed levels (or without, when it does
  /// not qualify).
  std::map<std::pair<Operation *, std::vector<int64_t>>, DerivativeFunctions>
      withLevels;
  /// The copies of the levels of tree recursions.
  llvm::SmallPtrSet<Operation *, 8> levelCopies;
  /// Per recursive function: its copy at level 0, once created.
  DenseMap<Operation *, func::FuncOp> levelZero;
  /// Per recursive function: whether isRecomputableRecursion.
  DenseMap<Operation *, bool> recomputable;
  /// Per recursion root: the widest row.
  llvm::MapVector<Operation *, unsigned> recursionWidths;
  /// Recursion roots whose width group was merged into another's.
  DenseMap<Operation *, Operation *> mergedWidths;
  /// The width group of a recursion root (after merges).
  Operation *widthGroup(Operation *root);
  /// Per generated forward function: the results that are records.
  DenseMap<Operation *, SmallVector<TapeRecord, 1>> records;
  /// Per generated (non-recursive) forward function: the number of the
  /// callee's own results, before its tape.
  DenseMap<Operation *, unsigned> forwardResultCounts;
  MemoryWriteCheck memoryWrites;
};

} // namespace mlir::ad

#endif // AD_TRANSFORMS_DERIVATIVEGENERATOR_H
