#!/usr/bin/env bash
# Configures a checking variant of the MLIR-AD build (assertions, sanitizers,
# fuzzer) in its own directory, with the same toolchain and options as
# scripts/build.sh plus the extra CMake arguments given. Re-running it on an
# existing directory updates the flags (cmake is idempotent and fast).
# Used by scripts/build-asserts.sh, build-sanitizers.sh and build-fuzzer.sh.
# Usage: scripts/configure-variant.sh <build-dir> [cmake-args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: configure-variant.sh <build-dir> [cmake-args...]}
shift

for tool in cmake ninja clang-22 clang++-22; do
  command -v "$tool" >/dev/null || {
    echo "error: $tool not found; run scripts/build.sh once (as root) to install the toolchain" >&2
    exit 1
  }
done
[ -d /usr/lib/llvm-22/lib/cmake/mlir ] || {
  echo "error: libmlir-22-dev is not installed; run scripts/build.sh once (as root)" >&2
  exit 1
}

cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DLLVM_USE_LINKER=lld -DMLIR_LINK_MLIR_DYLIB=ON \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DPython3_EXECUTABLE=/usr/bin/python3 \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  "$@"
