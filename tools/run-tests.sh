#!/usr/bin/env bash
# Builds kairos and runs every test: the normal build, then the thread-sanitizer build and the
# address+undefined build (KAIROS_SANITIZERS=0 skips those two).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
jobs=$(nproc)
# Debug info is line tables only (-g1): file:line in every backtrace and sanitizer report, at a
# quarter less compile time than -g (schedule_test.cpp under ThreadSanitizer: 12.8 s with -O2 -g,
# 9.5 with -O2 -g1, 8.1 with -O1 -g1 on an Intel host whose whole CI run took 38 minutes). The
# thread-sanitizer build compiles at -O1, the optimisation the sanitizers' own documentation
# advises; the address+undefined build at -Og (the same file: 17.1 s at -O1 -g1, 11.4 at -Og -g1:
# UBSan's checks are costly to optimise), still inlining and still fast enough for every timing
# bound; the normal build keeps -O2, the code users run.
# (configure_build and build/release's configuration: tools/build-config.sh, shared with the demo,
# whose kairos-lat this build then reuses.)
source tools/build-config.sh
ctest_logs=()  # each run's ctest output: tools/check-skips.sh reads them all at the end
run() {  # run <build dir> <optimisation> <cmake args...>
  local dir=$1 opt=$2; shift 2
  local t0=$SECONDS
  echo "==== kairos: build $dir ($opt -g1 $*)"
  configure_build "$dir" "$opt" "$@"
  cmake --build "$dir" -j"$jobs"
  echo "==== kairos: ctest $dir (built in $((SECONDS - t0)) s)"
  t0=$SECONDS
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" --timeout 900 | tee "$dir/ctest.log"
  ctest_logs+=("$dir/ctest.log")
  echo "==== kairos: ctest $dir passed in $((SECONDS - t0)) s"
}
# CI soaks for a minute (resident memory flat, lateness p99 not drifting); 10 s elsewhere.
if [ "${CI:-}" = true ]; then export KAIROS_SOAK_SECONDS=${KAIROS_SOAK_SECONDS:-60}; fi
run "$release_dir" "$release_opt" "${release_args[@]}"
if [ "${KAIROS_SANITIZERS:-1}" = 1 ]; then
  export KAIROS_STRESS_SECONDS=${KAIROS_STRESS_SECONDS:-1} KAIROS_MODEL_SECONDS=${KAIROS_MODEL_SECONDS:-5} KAIROS_SOAK_SECONDS=5
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1"
  run build/tsan -O1 -DKAIROS_SANITIZE=thread -DKAIROS_BUILD_PERF=OFF -DKAIROS_BUILD_TOOLS=OFF
  run build/asan -Og -DKAIROS_SANITIZE=address,undefined -DKAIROS_BUILD_PERF=OFF -DKAIROS_BUILD_TOOLS=OFF -DKAIROS_POLL_SUITE=OFF
fi
# A test that skipped in every run above and passed in none cannot fail (tools/check-skips.sh).
bash tools/check-skips.sh tests/expected-skips.txt "${ctest_logs[@]}"
echo "==== kairos: all test builds passed"
