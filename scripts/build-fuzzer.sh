#!/usr/bin/env bash
# Builds the libFuzzer target tools/ad-fuzz with clang-22: our code (the
# libraries and the target) with coverage instrumentation for libFuzzer,
# AddressSanitizer, UndefinedBehaviorSanitizer (non-recoverable) and our
# assertions on; libMLIR.so is used as installed (not instrumented, so the
# coverage that guides the fuzzer is that of our code). Run it with
# scripts/fuzz.sh.
#
# Usage: scripts/build-fuzzer.sh [build-dir]   (default: build-fuzzer/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build-fuzzer"}

flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
flags+=" -fno-omit-frame-pointer -gline-tables-only -D_GLIBCXX_ASSERTIONS"
"$root/scripts/configure-variant.sh" "$build" -DAD_BUILD_FUZZER=ON \
  -DCMAKE_C_FLAGS_RELEASE="-O2" -DCMAKE_CXX_FLAGS_RELEASE="-O2" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
ninja -C "$build" -j2 ad-fuzz
/usr/bin/python3 "$root/scripts/check-assert-flags.py" "$build" "$root"
echo "built $build/bin/ad-fuzz"
