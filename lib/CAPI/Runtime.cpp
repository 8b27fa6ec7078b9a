//===- Runtime.cpp - C API of the MLIR-AD JIT runtime ---------------------===//
//
// Handles over the C++ runtime (ad/Runtime/Runtime.h). Shared C++ objects
// are held through heap-allocated shared_ptrs so that destroying a handle
// never invalidates another (an entry point keeps working after its program
// is destroyed).
//
//===----------------------------------------------------------------------===//

#include "ad-c/Runtime.h"

#include "ad/Runtime/Runtime.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstring>

using namespace mlir::ad::runtime;

namespace {
struct ErrorObject {
  ErrorKind kind;
  std::string message;
};
using ProgramHandle = std::shared_ptr<Program>;
using EntryHandle = std::shared_ptr<EntryPoint>;
using ResultsObject = std::vector<Result>;
} // namespace

/// Stores `error` in `*out` when the caller asked for it.
static void report(llvm::Error error, MlirADError *out) {
  auto [kind, message] = takeError(std::move(error));
  if (out)
    out->ptr = new ErrorObject{kind, std::move(message)};
}

static Runtime *unwrap(MlirADRuntime runtime) {
  return static_cast<Runtime *>(runtime.ptr);
}
static ProgramHandle &unwrap(MlirADProgram program) {
  return *static_cast<ProgramHandle *>(program.ptr);
}
static EntryHandle &unwrap(MlirADEntryPoint entry) {
  return *static_cast<EntryHandle *>(entry.ptr);
}
static ResultsObject &unwrap(MlirADResults results) {
  return *static_cast<ResultsObject *>(results.ptr);
}
static ErrorObject &unwrap(MlirADError error) {
  return *static_cast<ErrorObject *>(error.ptr);
}

MlirADRuntime mlirADRuntimeCreate(void) {
  return {Runtime::create().release()};
}

void mlirADRuntimeDestroy(MlirADRuntime runtime) { delete unwrap(runtime); }

intptr_t mlirADRuntimeGetNumCompilations(MlirADRuntime runtime) {
  return unwrap(runtime)->getNumCompilations();
}

static MlirADProgram wrapProgram(llvm::Expected<ProgramHandle> program,
                                 MlirADError *error) {
  if (!program) {
    report(program.takeError(), error);
    return {nullptr};
  }
  return {new ProgramHandle(std::move(*program))};
}

MlirADProgram mlirADRuntimeParse(MlirADRuntime runtime, MlirStringRef source,
                                 MlirStringRef name, MlirADError *error) {
  return wrapProgram(unwrap(runtime)->parse(unwrap(source), unwrap(name)),
                     error);
}

MlirADProgram mlirADRuntimeFromModule(MlirADRuntime runtime, MlirModule module,
                                      MlirADError *error) {
  return wrapProgram(unwrap(runtime)->fromModule(unwrap(module)), error);
}

void mlirADProgramDestroy(MlirADProgram program) {
  delete static_cast<ProgramHandle *>(program.ptr);
}

intptr_t mlirADProgramGetNumFunctions(MlirADProgram program) {
  return unwrap(program)->getFunctionNames().size();
}

MlirStringRef mlirADProgramGetFunctionName(MlirADProgram program,
                                           intptr_t pos) {
  const std::string &name = unwrap(program)->getFunctionNames()[pos];
  return mlirStringRefCreate(name.data(), name.size());
}

static_assert((int)MlirADEntryHvp == (int)EntryKind::Hvp &&
                  (int)MlirADElementIndex == (int)ElementKind::Index &&
                  (int)MlirADErrorValue == (int)ErrorKind::Value,
              "the C and C++ enums differ");

/// Reports a caller error and returns false.
static bool reject(MlirADError *error, ErrorKind kind, std::string message) {
  if (error)
    error->ptr = new ErrorObject{kind, std::move(message)};
  return false;
}

MlirADEntryPoint mlirADProgramGetEntryPoint(MlirADProgram program,
                                            MlirADEntryKind kind,
                                            MlirStringRef function,
                                            const int64_t *wrt,
                                            intptr_t numWrt,
                                            MlirADError *error) {
  int kindValue;
  static_assert(sizeof(kindValue) == sizeof(kind), "enums are ints");
  std::memcpy(&kindValue, &kind, sizeof(kindValue));
  if (kindValue < 0 || kindValue > (int)MlirADEntryHvp) {
    reject(error, ErrorKind::Value,
           "unknown entry kind " + std::to_string(kindValue));
    return {nullptr};
  }
  if (numWrt < 0 || (numWrt > 0 && !wrt)) {
    reject(error, ErrorKind::Value, "wrt is NULL but numWrt is positive");
    return {nullptr};
  }
  llvm::Expected<EntryHandle> entry = unwrap(program)->getEntryPoint(
      static_cast<EntryKind>(kindValue), unwrap(function),
      llvm::ArrayRef<int64_t>(wrt, numWrt));
  if (!entry) {
    report(entry.takeError(), error);
    return {nullptr};
  }
  return {new EntryHandle(std::move(*entry))};
}

void mlirADEntryPointDestroy(MlirADEntryPoint entry) {
  delete static_cast<EntryHandle *>(entry.ptr);
}

intptr_t mlirADEntryPointGetNumInputs(MlirADEntryPoint entry) {
  return unwrap(entry)->getSignature().inputs.size();
}

intptr_t mlirADEntryPointGetNumResults(MlirADEntryPoint entry) {
  return unwrap(entry)->getSignature().results.size();
}

MlirADResults mlirADEntryPointCall(MlirADEntryPoint entry,
                                   const MlirADValue *args, intptr_t numArgs,
                                   MlirADError *error) {
  llvm::SmallVector<Argument, 8> converted;
  if (numArgs > 0 && !args) {
    reject(error, ErrorKind::Type, "args is NULL but numArgs is positive");
    return {nullptr};
  }
  for (intptr_t i = 0; i < numArgs; ++i) {
    const MlirADValue &value = args[i];
    std::string what = "argument " + std::to_string(i);
    // Read as an integer: C callers may store any value in the enum field,
    // and loading an out-of-range value as the C++ enum is undefined.
    int elementValue;
    static_assert(sizeof(elementValue) == sizeof(value.element),
                  "enums are ints");
    std::memcpy(&elementValue, &value.element, sizeof(elementValue));
    if (elementValue < 0 || elementValue > (int)MlirADElementIndex) {
      reject(error, ErrorKind::Type,
             what + " has an unknown element kind " +
                 std::to_string(elementValue));
      return {nullptr};
    }
    if (value.rank > 0 && !value.sizes) {
      reject(error, ErrorKind::Value, what + " has a rank but no sizes");
      return {nullptr};
    }
    auto element = static_cast<ElementKind>(elementValue);
    if (value.rank < 0) {
      Argument arg;
      arg.element = element;
      static_assert(sizeof(arg.scalar) == sizeof(value.scalar),
                    "scalar layouts differ");
      std::memcpy(&arg.scalar, &value.scalar, sizeof(arg.scalar));
      if (element == ElementKind::I1)
        arg.scalar.i8 = arg.scalar.i8 != 0;
      converted.push_back(arg);
      continue;
    }
    converted.push_back(Argument::ofBuffer(
        element, value.data,
        llvm::ArrayRef<int64_t>(value.sizes, value.rank)));
  }
  auto results = std::make_unique<ResultsObject>();
  if (llvm::Error failure = unwrap(entry)->call(converted, *results)) {
    report(std::move(failure), error);
    return {nullptr};
  }
  return {results.release()};
}

intptr_t mlirADResultsGetNum(MlirADResults results) {
  return unwrap(results).size();
}

MlirADValue mlirADResultsGet(MlirADResults results, intptr_t pos) {
  const Result &result = unwrap(results)[pos];
  MlirADValue value;
  std::memset(&value, 0, sizeof(value));
  value.element = static_cast<MlirADElementKind>(result.element);
  if (!result.shaped) {
    value.rank = -1;
    std::memcpy(&value.scalar, &result.scalar, sizeof(value.scalar));
    return value;
  }
  value.rank = result.sizes.size();
  value.data = result.data;
  value.sizes = result.sizes.data();
  value.strides = result.strides.data();
  return value;
}

void *mlirADResultsTakeBuffer(MlirADResults results, intptr_t pos) {
  return unwrap(results)[pos].release();
}

void mlirADResultsDestroy(MlirADResults results) {
  delete static_cast<ResultsObject *>(results.ptr);
}

MlirADErrorKind mlirADErrorGetKind(MlirADError error) {
  return static_cast<MlirADErrorKind>(unwrap(error).kind);
}

MlirStringRef mlirADErrorGetMessage(MlirADError error) {
  const std::string &message = unwrap(error).message;
  return mlirStringRefCreate(message.data(), message.size());
}

void mlirADErrorDestroy(MlirADError error) {
  delete static_cast<ErrorObject *>(error.ptr);
}
