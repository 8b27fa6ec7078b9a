//===- Runtime.cpp - parse, differentiate, lower and JIT programs ---------===//
//
// The runtime's context and cache, programs parsed into it, and the
// compilation of an entry point: a generated function calling the user's
// function (or an ad op on it) is added to a copy of the module, which is
// lowered with `ad-lower-to-llvm` and JIT-compiled.
//
//===----------------------------------------------------------------------===//

#include "ad/Runtime/Runtime.h"
#include "EntrySource.h"
#include "JitEntryPoint.h"
#include "JitPreparation.h"

#include "ad/IR/ADDialect.h"
#include "ad/IR/ADInterfaces.h"
#include "ad/Rules/Rules.h"
#include "ad/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"

#include <cstring>
#include <dlfcn.h>
#include <atomic>
#include <mutex>

#ifndef AD_MLIR_LIBRARY_DIR
#define AD_MLIR_LIBRARY_DIR ""
#endif

#define DEBUG_TYPE "ad-runtime"

using namespace mlir;
using namespace mlir::ad::runtime;

Program::~Program() = default;
Runtime::~Runtime() = default;


void mlir::ad::runtime::registerRuntimeDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  registry.insert<ad::ADDialect>();
  ad::registerReverseRules(registry);
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

namespace {
/// Collects every diagnostic emitted while it lives, printed with source
/// lines from `sourceMgr` where the location points into one of its buffers.
class DiagnosticCollector {
public:
  DiagnosticCollector(MLIRContext &context, llvm::SourceMgr &sourceMgr)
      : os(text), handler(sourceMgr, &context, os) {}
  /// A Compile error with everything collected, after `what`.
  llvm::Error takeError(const llvm::Twine &what) {
    std::string message = what.str();
    if (!text.empty())
      message += ":\n" + text;
    // Users know their functions by their own names.
    for (size_t at; (at = message.find(kRenamedPrefix)) != std::string::npos;)
      message.erase(at, kRenamedPrefix.size());
    while (!message.empty() && message.back() == '\n')
      message.pop_back();
    return RuntimeError::make(ErrorKind::Compile, message);
  }

private:
  std::string text;
  llvm::raw_string_ostream os;
  SourceMgrDiagnosticHandler handler;
};
} // namespace

//===----------------------------------------------------------------------===//
// Signatures
//===----------------------------------------------------------------------===//

namespace {
/// What the runtime knows about one function of a program.
struct FunctionInfo {
  std::string name;
  Signature signature;
  /// Why the runtime cannot call it, when it cannot.
  std::string unsupported;
  std::vector<int64_t> differentiable;
};
} // namespace

static FunctionInfo describeFunction(func::FuncOp func) {
  FunctionInfo info;
  info.name = func.getSymName().str();
  auto convert = [&](TypeRange types, std::vector<ValueType> &out,
                     StringRef what) {
    for (auto [index, type] : llvm::enumerate(types)) {
      std::optional<ValueType> converted = getValueType(type);
      if (converted) {
        out.push_back(*converted);
        continue;
      }
      if (info.unsupported.empty()) {
        llvm::raw_string_ostream os(info.unsupported);
        os << what << " " << index << " of @" << info.name << " has type "
           << type
           << ", which the runtime cannot pass (it passes scalars of "
              "float, integer and index types, and ranked tensors and "
              "identity-layout memrefs of them)";
      }
    }
  };
  convert(func.getArgumentTypes(), info.signature.inputs, "argument");
  convert(func.getResultTypes(), info.signature.results, "result");
  for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
    if (ad::isDifferentiableType(type))
      info.differentiable.push_back(index);
  }
  return info;
}

//===----------------------------------------------------------------------===//
// The runtime and its programs
//===----------------------------------------------------------------------===//

namespace {
class RuntimeState;

class ProgramImpl : public Program {
public:
  ProgramImpl(std::shared_ptr<RuntimeState> state, std::string source,
              std::string name)
      : state(std::move(state)), source(std::move(source)),
        bufferName(std::move(name)) {}

  llvm::Error parse();
  ArrayRef<std::string> getFunctionNames() const override { return names; }
  llvm::Expected<Signature>
  getFunctionSignature(StringRef name) const override;
  llvm::Expected<std::vector<int64_t>>
  getDifferentiableArguments(StringRef name) const override;
  llvm::Expected<std::shared_ptr<EntryPoint>>
  getEntryPoint(EntryKind kind, StringRef name,
                ArrayRef<int64_t> wrt) override;

private:
  llvm::Expected<const FunctionInfo *> lookup(StringRef name) const;
  llvm::Expected<std::vector<int64_t>>
  checkWrt(EntryKind kind, const FunctionInfo &info,
           ArrayRef<int64_t> wrt) const;
  llvm::Expected<std::shared_ptr<EntryPoint>>
  compile(EntryKind kind, const FunctionInfo &info, ArrayRef<int64_t> wrt);

  /// Declared first: the context must outlive the module.
  std::shared_ptr<RuntimeState> state;
  RuntimeState &runtime() { return *state; }
  std::string source;
  std::string bufferName;
  llvm::SourceMgr sourceMgr;
  OwningOpRef<ModuleOp> module;
  std::vector<std::string> names;
  std::vector<FunctionInfo> functions;
  llvm::StringMap<size_t> functionIndex;
};

/// What a runtime owns: the context, the cache and the options. Programs
/// share it, so a program (and its module) outlives its Runtime object if
/// need be.
class RuntimeState : public std::enable_shared_from_this<RuntimeState> {
public:
  explicit RuntimeState(RuntimeOptions options);
  ~RuntimeState();

  llvm::Expected<std::shared_ptr<Program>> parse(StringRef source,
                                                 StringRef bufferName);
  void clearCache();

  /// Lowers `module` (which holds the entry function `entryName`) and
  /// JIT-compiles it. Called with the lock held.
  llvm::Expected<std::shared_ptr<EntryPoint>>
  lowerAndJit(ModuleOp module, StringRef entryName, Signature signature,
              DiagnosticCollector &diagnostics, StringRef what);

  MLIRContext &getContext() { return context; }
  /// Guards the context, the cache and the programs' source managers.
  std::mutex mutex;
  llvm::StringMap<std::shared_ptr<EntryPoint>> cache;
  std::atomic<size_t> compilations = 0;

private:
  RuntimeOptions options;
  /// dlopen handles of options.sharedLibraries, to check symbols before
  /// the JIT looks for them.
  std::vector<void *> libraries;
  MLIRContext context;
};

class RuntimeImpl : public Runtime {
public:
  explicit RuntimeImpl(RuntimeOptions options)
      : state(std::make_shared<RuntimeState>(std::move(options))) {}

  llvm::Expected<std::shared_ptr<Program>>
  parse(StringRef source, StringRef bufferName) override {
    return state->parse(source, bufferName);
  }
  llvm::Expected<std::shared_ptr<Program>> parseFile(StringRef path) override;
  llvm::Expected<std::shared_ptr<Program>> fromModule(ModuleOp module) override;
  size_t getNumCompilations() const override { return state->compilations; }
  void clearCache() override { state->clearCache(); }

private:
  std::shared_ptr<RuntimeState> state;
};
} // namespace

static DialectRegistry makeRegistry(const RuntimeOptions &options) {
  DialectRegistry registry;
  registerRuntimeDialects(registry);
  if (options.registerDialects)
    options.registerDialects(registry);
  return registry;
}

RuntimeState::RuntimeState(RuntimeOptions options)
    : options(std::move(options)), context(makeRegistry(this->options)) {
  // Diagnostics point at the user's source; the op dump is noise there.
  context.printOpOnDiagnostic(false);
  // Its loading attaches the cotangent models to the builtin types, which
  // say which types are differentiable (ad::isDifferentiableType), also
  // for modules without ad ops.
  context.getOrLoadDialect<ad::ADDialect>();
  static std::once_flag nativeTarget;
  std::call_once(nativeTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // LLVM lowers some ops to compiler-runtime calls (__powidf2 for
    // math.fpowi, __truncdfhf2 for f16). The JIT resolves them in the
    // process's global scope, where a host such as Python (which loads
    // extensions with RTLD_LOCAL) may not have put libgcc_s.
    ::dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_GLOBAL);
  });
  if (this->options.sharedLibraries.empty()) {
    for (StringRef library : {"libmlir_c_runner_utils.so",
                              "libmlir_runner_utils.so"}) {
      std::string path = (AD_MLIR_LIBRARY_DIR "/" + library).str();
      if (llvm::sys::fs::exists(path))
        this->options.sharedLibraries.push_back(path);
    }
  }
  for (const std::string &path : this->options.sharedLibraries)
    if (void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))
      libraries.push_back(handle);
}

RuntimeState::~RuntimeState() {
  for (void *handle : libraries)
    ::dlclose(handle);
}

std::unique_ptr<Runtime> Runtime::create(RuntimeOptions options) {
  return std::make_unique<RuntimeImpl>(std::move(options));
}

llvm::Expected<std::shared_ptr<Program>>
RuntimeState::parse(StringRef source, StringRef bufferName) {
  auto program = std::make_shared<ProgramImpl>(shared_from_this(),
                                               source.str(), bufferName.str());
  if (llvm::Error error = program->parse())
    return std::move(error);
  return program;
}

llvm::Expected<std::shared_ptr<Program>> RuntimeImpl::parseFile(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file)
    return RuntimeError::make(ErrorKind::Value, "cannot read " + path + ": " +
                                           file.getError().message());
  return parse((*file)->getBuffer(), path);
}

llvm::Expected<std::shared_ptr<Program>>
RuntimeImpl::fromModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // Locations travel along, so diagnostics still point at the user's source.
  module->print(os, OpPrintingFlags().enableDebugInfo());
  return parse(text, "<module>");
}

void RuntimeState::clearCache() {
  std::lock_guard<std::mutex> lock(mutex);
  SmallVector<std::string> unused;
  for (auto &entry : cache)
    if (entry.second.use_count() == 1)
      unused.push_back(entry.first().str());
  for (const std::string &key : unused)
    cache.erase(key);
}

llvm::Error ProgramImpl::parse() {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  MLIRContext &context = runtime().getContext();
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, bufferName), llvm::SMLoc());
  DiagnosticCollector diagnostics(context, sourceMgr);
  module = parseSourceFile<ModuleOp>(
      sourceMgr, ParserConfig(&context, /*verifyAfterParse=*/false));
  if (!module)
    return diagnostics.takeError("cannot parse " + bufferName);
  if (failed(verify(*module)))
    return diagnostics.takeError(bufferName + " is not a valid module");
  for (auto func : module->getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    functionIndex[func.getSymName()] = functions.size();
    functions.push_back(describeFunction(func));
    names.push_back(functions.back().name);
  }
  return llvm::Error::success();
}

llvm::Expected<const FunctionInfo *>
ProgramImpl::lookup(StringRef name) const {
  auto it = functionIndex.find(name);
  if (it != functionIndex.end())
    return &functions[it->second];
  std::string message;
  llvm::raw_string_ostream os(message);
  os << bufferName << " has no function @" << name << " with a body";
  if (!names.empty()) {
    os << " (it has ";
    llvm::interleaveComma(names, os, [&](const std::string &n) {
      os << "@" << n;
    });
    os << ")";
  }
  return RuntimeError::make(ErrorKind::Value, message);
}

llvm::Expected<Signature>
ProgramImpl::getFunctionSignature(StringRef name) const {
  llvm::Expected<const FunctionInfo *> info = lookup(name);
  if (!info)
    return info.takeError();
  if (!(*info)->unsupported.empty())
    return RuntimeError::make(ErrorKind::Value, (*info)->unsupported);
  return (*info)->signature;
}

llvm::Expected<std::vector<int64_t>>
ProgramImpl::getDifferentiableArguments(StringRef name) const {
  llvm::Expected<const FunctionInfo *> info = lookup(name);
  if (!info)
    return info.takeError();
  return (*info)->differentiable;
}


llvm::Expected<std::vector<int64_t>>
ProgramImpl::checkWrt(EntryKind kind, const FunctionInfo &info,
                      ArrayRef<int64_t> wrt) const {
  if (kind == EntryKind::Call)
    return std::vector<int64_t>();
  std::string what = (getEntryKindName(kind) + " of @" + info.name).str();
  // The ad ops differentiate values: memrefs are the caller's memory.
  auto isMemRef = [](const ValueType &type) {
    return type.shaped && !type.tensor;
  };
  if (llvm::any_of(info.signature.inputs, isMemRef) ||
      llvm::any_of(info.signature.results, isMemRef))
    return RuntimeError::make(ErrorKind::Value,
                     what + ": functions with memref arguments or results "
                            "cannot be differentiated; use tensors");
  if (kind == EntryKind::Grad || kind == EntryKind::ValueAndGrad ||
      kind == EntryKind::Hvp) {
    const std::vector<ValueType> &results = info.signature.results;
    if (results.size() != 1 || results.front().getRank() != 0 ||
        !results.front().isFloat()) {
      std::string types;
      llvm::raw_string_ostream os(types);
      llvm::interleaveComma(results, os,
                            [&](const ValueType &t) { os << t.str(); });
      return RuntimeError::make(ErrorKind::Value,
                       what + ": the function must return one float scalar "
                              "(or rank-0 tensor) and nothing else, but it "
                              "returns (" + types +
                           "); use vjp for other functions");
    }
  }
  if (wrt.empty()) {
    if (info.differentiable.empty())
      return RuntimeError::make(ErrorKind::Value,
                       what + ": the function has no differentiable "
                              "argument (float scalar or float tensor)");
    return info.differentiable;
  }
  std::vector<int64_t> sorted(wrt.begin(), wrt.end());
  llvm::sort(sorted);
  for (size_t i = 0; i < sorted.size(); ++i) {
    int64_t position = sorted[i];
    if (i > 0 && sorted[i - 1] == position)
      return RuntimeError::make(ErrorKind::Value, what + ": argument " +
                                             llvm::Twine(position) +
                                             " is listed twice in wrt");
    if (position < 0 || position >= (int64_t)info.signature.inputs.size())
      return RuntimeError::make(ErrorKind::Value,
                       what + ": wrt names argument " + llvm::Twine(position) +
                           " but the function has " +
                           llvm::Twine(info.signature.inputs.size()) +
                           " arguments");
    if (!llvm::is_contained(info.differentiable, position))
      return RuntimeError::make(ErrorKind::Value,
                       what + ": argument " + llvm::Twine(position) +
                           " has type " +
                           info.signature.inputs[position].str() +
                           ", which cannot be differentiated (only float "
                           "scalars and float tensors can)");
  }
  return sorted;
}

llvm::Expected<std::shared_ptr<EntryPoint>>
ProgramImpl::getEntryPoint(EntryKind kind, StringRef name,
                           ArrayRef<int64_t> wrt) {
  llvm::Expected<const FunctionInfo *> found = lookup(name);
  if (!found)
    return found.takeError();
  const FunctionInfo &info = **found;
  if (!info.unsupported.empty())
    return RuntimeError::make(ErrorKind::Value, info.unsupported);
  llvm::Expected<std::vector<int64_t>> positions = checkWrt(kind, info, wrt);
  if (!positions)
    return positions.takeError();

  // Each field with its length: names and sources may hold any character.
  std::string key;
  llvm::raw_string_ostream os(key);
  auto field = [&](StringRef text) { os << text.size() << ":" << text; };
  field(getEntryKindName(kind));
  field(name);
  os << positions->size() << ":";
  llvm::interleaveComma(*positions, os);
  field(bufferName);
  field(source);

  std::lock_guard<std::mutex> lock(runtime().mutex);
  auto cached = runtime().cache.find(key);
  if (cached != runtime().cache.end())
    return cached->second;
  llvm::Expected<std::shared_ptr<EntryPoint>> entry =
      compile(kind, info, *positions);
  if (!entry)
    return entry.takeError();
  ++runtime().compilations;
  runtime().cache[key] = *entry;
  return *entry;
}

llvm::Expected<std::shared_ptr<EntryPoint>>
ProgramImpl::compile(EntryKind kind, const FunctionInfo &info,
                     ArrayRef<int64_t> wrt) {
  MLIRContext &context = runtime().getContext();
  DiagnosticCollector diagnostics(context, sourceMgr);
  OwningOpRef<ModuleOp> copy = module->clone();
  std::string calleeName = prepareForJit(*copy, info.name);
  auto callee = copy->lookupSymbol<func::FuncOp>(calleeName);
  assert(callee && "a described function is in every copy of the module");
  std::string entryName = getFreshEntryName(*copy);
  Signature signature;
  std::string entrySource =
      buildEntrySource(kind, callee, wrt, entryName, signature);
  LLVM_DEBUG(llvm::dbgs() << "entry for " << getEntryKindName(kind) << " of @"
                          << info.name << ":\n"
                          << entrySource);
  std::string entryBuffer =
      ("mlir_ad." + getEntryKindName(kind) + "(@" + info.name + ")").str();
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(entrySource, entryBuffer),
      llvm::SMLoc());
  OwningOpRef<ModuleOp> entryModule = parseSourceString<ModuleOp>(
      entrySource, ParserConfig(&context, /*verifyAfterParse=*/false),
      entryBuffer);
  if (!entryModule)
    return diagnostics.takeError("internal error: cannot parse the entry "
                                 "function\n" + entrySource);
  for (Operation &op : llvm::make_early_inc_range(*entryModule->getBody()))
    op.moveBefore(copy->getBody(), copy->getBody()->end());
  std::string what = (getEntryKindName(kind) + " of @" + info.name).str();
  if (failed(verify(*copy)))
    return diagnostics.takeError("cannot build " + what);
  return runtime().lowerAndJit(*copy, entryName, std::move(signature),
                             diagnostics, what);
}

/// Loads LLVM's OpenMP runtime into the process (once): the one of the LLVM
/// installation MLIR-AD was built against, else any on the library path.
static bool loadOpenMPRuntime() {
  static const bool loaded =
      !llvm::sys::DynamicLibrary::LoadLibraryPermanently(
          AD_MLIR_LIBRARY_DIR "/libomp.so.5") ||
      !llvm::sys::DynamicLibrary::LoadLibraryPermanently("libomp.so.5");
  return loaded;
}

llvm::Expected<std::shared_ptr<EntryPoint>>
RuntimeState::lowerAndJit(ModuleOp module, StringRef entryName,
                         Signature signature,
                         DiagnosticCollector &diagnostics, StringRef what) {
  // Vector math calls glibc's libmvec, loaded into the process once (also
  // for a pipeline of the embedder's that runs ad-vector-math).
  static const bool haveLibmvec =
      !llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1");
  // MLIR_AD_PRINT_IR=1 prints the module each compilation lowers (the
  // user's functions with the runtime's shape checks and the entry point)
  // to stderr: `ad-opt --ad-lower-to-llvm` on it reproduces the compiled
  // code.
  if (const char *print = std::getenv("MLIR_AD_PRINT_IR");
      print && *print && StringRef(print) != "0")
    module->print(llvm::errs());
  PassManager pm(&context, ModuleOp::getOperationName());
  if (options.buildPipeline) {
    options.buildPipeline(pm);
  } else {
    ad::LowerToLLVMOptions lowering;
    lowering.vectorMath = haveLibmvec;
    lowering.parallel = options.parallel;
    ad::buildLowerToLLVMPipeline(pm, lowering);
  }
  if (failed(pm.run(module)))
    return diagnostics.takeError("cannot compile " + what);
  // Parallel regions call LLVM's OpenMP runtime, loaded into the process
  // once, when a program first has one.
  bool hasParallelRegions =
      module
          ->walk([](Operation *op) {
            return isa<omp::OpenMPDialect>(op->getDialect())
                       ? WalkResult::interrupt()
                       : WalkResult::advance();
          })
          .wasInterrupted();
  if (hasParallelRegions && !loadOpenMPRuntime())
    return RuntimeError::make(
        ErrorKind::Compile,
        "cannot compile " + what.str() +
            ": its parallel loops need LLVM's OpenMP runtime, and neither " +
            AD_MLIR_LIBRARY_DIR "/libomp.so.5 nor libomp.so.5 loads "
            "(Debian: apt install libomp-22-dev)");
  std::vector<std::string> unresolved =
      findUnresolvedFunctions(module, libraries);
  if (!unresolved.empty()) {
    std::string names;
    for (const std::string &name : unresolved)
      names += (names.empty() ? "@" : ", @") + name;
    return RuntimeError::make(ErrorKind::Compile,
                     "cannot compile " + what + ": it calls " + names +
                         ", which has no body in the module and which the "
                         "process and the runtime libraries do not define");
  }

  llvm::Expected<llvm::orc::JITTargetMachineBuilder> machineBuilder =
      llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machineBuilder)
    return RuntimeError::make(ErrorKind::Compile,
                     "cannot target the host: " +
                         llvm::toString(machineBuilder.takeError()));
  llvm::CodeGenOptLevel codeGenLevel =
      options.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
      : options.optLevel == 0 ? llvm::CodeGenOptLevel::None
                              : llvm::CodeGenOptLevel::Default;
  machineBuilder->setCodeGenOptLevel(codeGenLevel);
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      machineBuilder->createTargetMachine();
  if (!machine)
    return RuntimeError::make(ErrorKind::Compile,
                     "cannot target the host: " +
                         llvm::toString(machine.takeError()));
  auto transformer =
      makeOptimizingTransformer(options.optLevel, 0, machine->get());
  SmallVector<StringRef> libraries(options.sharedLibraries.begin(),
                                   options.sharedLibraries.end());
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = codeGenLevel;
  engineOptions.sharedLibPaths = libraries;
  engineOptions.enableGDBNotificationListener = false;
  // MLIR_AD_PERF=1 lets `perf record -k 1` + `perf inject --jit` name the
  // compiled functions.
  engineOptions.enablePerfNotificationListener =
      std::getenv("MLIR_AD_PERF") != nullptr;
  llvm::Expected<std::unique_ptr<ExecutionEngine>> engine =
      ExecutionEngine::create(module, engineOptions, std::move(*machine));
  if (!engine) {
    llvm::Error error = diagnostics.takeError("cannot JIT-compile " + what);
    auto [kind, message] = takeError(std::move(error));
    return RuntimeError::make(kind, message + "\n" + llvm::toString(engine.takeError()));
  }
  registerMissingBuiltins(**engine);
  registerRuntimeCheckHandlers(**engine);
  llvm::Expected<void (*)(void **)> packed =
      (*engine)->lookupPacked(("_mlir_ciface_" + entryName).str());
  if (!packed)
    return RuntimeError::make(ErrorKind::Compile,
                     "cannot find the compiled " + what + ": " +
                         llvm::toString(packed.takeError()));
  return std::make_shared<JitEntryPoint>(std::move(signature),
                                         std::move(*engine), *packed);
}
