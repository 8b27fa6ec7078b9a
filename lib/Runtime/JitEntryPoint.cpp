//===- JitEntryPoint.cpp - calling JIT-compiled entry points --------------===//
//
// Checks arguments against an entry's signature, packs them as the C
// interface of the lowered function expects, calls it and unpacks the
// results into owned values.
//
//===----------------------------------------------------------------------===//

#include "JitEntryPoint.h"

#include "llvm/Support/raw_ostream.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"

#include <csetjmp>
#include <malloc.h>
#include <sys/mman.h>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace mlir::ad::runtime;

EntryPoint::~EntryPoint() = default;

static_assert(sizeof(void *) == 8 && sizeof(int64_t) == 8,
              "the calling convention assumes a 64-bit target");

//===----------------------------------------------------------------------===//
// Failed runtime checks
//===----------------------------------------------------------------------===//

namespace {
/// Where a failed check in the running entry returns to, what it said, and
/// the blocks the entry allocated and has not freed (freed on a failure:
/// the frames that would have freed them are skipped).
struct CheckTrap {
  std::jmp_buf buffer;
  std::string message;
  llvm::DenseSet<void *> live;
};
thread_local CheckTrap *activeTrap = nullptr;
} // namespace

//===----------------------------------------------------------------------===//
// Large blocks kept between calls
//===----------------------------------------------------------------------===//

namespace {
/// Blocks of at least kLargeBlock bytes that compiled code freed, kept (up
/// to kKeptBytes in all) for the next allocations of about their size.
/// glibc serves such blocks from fresh mmap'ed pages and unmaps them on
/// free (above its largest M_MMAP_THRESHOLD, 32 MB), so a call that
/// allocates a large tape faulted all its pages in again on every call
/// (GradBench's ode: 80 MB, a quarter of the gradient's time).
class LargeBlocks {
public:
  static constexpr size_t kLargeBlock = size_t(32) << 20;
  static constexpr size_t kKeptBytes = size_t(256) << 20;

  /// A kept block of at least `size` bytes and at most twice that, or null.
  void *take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex);
    auto best = blocks.end();
    for (auto it = blocks.begin(); it != blocks.end(); ++it)
      if (it->second >= size && it->second / 2 <= size &&
          (best == blocks.end() || it->second < best->second))
        best = it;
    if (best == blocks.end())
      return nullptr;
    void *block = best->first;
    kept -= best->second;
    blocks.erase(best);
    return block;
  }

  /// Keeps `block` (of `usable` bytes), freeing the oldest kept blocks to
  /// stay within kKeptBytes; false when it is too large to keep.
  bool keep(void *block, size_t usable) {
    if (usable > kKeptBytes)
      return false;
    std::lock_guard<std::mutex> lock(mutex);
    while (kept + usable > kKeptBytes) {
      std::free(blocks.front().first);
      kept -= blocks.front().second;
      blocks.erase(blocks.begin());
    }
    blocks.push_back({block, usable});
    kept += usable;
    return true;
  }

  ~LargeBlocks() {
    for (auto [block, usable] : blocks)
      std::free(block);
  }

private:
  std::mutex mutex;
  llvm::SmallVector<std::pair<void *, size_t>, 4> blocks;
  size_t kept = 0;
};

LargeBlocks &largeBlocks() {
  static LargeBlocks blocks;
  return blocks;
}
} // namespace

/// Blocks of at least this size get transparent huge pages.
static constexpr size_t kHugePageBlock = size_t(1) << 30;

/// Asks for transparent huge pages (2 MB) in the part of a fresh block of
/// a gigabyte or more that they can cover: a tape of gigabytes (GradBench's
/// det at 11 x 11, 5 GB) then takes one page fault per 2 MB instead of one
/// per 4 kB, which were most of its gradient's time (21 s; 16.5 s on the
/// first call, 2.5 s on the next). Not for smaller blocks: on this VM huge
/// pages made the first touch of memory 1.5 to 3 times slower (kmeans'
/// 80 MB distance matrix, ba's and det 10 x 10's few hundred MB), and the
/// blocks up to 256 MB are kept between calls anyway. The kernel's
/// "madvise" mode (Debian's default) needs the request; "never" ignores
/// it.
static void adviseHugePages(void *block, size_t size) {
  if (!block || size < kHugePageBlock)
    return;
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  uintptr_t start = (reinterpret_cast<uintptr_t>(block) + kHuge - 1) & ~(kHuge - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(block) + size) & ~(kHuge - 1);
  if (end > start)
    (void)madvise(reinterpret_cast<void *>(start), end - start,
                  MADV_HUGEPAGE);
}

extern "C" {
/// The allocation functions of JIT-ed code: tracked while an entry runs,
/// large blocks kept between calls (LargeBlocks) and given huge pages.
static void *adCheckedMalloc(size_t size) {
  void *block = nullptr;
  if (size >= LargeBlocks::kLargeBlock)
    block = largeBlocks().take(size);
  if (!block) {
    block = std::malloc(size);
    adviseHugePages(block, size);
  }
  if (activeTrap && block)
    activeTrap->live.insert(block);
  return block;
}

static void adCheckedFree(void *block) {
  if (activeTrap)
    activeTrap->live.erase(block);
  if (!block)
    return;
  size_t usable = malloc_usable_size(block);
  if (usable >= LargeBlocks::kLargeBlock && largeBlocks().keep(block, usable))
    return;
  std::free(block);
}

static void *adCheckedRealloc(void *block, size_t size) {
  void *moved = std::realloc(block, size);
  adviseHugePages(moved, size);
  // realloc(p, 0) frees p and may return NULL.
  if (activeTrap && (moved || size == 0)) {
    activeTrap->live.erase(block);
    if (moved)
      activeTrap->live.insert(moved);
  }
  return moved;
}

/// `puts` for JIT-ed code: collects a failing check's message.
static int adCheckPuts(const char *text) {
  if (!activeTrap)
    return std::puts(text);
  activeTrap->message += text;
  return 0;
}

/// `abort` for JIT-ed code: returns to the call that ran the check. The
/// JIT-ed frames in between hold no destructors (C code without unwinding).
[[noreturn]] static void adCheckAbort() {
  if (activeTrap)
    std::longjmp(activeTrap->buffer, 1);
  std::abort();
}
}

void mlir::ad::runtime::registerRuntimeCheckHandlers(
    mlir::ExecutionEngine &engine) {
  engine.registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    map[interner("puts")] = {llvm::orc::ExecutorAddr::fromPtr(&adCheckPuts),
                             llvm::JITSymbolFlags::Exported};
    map[interner("abort")] = {llvm::orc::ExecutorAddr::fromPtr(&adCheckAbort),
                              llvm::JITSymbolFlags::Exported};
    map[interner("malloc")] = {
        llvm::orc::ExecutorAddr::fromPtr(&adCheckedMalloc),
        llvm::JITSymbolFlags::Exported};
    map[interner("free")] = {llvm::orc::ExecutorAddr::fromPtr(&adCheckedFree),
                             llvm::JITSymbolFlags::Exported};
    map[interner("realloc")] = {
        llvm::orc::ExecutorAddr::fromPtr(&adCheckedRealloc),
        llvm::JITSymbolFlags::Exported};
    return map;
  });
}

/// Calls `packed`; false when a runtime check failed (message in `trap`).
/// Kept free of C++ objects: setjmp returns twice.
static bool runChecked(void (*packed)(void **), void **args, CheckTrap &trap) {
  CheckTrap *outer = activeTrap;
  activeTrap = &trap;
  if (setjmp(trap.buffer)) {
    activeTrap = outer;
    return false;
  }
  packed(args);
  activeTrap = outer;
  return true;
}

/// Words of a memref descriptor of `rank`.
static size_t descriptorWords(int64_t rank) { return 3 + 2 * rank; }

/// Size (and alignment) of a scalar or a descriptor field of a C struct.
static size_t fieldBytes(const ValueType &type) {
  return type.shaped ? 8 * descriptorWords(type.getRank())
                     : getByteWidth(type.element);
}

static size_t fieldAlignment(const ValueType &type) {
  return type.shaped ? 8 : getByteWidth(type.element);
}

CallingConvention::CallingConvention(const Signature &signature) {
  for (const ValueType &input : signature.inputs)
    if (input.shaped)
      argumentWords += descriptorWords(input.getRank());
  const std::vector<ValueType> &results = signature.results;
  scalarReturn = results.size() == 1 && !results.front().shaped;
  size_t offset = 0, alignment = 1;
  for (const ValueType &result : results) {
    size_t align = fieldAlignment(result);
    offset = (offset + align - 1) / align * align;
    resultOffsets.push_back(offset);
    offset += fieldBytes(result);
    alignment = std::max(alignment, align);
  }
  resultBytes = (offset + alignment - 1) / alignment * alignment;
}

JitEntryPoint::JitEntryPoint(Signature signature,
                             std::unique_ptr<mlir::ExecutionEngine> engine,
                             void (*packed)(void **))
    : engine(std::move(engine)), packed(packed),
      convention(signature) {
  this->signature = std::move(signature);
}


/// "tensor<?x3xf64>" for a buffer argument, "f32" for a scalar.
static std::string describe(const Argument &arg) {
  if (!arg.shaped)
    return ("a " + getName(arg.element) + " scalar").str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "a buffer of shape (";
  llvm::interleaveComma(arg.sizes, os);
  os << ") and element type " << getName(arg.element);
  return text;
}

llvm::Error JitEntryPoint::checkArguments(llvm::ArrayRef<Argument> args) const {
  const std::vector<ValueType> &inputs = signature.inputs;
  if (args.size() != inputs.size())
    return RuntimeError::make(ErrorKind::Type, "expected " + llvm::Twine(inputs.size()) +
                                          " arguments, got " +
                                          llvm::Twine(args.size()));
  for (auto [index, arg] : llvm::enumerate(args)) {
    const ValueType &type = inputs[index];
    std::string name = index < signature.inputNames.size()
                           ? signature.inputNames[index]
                           : "argument " + std::to_string(index);
    if (arg.shaped != type.shaped || arg.element != type.element)
      return RuntimeError::make(ErrorKind::Type, name +
                                            ": expected " + type.str() +
                                            ", got " + describe(arg));
    if (!arg.shaped)
      continue;
    if ((int64_t)arg.sizes.size() != type.getRank())
      return RuntimeError::make(ErrorKind::Value,
                       name + ": expected " +
                           type.str() + " (rank " +
                           llvm::Twine(type.getRank()) + "), got " +
                           describe(arg));
    for (auto [dim, size] : llvm::enumerate(arg.sizes)) {
      int64_t expected = type.shape[dim];
      if (size < 0 || (expected != ValueType::kDynamic && size != expected))
        return RuntimeError::make(ErrorKind::Value,
                         name + ": expected " +
                             type.str() + ", got " + describe(arg) +
                             " (dimension " + llvm::Twine(dim) + ")");
    }
    if (!arg.data && llvm::all_of(arg.sizes, [](int64_t s) { return s > 0; }))
      return RuntimeError::make(ErrorKind::Value,
                       name + " has no data");
  }
  return llvm::Error::success();
}

/// Writes the descriptor of a contiguous row-major buffer at `words`.
static void writeDescriptor(const Argument &arg, int64_t *words) {
  int64_t rank = arg.sizes.size();
  std::memcpy(&words[0], &arg.data, sizeof(void *));
  std::memcpy(&words[1], &arg.data, sizeof(void *));
  words[2] = 0;
  int64_t stride = 1;
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    words[3 + dim] = arg.sizes[dim];
    words[3 + rank + dim] = stride;
    stride *= std::max<int64_t>(arg.sizes[dim], 1);
  }
}

/// Reads a result of `type` at `field`, taking ownership of its buffer.
static Result readResult(const ValueType &type, const char *field) {
  Result result;
  result.element = type.element;
  result.shaped = type.shaped;
  if (!type.shaped) {
    std::memcpy(&result.scalar, field, getByteWidth(type.element));
    return result;
  }
  int64_t rank = type.getRank();
  const char *aligned;
  int64_t offset;
  std::memcpy(&result.allocated, field, sizeof(void *));
  std::memcpy(&aligned, field + 8, sizeof(void *));
  std::memcpy(&offset, field + 16, sizeof(int64_t));
  result.data = const_cast<char *>(aligned) + offset * getByteWidth(type.element);
  result.sizes.resize(rank);
  result.strides.resize(rank);
  std::memcpy(result.sizes.data(), field + 24, 8 * rank);
  std::memcpy(result.strides.data(), field + 24 + 8 * rank, 8 * rank);
  return result;
}

/// Bytes a result buffer spans from its first element.
static size_t spanBytes(const Result &result) {
  int64_t last = 0;
  for (auto [size, stride] : llvm::zip(result.sizes, result.strides)) {
    if (size == 0)
      return 0;
    last += (size - 1) * std::abs(stride);
  }
  return (last + 1) * getByteWidth(result.element);
}

llvm::Error JitEntryPoint::call(llvm::ArrayRef<Argument> args,
                                std::vector<Result> &results) const {
  if (llvm::Error error = checkArguments(args))
    return error;

  llvm::SmallVector<int64_t, 32> descriptors(convention.argumentWords);
  llvm::SmallVector<void *, 16> descriptorPointers(args.size());
  alignas(16) char inlineResults[256];
  std::unique_ptr<char[]> heapResults;
  char *resultStruct = inlineResults;
  if (convention.resultBytes > sizeof(inlineResults)) {
    heapResults.reset(new char[convention.resultBytes]);
    resultStruct = heapResults.get();
  }
  std::memset(resultStruct, 0, convention.resultBytes);

  llvm::SmallVector<void *, 16> packedArgs;
  const std::vector<ValueType> &resultTypes = signature.results;
  if (!resultTypes.empty() && !convention.scalarReturn)
    packedArgs.push_back(&resultStruct);
  size_t word = 0;
  for (auto [index, arg] : llvm::enumerate(args)) {
    if (!arg.shaped) {
      packedArgs.push_back(const_cast<void *>(
          static_cast<const void *>(&arg.scalar)));
      continue;
    }
    int64_t *descriptor = &descriptors[word];
    writeDescriptor(arg, descriptor);
    word += descriptorWords(arg.sizes.size());
    descriptorPointers[index] = descriptor;
    packedArgs.push_back(&descriptorPointers[index]);
  }
  if (convention.scalarReturn)
    packedArgs.push_back(resultStruct);

  CheckTrap trap;
  if (!runChecked(packed, packedArgs.data(), trap)) {
    for (void *block : trap.live)
      std::free(block);
    return RuntimeError::make(ErrorKind::Value,
                     "a run-time check of the compiled code failed (the "
                     "arguments' sizes do not fit the program, or an "
                     "assertion of the program failed):\n" +
                         trap.message);
  }

  size_t first = results.size();
  for (auto [type, offset] :
       llvm::zip(resultTypes, convention.resultOffsets))
    results.push_back(readResult(type, resultStruct + offset));
  // Two results never share a buffer (each owns its own); copy one if the
  // lowered code ever returned the same allocation twice.
  for (size_t i = first; i < results.size(); ++i) {
    Result &result = results[i];
    if (!result.allocated)
      continue;
    for (size_t j = first; j < i; ++j) {
      if (results[j].allocated != result.allocated)
        continue;
      size_t bytes = spanBytes(result);
      void *copy = std::malloc(std::max<size_t>(bytes, 1));
      std::memcpy(copy, result.data, bytes);
      result.allocated = copy;
      result.data = copy;
      break;
    }
  }
  return llvm::Error::success();
}
