//===- JitPreparation.h - making a module safe to JIT -----------*- C++ -*-===//
//
// What the runtime does to its copy of a module before and after lowering so
// that the JIT-ed code is self-contained, cannot replace C library
// functions, reports shape errors instead of corrupting memory, and finds
// the compiler-runtime functions LLVM calls.
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_RUNTIME_JITPREPARATION_H
#define AD_LIB_RUNTIME_JITPREPARATION_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::ad::runtime {

/// Prefix of every function the JIT-ed module defines: a user function
/// named `sin`, `malloc` or `memrefCopy` would otherwise replace the C
/// library's (or the runtime's) for the lowered code too. Diagnostics drop
/// it again.
inline constexpr llvm::StringLiteral kRenamedPrefix = "__mlir_ad_user_";

/// Erases the functions neither `root` nor a global reaches through symbol
/// uses (so an unrelated function with an external callee does not break
/// this entry, and the JIT compiles less), adds run-time checks that the
/// operands of every linalg op have consistent sizes and that tensor
/// element and slice accesses, casts and dims are in bounds, and renames
/// every defined function (kRenamedPrefix). Returns the new name of `root`.
std::string prepareForJit(ModuleOp module, StringRef root);

/// Names of the functions the lowered `module` declares but nothing defines:
/// not the module, the process, the `libraries`' handles or the runtime.
std::vector<std::string>
findUnresolvedFunctions(ModuleOp module, ArrayRef<void *> libraries);

/// Gives the JIT the bf16 truncations LLVM emits for arith.truncf to bf16:
/// libgcc lacks them, and MLIR's libmlir_float16_utils rounds f64 to bf16
/// through f32 (twice, so 1 + 2^-8 + 2^-30 became 1 instead of 1 + 2^-7).
void registerMissingBuiltins(ExecutionEngine &engine);

} // namespace mlir::ad::runtime

#endif // AD_LIB_RUNTIME_JITPREPARATION_H
