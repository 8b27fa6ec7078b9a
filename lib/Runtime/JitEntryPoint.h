//===- JitEntryPoint.h - a JIT-compiled entry point -------------*- C++ -*-===//
//
// An entry point compiled by the ExecutionEngine and called through the
// packed form of its C interface (`_mlir__mlir_ciface_<name>`).
//
//===----------------------------------------------------------------------===//

#ifndef AD_LIB_RUNTIME_JITENTRYPOINT_H
#define AD_LIB_RUNTIME_JITENTRYPOINT_H

#include "ad/Runtime/Runtime.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"

namespace mlir::ad::runtime {

/// Where the C interface of an entry expects each argument and writes each
/// result. Buffers travel as memref descriptors ({allocated, aligned,
/// offset, sizes[rank], strides[rank]}, all 8-byte words) passed by
/// pointer; scalars by value. A single scalar result is the return value;
/// any other non-empty result list is a struct, in C layout, the wrapper
/// writes through a pointer passed before the arguments.
struct CallingConvention {
  explicit CallingConvention(const Signature &signature);

  /// Words of descriptor storage the arguments need.
  size_t argumentWords = 0;
  /// The result struct: size in bytes and each field's offset.
  size_t resultBytes = 0;
  std::vector<size_t> resultOffsets;
  /// A single scalar result comes back as the return value.
  bool scalarReturn = false;
};

/// Makes failed runtime checks in code JIT-ed by `engine` (cf.assert, which
/// lowers to puts and abort) return an ErrorKind::Value error from the call
/// instead of aborting the process; the buffers the failing call allocated
/// (through malloc/realloc, which are tracked while an entry runs) are
/// freed.
void registerRuntimeCheckHandlers(mlir::ExecutionEngine &engine);

/// An entry point backed by a JIT-compiled module.
class JitEntryPoint : public EntryPoint {
public:
  JitEntryPoint(Signature signature,
                std::unique_ptr<mlir::ExecutionEngine> engine,
                void (*packed)(void **));
  llvm::Error call(llvm::ArrayRef<Argument> args,
                   std::vector<Result> &results) const override;

private:
  /// Checks `args` against the signature.
  llvm::Error checkArguments(llvm::ArrayRef<Argument> args) const;

  std::unique_ptr<mlir::ExecutionEngine> engine;
  void (*packed)(void **);
  CallingConvention convention;
};

} // namespace mlir::ad::runtime

#endif // AD_LIB_RUNTIME_JITENTRYPOINT_H
