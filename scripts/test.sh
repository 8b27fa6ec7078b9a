#!/usr/bin/env bash
# Installs what is missing, builds MLIR-AD and runs the whole test suite:
# lit (round-trip, diagnostics, transform, execution and C API tests), the
# Python package's pytest suite (with the Python example and the README's
# Python snippets), and the downstream project built against the installed
# package.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build"}
"$root/scripts/build.sh" "$build"
ninja -C "$build" -j2 check-ad
"$root/scripts/test-downstream.sh" "$build"
PYTHONPATH="$build/python_packages" /usr/bin/python3 -m pytest -q \
  -p no:cacheprovider "$root/python/tests"
