#!/usr/bin/env bash
# Installs what is missing, builds MLIR-AD and runs the demo: the gradient of
# examples/damped-spring.mlir printed next to finite differences.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build"}
"$root/scripts/build.sh" "$build" >&2
llvm=/usr/lib/llvm-22
# Vectorized math calls glibc's libmvec (ad-vector-math).
mvec=$(ls /usr/lib/*-linux-gnu/libmvec.so.1 2>/dev/null | head -n 1 | sed "s/^/,/")
echo "== ad-opt examples/damped-spring.mlir --ad-lower-to-llvm | mlir-runner"
"$build/bin/ad-opt" "$root/examples/damped-spring.mlir" --ad-lower-to-llvm |
  "$llvm/bin/mlir-runner" -e main -entry-point-result=void \
    -shared-libs="$llvm/lib/libmlir_runner_utils.so,$llvm/lib/libmlir_c_runner_utils.so$mvec"
