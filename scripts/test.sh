#!/usr/bin/env bash
# Installs what is missing, builds MLIR-AD and runs the whole test suite
# (round-trip, diagnostics, transform and execution tests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build"}
"$root/scripts/build.sh" "$build"
ninja -C "$build" -j2 check-ad
