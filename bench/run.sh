#!/usr/bin/env bash
# Builds MLIR-AD if needed and runs one benchmark (default: all of them):
#   bench/run.sh [scalar-loop ...]
# Each benchmark lowers with ad-opt --ad-lower-to-llvm, JIT-compiles at -O3
# under mlir-runner and prints its own ratios against baselines in the run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build"}
"$root/scripts/build.sh" "$build" >&2
llvm=/usr/lib/llvm-22
# Vectorized math calls glibc's libmvec (ad-vector-math).
mvec=$(ls /usr/lib/*-linux-gnu/libmvec.so.1 2>/dev/null | head -n 1 | sed "s/^/,/")
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$root"/bench/*.mlir; do names+=("$(basename "$f" .mlir)"); done
fi
for name in "${names[@]}"; do
  echo "== $name"
  "$build/bin/ad-opt" "$root/bench/$name.mlir" --ad-lower-to-llvm |
    "$llvm/bin/mlir-runner" -O3 -e main -entry-point-result=void \
      -shared-libs="$llvm/lib/libmlir_runner_utils.so,$llvm/lib/libmlir_c_runner_utils.so$mvec"
done
