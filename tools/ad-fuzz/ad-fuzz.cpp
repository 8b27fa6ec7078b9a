//===- ad-fuzz.cpp - libFuzzer target for the MLIR-AD passes ----*- C++ -*-===//
//
// Feeds arbitrary bytes to the MLIR parser with the registry of ad-opt (all
// upstream dialects and extensions, the ad dialect and its derivative rules)
// and, for every input that parses and verifies, runs `ad-differentiate` on
// one parse and `ad-lower-to-llvm` on a fresh one. Diagnostics are captured,
// never printed: rejecting an input with an error is correct behaviour. What
// the fuzzer reports as a crash:
//   - any crash, sanitizer report, assertion or LLVM fatal error;
//   - IR that fails to verify after a pass that succeeded (the message names
//     the pass and the verifier's diagnostics), or after a whole pipeline;
//   - with AD_FUZZ_STRICT=1 set, a pass that fails without emitting an error.
// Hangs are reported through libFuzzer's -timeout. AD_FUZZ_TRACE_PASSES=1
// prints each pass as it starts (to tell where a crash happened, when the
// stack is all libMLIR.so); AD_FUZZ_PRINT_IR=1 prints the IR that fails to
// verify; AD_FUZZ_NO_SKIP=1 also runs the inputs that may reach a known
// upstream crash (mayHitKnownUpstreamCrash).
//
//===----------------------------------------------------------------------===//

#include "ad/IR/ADDialect.h"
#include "ad/Rules/Rules.h"
#include "ad/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace mlir;

namespace {

/// Diagnostics of the current input, recorded instead of printed.
struct CapturedDiagnostics {
  /// Messages since the last clear().
  std::vector<std::string> messages;
  /// Errors since the process started (never reset, so that nested passes
  /// can compare counts).
  uint64_t totalErrors = 0;

  void record(Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      ++totalErrors;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << diag.getLocation() << ": " << diag;
    for (Diagnostic &note : diag.getNotes())
      os << "\n  note: " << note.getLocation() << ": " << note;
    messages.push_back(std::move(text));
  }

  void clear() { messages.clear(); }
};

/// The process-wide fuzzing state: one context for all inputs (creating a
/// context with every dialect registered per input would dominate the run).
struct FuzzerState {
  std::unique_ptr<MLIRContext> context;
  CapturedDiagnostics diagnostics;
  bool strict = false;
  bool printIR = false;
  bool tracePasses = false;
  bool skipKnownUpstreamCrashes = true;
};

FuzzerState *state = nullptr;

/// Prints what went wrong and aborts, so that libFuzzer records the input as
/// a crash.
[[noreturn]] void reportBug(llvm::StringRef what, llvm::StringRef pipeline,
                            Operation *op) {
  llvm::errs() << "==ad-fuzz== BUG in pipeline '" << pipeline << "': " << what
               << "\n";
  for (const std::string &message : state->diagnostics.messages)
    llvm::errs() << "==ad-fuzz==   " << message << "\n";
  if (op && state->printIR) {
    llvm::errs() << "==ad-fuzz== IR (generic form):\n";
    op->print(llvm::errs(), OpPrintingFlags().printGenericOpForm());
    llvm::errs() << "\n";
  }
  llvm::errs().flush();
  std::abort();
}

/// Verifies the IR after every pass that succeeded (the pass manager's own
/// verifier is off: its failure would look like an ordinary pass failure)
/// and, in strict mode, flags passes that fail without saying why.
struct VerifyAfterEachPass : public PassInstrumentation {
  explicit VerifyAfterEachPass(llvm::StringRef pipeline) : pipeline(pipeline) {}

  void runBeforePass(Pass *pass, Operation *op) override {
    errorsBefore.push_back(state->diagnostics.totalErrors);
    if (state->tracePasses && !pass->getArgument().empty()) {
      llvm::errs() << "==ad-fuzz== pass " << pass->getArgument()
                   << " (pipeline " << pipeline << ")\n";
      llvm::errs().flush();
    }
  }

  /// Verifies after every pass, including the adaptors that run nested pass
  /// pipelines (they verify the parent, which checks symbol uses across
  /// functions).
  void runAfterPass(Pass *pass, Operation *op) override {
    errorsBefore.pop_back();
    state->diagnostics.clear();
    if (failed(verify(op)))
      reportBug(("IR does not verify after pass '" + describe(pass) +
                 "' on '" + op->getName().getStringRef() + "'")
                    .str(),
                pipeline, op);
  }

  /// Adaptors fail when a nested pass does; only real passes are checked.
  void runAfterPassFailed(Pass *pass, Operation *op) override {
    uint64_t before = errorsBefore.pop_back_val();
    if (state->strict && !pass->getArgument().empty() &&
        state->diagnostics.totalErrors == before)
      reportBug(("pass '" + describe(pass) + "' on '" +
                 op->getName().getStringRef() +
                 "' failed without emitting an error")
                    .str(),
                pipeline, op);
  }

  static std::string describe(Pass *pass) {
    return pass->getArgument().empty() ? pass->getName().str()
                                       : pass->getArgument().str();
  }

  std::string pipeline;
  llvm::SmallVector<uint64_t> errorsBefore;
};

/// Whether `input` may reach a known upstream parser crash, which the fuzzer
/// would otherwise rediscover all the time (every crash of the first runs
/// was this one). LLVM 22's linalg parser stores the result of
/// `DenseI64ArrayAttr::parse` in the op's attributes without checking it, so
/// a malformed `dimensions = [...]` (linalg.reduce, linalg.broadcast) or
/// `permutation = [...]` (linalg.transpose) list is a null attribute and a
/// segfault in `NamedAttrList::set` (see README.md, upstream findings).
/// Conservative: any such key not followed by a well-formed integer list
/// skips the input.
bool mayHitKnownUpstreamCrash(llvm::StringRef input) {
  for (llvm::StringRef key : {"dimensions", "permutation"}) {
    for (size_t pos = input.find(key); pos != llvm::StringRef::npos;
         pos = input.find(key, pos + key.size())) {
      llvm::StringRef rest = input.drop_front(pos + key.size()).ltrim();
      if (!rest.consume_front("="))
        continue;
      rest = rest.ltrim();
      if (!rest.consume_front("["))
        return true;
      size_t close = rest.find(']');
      if (close == llvm::StringRef::npos)
        return true;
      llvm::StringRef list = rest.take_front(close);
      if (list.trim().empty())
        continue;
      llvm::SmallVector<llvm::StringRef> elements;
      list.split(elements, ',');
      for (llvm::StringRef element : elements) {
        int64_t value;
        if (element.trim().getAsInteger(10, value))
          return true;
      }
    }
  }
  return false;
}

/// Parses `input` into a fresh module and verifies it; null if the input is
/// not valid IR.
OwningOpRef<ModuleOp> parseAndVerify(llvm::StringRef input) {
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(input, "fuzz-input.mlir"),
      llvm::SMLoc());
  ParserConfig config(state->context.get(), /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module || failed(verify(*module)))
    return nullptr;
  return module;
}

/// Runs the pipeline `build` adds on a fresh parse of `input`. Failure with
/// diagnostics is fine; invalid IR after a pass that succeeded is not.
void runPipeline(llvm::StringRef input, llvm::StringRef name,
                 const std::function<void(OpPassManager &)> &build) {
  OwningOpRef<ModuleOp> module = parseAndVerify(input);
  if (!module)
    return;
  PassManager pm(state->context.get(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  pm.enableVerifier(false);
  pm.addInstrumentation(std::make_unique<VerifyAfterEachPass>(name));
  build(pm);
  if (failed(pm.run(*module)))
    return;
  state->diagnostics.clear();
  if (failed(verify(*module)))
    reportBug("IR does not verify after the whole pipeline", name, *module);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  registerAllPasses();
  ad::registerADPasses();
  ad::registerADPipelines();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<ad::ADDialect>();
  ad::registerReverseRules(registry);

  state = new FuzzerState();
  state->context = std::make_unique<MLIRContext>(
      registry, MLIRContext::Threading::DISABLED);
  state->context->printOpOnDiagnostic(false);
  state->context->printStackTraceOnDiagnostic(false);
  state->strict = std::getenv("AD_FUZZ_STRICT") != nullptr;
  state->printIR = std::getenv("AD_FUZZ_PRINT_IR") != nullptr;
  state->tracePasses = std::getenv("AD_FUZZ_TRACE_PASSES") != nullptr;
  state->skipKnownUpstreamCrashes =
      std::getenv("AD_FUZZ_NO_SKIP") == nullptr;
  // Dialects load lazily, as in ad-opt: a pass that creates ops of a dialect
  // it does not declare as dependent crashes on the first input that needs
  // it (later inputs find the dialect loaded by an earlier one, so such a
  // crash reproduces when its input is run alone, not necessarily in place).
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef input(reinterpret_cast<const char *>(data), size);
  // -1: not added to the corpus.
  if (state->skipKnownUpstreamCrashes && mayHitKnownUpstreamCrash(input))
    return -1;
  state->diagnostics.clear();
  ScopedDiagnosticHandler handler(state->context.get(), [](Diagnostic &diag) {
    state->diagnostics.record(diag);
    return success();
  });
  runPipeline(input, "ad-differentiate", ad::buildDifferentiatePipeline);
  runPipeline(input, "ad-lower-to-llvm", ad::buildLowerToLLVMPipeline);
  return 0;
}
