#!/usr/bin/env bash
# Installs a built MLIR-AD as a package, moves the package to another
# prefix (it must be relocatable), then builds examples/downstream against
# the moved copy and runs its lit tests (check-ds).
# Usage: scripts/test-downstream.sh [build-dir]   (default: build/)
# Work files go to <build-dir>/downstream-test: staging/ (the install),
# prefix/ (the moved package), build/ (the downstream project's build) and
# the logs of the install and of the configuration.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-"$root/build"}" && pwd)
work="$build/downstream-test"
staging="$work/staging"
prefix="$work/prefix"

# `cmake --install` copies what the build produced: build everything.
ninja -C "$build" -j2
rm -rf "$staging" "$prefix"
mkdir -p "$work"
cmake --install "$build" --prefix "$staging" > "$work/install.log" \
  || { cat "$work/install.log" >&2; exit 1; }
mv "$staging" "$prefix"

# Nothing in the package may point back at the staging prefix, the source
# or the build tree (the build tree lies inside the source tree or not).
leaks=$(grep -rIl -e "$staging" -e "$root" -e "$build" "$prefix" || true)
if [ -n "$leaks" ]; then
  echo "error: the installed package refers to build-time paths:" >&2
  echo "$leaks" >&2
  exit 1
fi

# The installed ad-opt runs from the moved prefix (its RUNPATH finds
# libMLIR.so without the build tree) and differentiates.
cat > "$work/square.mlir" <<'MLIR'
func.func @square(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  return %y : f64
}
func.func @grad(%x: f64) -> f64 {
  %g = ad.grad @square(%x) : (f64) -> f64
  return %g : f64
}
MLIR
"$prefix/bin/ad-opt" "$work/square.mlir" --ad-differentiate \
  -o "$work/square.out.mlir"
grep -q "func.func private @square_ad_pb_0" "$work/square.out.mlir" \
  || { echo "error: the installed ad-opt did not differentiate" >&2; exit 1; }

# The flags of scripts/build.sh, except MLIR_DIR: the package's config finds
# the MLIR it was built with by itself.
cmake -G Ninja -S "$root/examples/downstream" -B "$work/build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DLLVM_USE_LINKER=lld -DMLIR_LINK_MLIR_DYLIB=ON \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DPython3_EXECUTABLE=/usr/bin/python3 > "$work/configure.log" \
  || { cat "$work/configure.log" >&2; exit 1; }
grep -q "Using MLIRADConfig.cmake in: $prefix/" "$work/configure.log" \
  || { echo "error: the downstream project did not use $prefix" >&2; exit 1; }
ninja -C "$work/build" -j2 check-ds
