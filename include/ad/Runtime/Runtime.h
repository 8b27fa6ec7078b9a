//===- Runtime.h - JIT-compile and call MLIR-AD programs --------*- C++ -*-===//
//
// The runtime behind the Python package and the C API: it parses a module
// that may hold `ad` ops, builds an entry point for a call, a gradient, a
// value and gradient or a vector-Jacobian product of one of its functions,
// lowers it with `ad-lower-to-llvm`, JIT-compiles it with the upstream
// ExecutionEngine at -O3 and calls it on scalars and strided buffers.
//
// Nothing here throws or exits: every failure (parse, verification,
// differentiation, lowering, a wrong argument) comes back as an llvm::Error
// holding a RuntimeError with the MLIR diagnostics and their locations.
//
//===----------------------------------------------------------------------===//

#ifndef AD_RUNTIME_RUNTIME_H
#define AD_RUNTIME_RUNTIME_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class MLIRContext;
class ModuleOp;
class OpPassManager;
} // namespace mlir

namespace mlir::ad::runtime {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// What went wrong, so that bindings can pick their exception class.
enum class ErrorKind {
  /// MLIR diagnostics: parsing, verification, differentiation, lowering or
  /// JIT compilation failed. The message holds every diagnostic with its
  /// location (`file:line:col: error: ...`) and notes.
  Compile,
  /// An argument has the wrong kind or element type, or the wrong number of
  /// arguments was passed.
  Type,
  /// An argument has the right type but a wrong value: a shape that does not
  /// match the function's static dimensions, a non-contiguous buffer, a
  /// function name or differentiated position that does not exist.
  Value,
};

/// The error payload of every failing runtime call.
class RuntimeError : public llvm::ErrorInfo<RuntimeError> {
public:
  static char ID;
  RuntimeError(ErrorKind kind, std::string message)
      : kind(kind), message(std::move(message)) {}
  /// An llvm::Error holding a RuntimeError.
  static llvm::Error make(ErrorKind kind, const llvm::Twine &message);
  ErrorKind getKind() const { return kind; }
  const std::string &getMessage() const { return message; }
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  ErrorKind kind;
  std::string message;
};

/// Splits an error returned by the runtime into its kind and its message
/// (errors of other origins become ErrorKind::Compile) and consumes it.
std::pair<ErrorKind, std::string> takeError(llvm::Error error);

//===----------------------------------------------------------------------===//
// Types and values at the boundary
//===----------------------------------------------------------------------===//

/// Element types a caller can pass or receive.
enum class ElementKind : uint8_t { F16, BF16, F32, F64, I1, I8, I16, I32, I64, Index };

/// Bytes one element occupies in a buffer (i1 and index: 1 and 8).
size_t getByteWidth(ElementKind kind);
/// The MLIR spelling: "f64", "index", ...
llvm::StringRef getName(ElementKind kind);
/// f16, bf16, f32 or f64.
bool isFloat(ElementKind kind);

/// The type of one argument or result: a scalar, or a ranked tensor or memref
/// (identity layout) whose dimensions are either static or kDynamic.
struct ValueType {
  static constexpr int64_t kDynamic = INT64_MIN;
  ElementKind element = ElementKind::F64;
  bool shaped = false;
  bool tensor = false;
  std::vector<int64_t> shape;

  int64_t getRank() const { return shaped ? (int64_t)shape.size() : 0; }
  /// A float scalar or a shaped value of floats.
  bool isFloat() const { return runtime::isFloat(element); }
  /// A float scalar or a tensor of floats: what carries a gradient (as
  /// ad::isDifferentiableType; memrefs are the caller's memory).
  bool isDifferentiable() const { return isFloat() && (!shaped || tensor); }
  /// The MLIR spelling, e.g. "tensor<?x3xf64>".
  std::string str() const;
  bool operator==(const ValueType &other) const;
};

/// The argument and result types of a function or an entry point.
struct Signature {
  std::vector<ValueType> inputs;
  std::vector<ValueType> results;
  /// How messages name each input of an entry point: "argument 2" for the
  /// function's own, "cotangent 0" or "tangent 0" for those a vjp, jvp or
  /// hvp takes after them. Empty for a function's own signature.
  std::vector<std::string> inputNames;
};

/// The storage of a scalar of any element kind: i1 as 0 or 1 in `i8`,
/// index in `i64`, f16 and bf16 as their bits.
union Scalar {
  double f64;
  float f32;
  uint16_t bits16;
  int64_t i64;
  int32_t i32;
  int16_t i16;
  int8_t i8;
};

/// A value passed to an entry point. Scalars live in the object; buffers are
/// borrowed (not copied) and must be contiguous in row-major order.
struct Argument {
  ElementKind element = ElementKind::F64;
  bool shaped = false;
  /// A scalar, in the entry's element type.
  Scalar scalar = {0.0};
  /// A buffer: its first element and its sizes (row-major, contiguous).
  void *data = nullptr;
  llvm::SmallVector<int64_t, 4> sizes;

  static Argument ofF64(double value);
  static Argument ofF32(float value);
  static Argument ofI64(int64_t value, ElementKind kind = ElementKind::I64);
  static Argument ofBuffer(ElementKind kind, void *data,
                           llvm::ArrayRef<int64_t> sizes);
};

/// A value an entry point returned. A buffer is owned: its memory is freed
/// with the Result unless release() handed it to someone else, who must then
/// free() the pointer release() returned.
class Result {
public:
  Result() = default;
  Result(Result &&other) noexcept;
  Result &operator=(Result &&other) noexcept;
  Result(const Result &) = delete;
  Result &operator=(const Result &) = delete;
  ~Result();

  ElementKind element = ElementKind::F64;
  bool shaped = false;
  /// A scalar result.
  Scalar scalar = {0.0};
  /// Buffers: the allocation, the first element, sizes and strides in
  /// elements.
  void *allocated = nullptr;
  void *data = nullptr;
  llvm::SmallVector<int64_t, 4> sizes;
  llvm::SmallVector<int64_t, 4> strides;

  /// Gives up ownership of the allocation, to be released with free().
  void *release();
  /// The scalar as a double (floats) or the integer converted to double.
  double getScalarAsDouble() const;

private:
  void reset();
};

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// What an entry point computes from a function `f`.
enum class EntryKind {
  /// f's results.
  Call,
  /// `ad.grad`: one gradient per differentiated argument.
  Grad,
  /// `ad.value_and_grad`: f's results, then the gradients.
  ValueAndGrad,
  /// `ad.forward` + `ad.pullback`: takes f's arguments followed by one
  /// cotangent per float result of f, returns the gradients.
  Vjp,
  /// `ad.jvp`: takes f's arguments followed by one tangent per
  /// differentiated argument; returns f's results, then one tangent per
  /// float result of f.
  Jvp,
  /// `ad.hvp`: takes f's arguments followed by one tangent per
  /// differentiated argument; returns the Hessian-vector products, one per
  /// differentiated argument (f has one float result).
  Hvp,
};

/// One compiled function, callable any number of times from any thread.
class EntryPoint {
public:
  virtual ~EntryPoint();
  /// The types of the entry's arguments and results.
  const Signature &getSignature() const { return signature; }
  /// Runs the entry. The arguments are checked against the signature first
  /// (number, element types, ranks, static sizes); results are appended to
  /// `results`.
  virtual llvm::Error call(llvm::ArrayRef<Argument> args,
                           std::vector<Result> &results) const = 0;

protected:
  EntryPoint() = default;
  Signature signature;
};

//===----------------------------------------------------------------------===//
// Programs and the runtime
//===----------------------------------------------------------------------===//

class Runtime;

/// A parsed and verified module; entry points are built from its functions.
class Program {
public:
  virtual ~Program();
  /// The functions with a body, in the order of the module.
  virtual llvm::ArrayRef<std::string> getFunctionNames() const = 0;
  /// The signature of function `name`, or an ErrorKind::Value error.
  virtual llvm::Expected<Signature>
  getFunctionSignature(llvm::StringRef name) const = 0;
  /// The positions `ad.grad` differentiates by default: float scalars and
  /// shaped values of floats.
  virtual llvm::Expected<std::vector<int64_t>>
  getDifferentiableArguments(llvm::StringRef name) const = 0;
  /// Builds (or returns the cached) entry point of `kind` for function `name`
  /// with respect to the argument positions `wrt` (all differentiable ones
  /// when empty; ignored for EntryKind::Call).
  virtual llvm::Expected<std::shared_ptr<EntryPoint>>
  getEntryPoint(EntryKind kind, llvm::StringRef name,
                llvm::ArrayRef<int64_t> wrt = {}) = 0;
};

/// Options of a runtime.
struct RuntimeOptions {
  /// LLVM optimization level of the JIT (0-3).
  unsigned optLevel = 3;
  /// Shared libraries the JIT-ed code may call into. Empty: MLIR's runner
  /// utility libraries from the MLIR installation this was built against,
  /// when they exist.
  std::vector<std::string> sharedLibraries;
  /// Run the tile loops of linalg ops over parallel dimensions on OpenMP
  /// threads (ad::LowerToLLVMOptions::parallel), all cores or
  /// OMP_NUM_THREADS. Loads LLVM's OpenMP runtime (libomp.so.5) when a
  /// program has a parallel loop. Ignored with a buildPipeline.
  bool parallel = false;
  /// A compiler embedding the runtime adds its own dialects, their rules
  /// and interfaces to the context here (after the runtime's own).
  std::function<void(mlir::DialectRegistry &)> registerDialects;
  /// Builds the lowering of a module with ad ops to the LLVM dialect, run on
  /// builtin.module. Default: ad::buildLowerToLLVMPipeline. A compiler with
  /// ops of its own differentiates first, lowers its ops, then calls that.
  /// The runtime's run-time checks add cf, index, tensor and arith ops,
  /// which the pipeline must lower too (buildLowerToLLVMPipeline does).
  std::function<void(mlir::OpPassManager &)> buildPipeline;
};

/// Owns an MLIRContext with every upstream dialect, the ad dialect and its
/// rules, and a cache of compiled entry points keyed by program text, entry
/// kind, function and differentiated positions. Thread-safe.
class Runtime {
public:
  virtual ~Runtime();
  static std::unique_ptr<Runtime> create(RuntimeOptions options = {});

  /// Parses and verifies `source`; `bufferName` names it in locations (a
  /// file path, or "<source>").
  virtual llvm::Expected<std::shared_ptr<Program>>
  parse(llvm::StringRef source, llvm::StringRef bufferName = "<source>") = 0;
  /// Reads and parses the file at `path`.
  virtual llvm::Expected<std::shared_ptr<Program>>
  parseFile(llvm::StringRef path) = 0;
  /// Takes a module built in another context (it is printed and re-parsed,
  /// so the caller keeps its module unchanged).
  virtual llvm::Expected<std::shared_ptr<Program>>
  fromModule(mlir::ModuleOp module) = 0;

  /// Number of entry points compiled so far (cache misses).
  virtual size_t getNumCompilations() const = 0;
  /// Drops every cached entry point that nobody holds any more.
  virtual void clearCache() = 0;
};

/// Adds what the runtime's context registers (every upstream dialect and
/// extension, the LLVM IR translations, the ad dialect and its rules) to
/// `registry`.
void registerRuntimeDialects(mlir::DialectRegistry &registry);

} // namespace mlir::ad::runtime

#endif // AD_RUNTIME_RUNTIME_H
