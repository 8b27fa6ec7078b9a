//===- TangentGenerator.h - forward-mode tangent functions ------*- C++ -*-===//
//
// Generates, once per (callee, wrt) pair, the tangent function of a
// func.func: forward mode, the primal and its directional derivative
// computed side by side, with no tape. Compilers embedding MLIR-AD can use
// it directly instead of ad.jvp.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_TANGENTGENERATOR_H
#define AD_TRANSFORMS_TANGENTGENERATOR_H

#include "ad/IR/ADDialect.h"
#include "ad/IR/ADInterfaces.h"
#include "ad/Transforms/MemoryWrites.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include <map>
#include <memory>
#include <vector>

namespace mlir::ad {

/// Owns the tangent functions generated in one module.
class TangentGenerator {
public:
  explicit TangentGenerator(ModuleOp module);
  /// Uses `symbols`, the module's symbol table shared with other generators
  /// (see DerivativeGenerator).
  explicit TangentGenerator(SymbolTable &symbols);

  /// The tangent function of `callee` with respect to the argument
  /// positions `wrt` (strictly increasing; integer positions only seed the
  /// activity analysis, as for DerivativeGenerator::getOrCreate):
  /// `@<callee>_ad_jvp_<wrt>`, of type (arguments..., tangents of the float
  /// wrt arguments...) -> (results..., tangents of the float results...),
  /// generated next to the callee on first request. On failure a diagnostic
  /// has been emitted (at the offending op, with notes naming the chain of
  /// calls from `requester`) and the module is unchanged.
  FailureOr<func::FuncOp> getOrCreate(func::FuncOp callee,
                                      ArrayRef<int64_t> wrt,
                                      Operation *requester);

  /// Emits an error at `op` with a note for each call being differentiated
  /// on the way to it.
  InFlightDiagnostic emitError(Operation *op, const Twine &message);

  /// The function of the module named by `symbol`, or null.
  func::FuncOp lookupFunction(SymbolRefAttr symbol);

  /// The user-written rules of the module's functions.
  CustomRuleIndex &getCustomRules() { return customRules; }

  /// The check for values written to memory.
  MemoryWriteCheck &getMemoryWriteCheck() { return memoryWrites; }

private:
  LogicalResult generate(func::FuncOp callee, ArrayRef<int64_t> wrt,
                         func::FuncOp tangent);
  /// The body of `tangent` for a callee with a user-written rule: a call
  /// of the rule's tangent function, with zero tangents for the float
  /// arguments outside `wrt`.
  LogicalResult generateFromCustomJvp(func::FuncOp callee,
                                      ArrayRef<int64_t> wrt,
                                      func::FuncOp tangent, CustomJvpOp rule,
                                      Operation *requester);

  std::unique_ptr<SymbolTable> ownedSymbols;
  SymbolTable &symbolTable;
  std::map<std::pair<Operation *, std::vector<int64_t>>, func::FuncOp>
      generated;
  /// Calls (or ad ops) whose callee is being differentiated, outermost first.
  SmallVector<Operation *> requesters;
  MemoryWriteCheck memoryWrites{/*followsMemory=*/true};
  CustomRuleIndex customRules;
};

/// The type of the tangent function of `callee` for the argument positions
/// `wrt` (see TangentGenerator::getOrCreate).
FunctionType getTangentFunctionType(func::FuncOp callee, ArrayRef<int64_t> wrt);

} // namespace mlir::ad

#endif // AD_TRANSFORMS_TANGENTGENERATOR_H
