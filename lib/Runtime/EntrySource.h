//===- EntrySource.h - the generated entry functions ------------*- C++ -*-===//
//
// Boundary types of MLIR types, and the text of the function an entry point
// JIT-compiles: a call of the user's function or an ad op applied to it.
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_RUNTIME_ENTRYSOURCE_H
#define AD_LIB_RUNTIME_ENTRYSOURCE_H

#include "ad/Runtime/Runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace mlir::ad::runtime {

/// The boundary type of `type`, or nullopt when the runtime cannot pass it
/// (unranked, non-identity layouts, vectors, other element types).
std::optional<ValueType> getValueType(Type type);

/// "call", "grad", "value_and_grad" or "vjp".
StringRef getEntryKindName(EntryKind kind);

/// The text of the function `entryName` computing `kind` of `callee` with
/// respect to `wrt`, and (in `signature`) its boundary types. Tensor
/// arguments are read-only, so the caller's buffers survive the call; a
/// vjp checks at run time that each cotangent has its result's shape.
std::string buildEntrySource(EntryKind kind, func::FuncOp callee,
                             ArrayRef<int64_t> wrt, StringRef entryName,
                             Signature &signature);

/// A symbol name no operation of `module` has.
std::string getFreshEntryName(ModuleOp module);

} // namespace mlir::ad::runtime

#endif // AD_LIB_RUNTIME_ENTRYSOURCE_H
