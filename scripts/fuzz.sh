#!/usr/bin/env bash
# Runs the libFuzzer target ad-fuzz (built by scripts/build-fuzzer.sh).
#
#   scripts/fuzz.sh [seconds]          fuzz for that long (default 600)
#   scripts/fuzz.sh --minimize FILE... minimize crash inputs into
#                                      $FUZZ_CRASH_DIR (default /tmp/fuzz-crashes)
#                                      with a stack trace next to each
#
# Seeds: every .mlir under test/ and examples/, split on `// -----` lines
# (tools/ad-fuzz/split-seeds.py), regenerated on each run. Chunks over
# FUZZ_MAX_SEED_BYTES (default 32768; 0 keeps all) are left out: they are
# the generated rule tests (utils/generate_rule_tests.py), which repeat what
# the small tests cover, one function per rule, and cost 1-8 s per
# execution under ASan (the two 450 KB tensor tests take 40-50 s and
# 2.4 GB, beyond -timeout=10), which would starve the fuzzer. Then
# FUZZ_GENERATED_SEEDS (default 60) random programs of
# utils/fuzz_gradients.py (`--print N`, seed 1): well-formed programs mixing
# every construct the README claims, which mutations of the hand-written
# tests rarely reach. The corpus the
# fuzzer grows is kept across runs. One process (the machine has 2 cores):
# libFuzzer's fork mode with one worker, so that a crash, timeout or OOM is
# recorded in the artifact directory and fuzzing goes on (FUZZ_KEEP_GOING=0
# stops at the first one instead).
#
# Environment:
#   FUZZ_BUILD   build directory with bin/ad-fuzz (default build-fuzzer/)
#   FUZZ_WORK    seeds/, corpus/, artifacts/ and logs (default $FUZZ_BUILD/fuzz)
#   FUZZ_ARGS    extra libFuzzer flags
#   FUZZ_MAX_SEED_BYTES  largest seed chunk used (default 32768, 0: all)
#   FUZZ_GENERATED_SEEDS programs of utils/fuzz_gradients.py added (default 60)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-"$root/build-fuzzer"}
work=${FUZZ_WORK:-"$build/fuzz"}
fuzzer="$build/bin/ad-fuzz"
[ -x "$fuzzer" ] || { echo "error: $fuzzer not found; run scripts/build-fuzzer.sh" >&2; exit 1; }

export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
# allow_user_poisoning=0: see scripts/build-sanitizers.sh (LLVM's allocators
# shared between instrumented and uninstrumented code give false reports).
export ASAN_OPTIONS="${ASAN_OPTIONS:-allow_user_poisoning=0:symbolize=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:symbolize=1}"

if [ "${1:-}" = "--minimize" ]; then
  shift
  # Reproduce everything, including the known upstream crash ad-fuzz skips.
  export AD_FUZZ_NO_SKIP=1
  out=${FUZZ_CRASH_DIR:-/tmp/fuzz-crashes}
  mkdir -p "$out"
  for crash in "$@"; do
    name=$(basename "$crash")
    echo "== minimizing $crash"
    "$fuzzer" -minimize_crash=1 -max_total_time="${FUZZ_MINIMIZE_SECONDS:-120}" \
      -timeout=10 -rss_limit_mb=4096 -exact_artifact_path="$out/$name.min.mlir" \
      "$crash" > "$out/$name.minimize.log" 2>&1 || true
    [ -f "$out/$name.min.mlir" ] || cp "$crash" "$out/$name.min.mlir"
    # The stack trace of the minimized input, run alone.
    "$fuzzer" -timeout=10 -rss_limit_mb=4096 "$out/$name.min.mlir" \
      > "$out/$name.min.trace" 2>&1 || true
    echo "   $out/$name.min.mlir ($(wc -c < "$out/$name.min.mlir") bytes), trace $out/$name.min.trace"
  done
  exit 0
fi

seconds=${1:-600}
mkdir -p "$work/corpus" "$work/artifacts"
rm -rf "$work/seeds"
read -r count largest skipped < <(/usr/bin/python3 "$root/tools/ad-fuzz/split-seeds.py" \
  --max-bytes "${FUZZ_MAX_SEED_BYTES:-32768}" "$work/seeds" "$root/test" "$root/examples")
generator="$root/utils/fuzz_gradients.py"
generated=0
if [ -f "$generator" ] && [ "${FUZZ_GENERATED_SEEDS:-60}" -gt 0 ]; then
  for n in $(seq 1 "${FUZZ_GENERATED_SEEDS:-60}"); do
    if /usr/bin/python3 "$generator" --seed 1 --print "$n" > "$work/seeds/generated-$n" 2>/dev/null \
        && [ -s "$work/seeds/generated-$n" ]; then
      size=$(wc -c < "$work/seeds/generated-$n")
      [ "$size" -gt "$largest" ] && largest=$size
      generated=$((generated + 1))
    else
      rm -f "$work/seeds/generated-$n"
    fi
  done
fi
count=$((count + generated))
maxlen=$(( largest > 4096 ? largest : 4096 ))
echo "seeds: $count ($generated generated; largest $largest bytes; $skipped larger test chunks left out), -max_len=$maxlen"

keepgoing=()
if [ "${FUZZ_KEEP_GOING:-1}" = 1 ]; then
  keepgoing=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi
log="$work/fuzz-$(date +%Y%m%d-%H%M%S).log"
echo "log: $log"
set +e
"$fuzzer" "${keepgoing[@]}" -dict="$root/tools/ad-fuzz/mlir.dict" \
  -max_len="$maxlen" -timeout=10 -rss_limit_mb=4096 \
  -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" ${FUZZ_ARGS:-} \
  "$work/corpus" "$work/seeds" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
echo "artifacts (crashes, timeouts, OOMs) in $work/artifacts:"
ls -la "$work/artifacts"
exit "$status"
