//===- ADDialect.cpp - the ad dialect ---------------------------*- C++ -*-===//
//
// Registers the dialect's types and ops, and gives builtin float and tensor
// types their cotangent model (the dialect's verifiers depend on it).
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADDialect.h"
#include "ad/IR/ADInterfaces.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ad;

#include "ad/IR/ADOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "ad/IR/ADOpsTypes.cpp.inc"

namespace mlir::ad {
void attachBuiltinCotangentModels(MLIRContext *context);
} // namespace mlir::ad

namespace {
/// Every ad op can be inlined: requests name their callee by symbol, and a
/// closure inlined with the function that makes and applies it stays in
/// one function.
struct ADInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void ADDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "ad/IR/ADOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ad/IR/ADOps.cpp.inc"
      >();
  addInterfaces<ADInlinerInterface>();
  attachBuiltinCotangentModels(getContext());
}

LogicalResult
PullbackType::verify(function_ref<InFlightDiagnostic()> emitError,
                     FunctionType signature) {
  auto check = [&](ArrayRef<Type> types, StringRef what) -> LogicalResult {
    for (auto [index, type] : llvm::enumerate(types))
      if (!isDifferentiableType(type))
        return emitError() << what << " #" << index << " of a pullback has type "
                           << type
                           << ", which is not differentiable (expected a "
                              "float or a ranked tensor of floats)";
    return success();
  };
  if (failed(check(signature.getInputs(), "cotangent")))
    return failure();
  return check(signature.getResults(), "gradient");
}
