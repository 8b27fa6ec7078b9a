#!/usr/bin/env bash
# Builds MLIR-AD with its own assertions enabled and runs the whole lit suite.
#
# Debian's LLVM/MLIR is built without assertions, and LLVMConfig.cmake sets
# LLVM_ENABLE_ASSERTIONS=OFF as a normal variable, which shadows a
# -DLLVM_ENABLE_ASSERTIONS=ON given on the command line (checked: -DNDEBUG
# stays). So NDEBUG is removed from the Release flags directly, and libstdc++'s
# checks are added with -D_GLIBCXX_ASSERTIONS (no ABI change). Only our code
# is affected; libMLIR.so stays as installed. LLVM_ENABLE_ABI_BREAKING_CHECKS
# comes from the installed abi-breaking.h (0), not from NDEBUG, so the result
# links against libMLIR.so; scripts/check-assert-flags.py verifies all this on
# the generated compile commands (after the build: it preprocesses a real
# source, which needs the generated headers).
#
# Usage: scripts/build-asserts.sh [build-dir]   (default: build-asserts/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build-asserts"}

"$root/scripts/configure-variant.sh" "$build" \
  -DCMAKE_C_FLAGS_RELEASE="-O2" -DCMAKE_CXX_FLAGS_RELEASE="-O2" \
  -DCMAKE_C_FLAGS="-D_GLIBCXX_ASSERTIONS" -DCMAKE_CXX_FLAGS="-D_GLIBCXX_ASSERTIONS"
ninja -C "$build" -j2 ad-opt
/usr/bin/python3 "$root/scripts/check-assert-flags.py" "$build" "$root"
ninja -C "$build" -j2 check-ad
