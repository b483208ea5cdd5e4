#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/*.cpp) with clang, ASan and UBSan in a build folder of
# their own, runs every saved reproducer, then fuzzes each harness for a bounded time.
#   bash fuzz/run.sh [SECONDS]     seconds per harness (default 60); 0: the reproducers only
# Environment: STEPGRAPH_FUZZ_BUILD_DIR (default build-fuzz), FUZZ_CXX (default clang++-14, else
# clang++), FUZZ_JOBS (build jobs, default nproc). docs/fuzzing.md says what each harness covers.
#
# fuzz/regressions/<harness>/*        inputs that once failed and are fixed: any failure fails the run
# fuzz/regressions/<harness>/open/*   inputs that still fail (the bug is known and not fixed yet):
#                                     run and reported, not fatal; move one up when it passes
# A finding of the fuzzing phase fails the run; the input is in $BUILD/fuzz/artifacts-<harness>/.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

SECS=${1:-60}
BUILD=${STEPGRAPH_FUZZ_BUILD_DIR:-build-fuzz}
CXX=${FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
[ -n "$CXX" ] || { echo "fuzz/run.sh: no clang++ (Debian: apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 2; }

# Only what the harnesses link: core and the platform layer, no SimGrid, Z3, MPI, CUDA, tests.
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CXX" -DSTEPGRAPH_BUILD_FUZZ=ON \
  -DSTEPGRAPH_WITH_SIMGRID=OFF -DSTEPGRAPH_WITH_Z3=OFF -DSTEPGRAPH_WITH_MPI=OFF -DSTEPGRAPH_WITH_CUDA=OFF \
  -DSTEPGRAPH_BUILD_TESTS=OFF -DSTEPGRAPH_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target fuzz_frontend fuzz_msccl fuzz_platform

# Per harness: its seed folders (read, never written) and its longest input.
declare -A SEEDS=([frontend]="schedules tests/verify_cases tests/sim_cases" [msccl]="tests/msccl" [platform]="fuzz/seeds/platform")
declare -A MAXLEN=([frontend]=8192 [msccl]=24576 [platform]=512)
# The limits an input must keep: 10 s (a hang), 2 GiB (an out-of-memory).
COMMON=(-timeout=10 -rss_limit_mb=2048)
# The fuzzing phase's random seed: 1 by default, so that CI (a fresh corpus every time) tries the
# same inputs on every run and fails only on a change of the code, never by chance; FUZZ_SEED=0
# picks a new seed each run (the longer runs of docs/fuzzing.md).
SEED=${FUZZ_SEED:-1}

status=0
for h in frontend msccl platform; do
  bin="$BUILD/fuzz/fuzz_$h"
  reg="fuzz/regressions/$h"
  # Reproducers, one process each (a crash ends the process that runs it).
  shopt -s nullglob
  fixed=() open=("$reg"/open/*)
  for f in "$reg"/*; do [ -f "$f" ] && fixed+=("$f"); done
  shopt -u nullglob
  failed=0
  for f in "${fixed[@]}"; do
    if ! "$bin" "${COMMON[@]}" "$f" >"$BUILD/fuzz/last-$h.log" 2>&1; then
      echo "fuzz/run.sh: $h: regression $f fails:" >&2
      tail -n 30 "$BUILD/fuzz/last-$h.log" >&2
      failed=1
    fi
  done
  still=0
  for f in "${open[@]}"; do
    if "$bin" "${COMMON[@]}" "$f" >"$BUILD/fuzz/last-$h.log" 2>&1; then
      echo "fuzz/run.sh: $h: $f passes now: move it to $reg/"
    else
      still=$((still + 1))
    fi
  done
  echo "fuzz/run.sh: $h: ${#fixed[@]} regression inputs run, $((${#open[@]} - still)) of ${#open[@]} known-open inputs pass"
  if [ "$failed" -ne 0 ]; then
    status=1
    continue
  fi
  [ "$SECS" -gt 0 ] || continue

  corpus="$BUILD/fuzz/corpus-$h"
  artifacts="$BUILD/fuzz/artifacts-$h/"
  mkdir -p "$corpus" "$artifacts"
  # shellcheck disable=SC2086 # SEEDS holds several folders
  if ! "$bin" "${COMMON[@]}" -seed="$SEED" -max_total_time="$SECS" -max_len="${MAXLEN[$h]}" -dict="fuzz/$h.dict" \
    -artifact_prefix="$artifacts" -print_final_stats=1 "$corpus" ${SEEDS[$h]} >"$BUILD/fuzz/fuzz-$h.log" 2>&1; then
    echo "fuzz/run.sh: $h: finding (input saved in $artifacts; keep it under $reg/ once fixed):" >&2
    tail -n 40 "$BUILD/fuzz/fuzz-$h.log" >&2
    status=1
    continue
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$BUILD/fuzz/fuzz-$h.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$BUILD/fuzz/fuzz-$h.log")
  echo "fuzz/run.sh: $h: ${SECS}s, $execs executions ($rate/s), corpus $(find "$corpus" -type f | wc -l) inputs, no finding"
done
exit $status
