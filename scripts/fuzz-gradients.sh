#!/usr/bin/env bash
# Checks the gradients of N random programs (default 200) against finite
# differences with utils/fuzz_gradients.py, on the ad-opt of $BUILD_DIR
# (default build/), two jobs at a time. The seed is $SEED, or today's date
# (YYYYMMDD) so that each day explores new programs; failing programs go to
# $KEEP_DIR (default $BUILD_DIR/fuzz-failures). Further arguments go to the
# fuzzer (e.g. --avoid <known-bug>). Exits non-zero when a program fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build"}
count=${1:-200}
shift $(( $# > 0 ? 1 : 0 ))
seed=${SEED:-$(date +%Y%m%d)}
echo "fuzz-gradients: seed $seed, $count programs, $build/bin/ad-opt"
exec "${PYTHON:-/usr/bin/python3}" "$root/utils/fuzz_gradients.py" \
  --ad-opt "$build/bin/ad-opt" --seed "$seed" --count "$count" --jobs 2 \
  --keep-dir "${KEEP_DIR:-$build/fuzz-failures}" "$@"
