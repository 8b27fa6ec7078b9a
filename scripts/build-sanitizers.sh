#!/usr/bin/env bash
# Builds MLIR-AD's own code (ad-opt and our libraries) with AddressSanitizer
# and UndefinedBehaviorSanitizer, plus our assertions, and runs the whole lit
# suite with it. libMLIR.so is not instrumented (ASan still checks every
# access our code makes, including into memory libMLIR allocated with malloc
# or new); in the execution tests only ad-opt is instrumented, mlir-runner is
# the installed one.
#
# Every sanitizer report goes to <build-dir>/sanitizer-logs/ (log_path), and
# a report aborts the process (abort_on_error=1), so the test that hit it
# fails even under `not`. The script lists the reports at the end and exits
# non-zero if there is one or if a test failed.
#
# allow_user_poisoning=0: LLVM's BumpPtrAllocator (Allocator.h, inlined into
# our code) poisons a new slab and unpoisons each allocation when compiled
# with ASan. Our instrumented code and the uninstrumented libMLIR.so share
# allocators (the StorageUniquer's, for types and attributes): a slab our
# code started stays poisoned where libMLIR then allocates from it, and the
# next read of such a type is a false "use-after-poison" (seen in
# func::CallOp::build on a FunctionType, test/Transforms/generate-derivatives).
# Manual poisoning is meaningless with half the users uninstrumented, so it
# is off; heap redzones, use-after-free and leaks are unaffected.
#
# Leaks: ASan's leak checker stays on, with no suppressions. Checked: with
# detect_leaks=1 the whole suite gives no leak report (LSan runs at every
# ad-opt exit; upstream's process-wide state, the context and the
# registries, is freed or still reachable from globals at exit, which LSan
# does not report), and a probe that leaks 77 bytes is reported in this
# environment, so the checker works. Neither detect_leaks=0 nor a
# suppression file is needed; if an upstream leak ever shows up, suppress
# its frame with LSAN_OPTIONS=suppressions=<file>, not the whole checker.
#
# Usage: scripts/build-sanitizers.sh [build-dir]   (default: build-sanitizers/)
# Environment: SANITIZER_LIT_ARGS (extra lit arguments, e.g. a test filter
# "--filter=Transforms").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build-sanitizers"}
build=$(mkdir -p "$build" && cd "$build" && pwd)

sanitize="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
"$root/scripts/configure-variant.sh" "$build" \
  -DCMAKE_C_FLAGS_RELEASE="-O1" -DCMAKE_CXX_FLAGS_RELEASE="-O1" \
  -DCMAKE_C_FLAGS="$sanitize -gline-tables-only -D_GLIBCXX_ASSERTIONS" \
  -DCMAKE_CXX_FLAGS="$sanitize -gline-tables-only -D_GLIBCXX_ASSERTIONS" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
ninja -C "$build" -j2 ad-opt
/usr/bin/python3 "$root/scripts/check-assert-flags.py" "$build" "$root"

logs="$build/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
export ASAN_OPTIONS="abort_on_error=1:allow_user_poisoning=0:detect_leaks=1:log_path=$logs/asan:symbolize=1"
export UBSAN_OPTIONS="abort_on_error=1:print_stacktrace=1:log_path=$logs/ubsan:symbolize=1"

status=0
# lit's own -sv output lists failing tests; the reports are collected below.
LIT_OPTS="-sv ${SANITIZER_LIT_ARGS:-}" ninja -C "$build" -j2 check-ad || status=$?

reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
  echo
  echo "==== sanitizer reports ($(echo "$reports" | wc -l) files in $logs) ===="
  for r in $reports; do
    echo "---- $r"
    cat "$r"
  done
  status=1
else
  echo "no sanitizer reports"
fi
exit $status
