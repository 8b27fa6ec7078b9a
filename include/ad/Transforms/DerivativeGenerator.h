//===- DerivativeGenerator.h - forward and pullback functions ---*- C++ -*-===//
//
// Generates, once per (callee, wrt) pair, the augmented forward function and
// the pullback function of a func.func. Compilers embedding MLIR-AD can use
// it directly instead of the ad ops.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_DERIVATIVEGENERATOR_H
#define AD_TRANSFORMS_DERIVATIVEGENERATOR_H

#include "ad/IR/ADInterfaces.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include <map>
#include <vector>

namespace mlir::ad {

/// Owns the derivative functions generated in one module.
class DerivativeGenerator {
public:
  explicit DerivativeGenerator(ModuleOp module);

  /// The derivative functions of `callee` with respect to the argument
  /// positions `wrt` (strictly increasing, each of differentiable type),
  /// generating them next to the callee on first request. On failure a
  /// diagnostic has been emitted (at the offending op, with notes naming the
  /// chain of calls from `requester`) and the module is unchanged.
  FailureOr<DerivativeFunctions> getOrCreate(func::FuncOp callee,
                                             ArrayRef<int64_t> wrt,
                                             Operation *requester);

  /// Emits an error at `op` with a note for each call being differentiated
  /// on the way to it.
  InFlightDiagnostic emitError(Operation *op, const Twine &message);

private:
  FailureOr<DerivativeFunctions> generate(func::FuncOp callee,
                                          ArrayRef<int64_t> wrt);

  SymbolTable symbolTable;
  std::map<std::pair<Operation *, std::vector<int64_t>>, DerivativeFunctions>
      generated;
  /// Calls (or ad ops) whose callee is being differentiated, outermost first.
  SmallVector<Operation *> requesters;
  /// Functions whose derivatives are being generated.
  llvm::SmallPtrSet<Operation *, 8> inProgress;
};

} // namespace mlir::ad

#endif // AD_TRANSFORMS_DERIVATIVEGENERATOR_H
