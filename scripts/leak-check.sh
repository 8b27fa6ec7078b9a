#!/usr/bin/env bash
# Runs every execution test and the JIT runtime's C API test under valgrind
# and reports heap blocks the generated code or the runtime leaks (tapes
# must be freed when their pullback is dead, results when their owner
# frees them), and any memory error in the runtime.
# Slow (minutes); not part of scripts/test.sh. Usage: scripts/leak-check.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build"}
llvm=/usr/lib/llvm-22
# Vectorized math calls glibc's libmvec (ad-vector-math).
mvec=$(ls /usr/lib/*-linux-gnu/libmvec.so.1 2>/dev/null | head -n 1 | sed "s/^/,/")
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
status=0
for test in "$root"/test/Integration/*.mlir; do
  lowered=$(mktemp)
  "$build/bin/ad-opt" "$test" --ad-lower-to-llvm > "$lowered"
  report=$(valgrind --leak-check=full "$llvm/bin/mlir-runner" -e main \
    -entry-point-result=void \
    -shared-libs="$llvm/lib/libmlir_runner_utils.so,$llvm/lib/libmlir_c_runner_utils.so$mvec" \
    "$lowered" 2>&1 >/dev/null | grep -E "(definitely|indirectly) lost:" || true)
  rm -f "$lowered"
  lost=$(echo "$report" | awk '{s += $4} END {print s + 0}')
  printf '%-40s %s bytes lost\n' "$(basename "$test")" "$lost"
  [ "$lost" = 0 ] || status=1
done
# The runtime: compiles and calls entry points, takes and frees results.
report=$(valgrind --leak-check=full --error-exitcode=3 \
  --suppressions="$root/scripts/valgrind.supp" \
  "$build/bin/ad-capi-test" 2>&1 >/dev/null) || { echo "$report" | tail -20; status=1; }
lost=$(echo "$report" | grep -E "(definitely|indirectly) lost:" |
  awk '{gsub(",", "", $4); s += $4} END {print s + 0}')
printf '%-40s %s bytes lost\n' "ad-capi-test (runtime)" "$lost"
[ "$lost" = 0 ] || status=1
exit $status
