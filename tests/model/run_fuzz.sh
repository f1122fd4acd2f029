#!/usr/bin/env bash
# run_fuzz.sh: builds the model fuzz target (kairos_model_fuzz) with clang and libFuzzer in a
# build directory of its own, then runs it for a bounded time.
#   usage: tests/model/run_fuzz.sh [seconds]          (default 60, or KAIROS_FUZZ_SECONDS)
#   KAIROS_FUZZ_BUILD_DIR  build directory (default: $TMPDIR/kairos-build-fuzz)
#   KAIROS_FUZZ_SANITIZE   sanitizers for the whole build (default: address,undefined; '' for none)
#   KAIROS_FUZZ_CORPUS     corpus directory, kept between runs (default: <build dir>/corpus)
#   KAIROS_FUZZ_STEPS      "build run" (default), "build" or "run" (the target already built):
#                          CI builds both fuzz scripts' targets, then runs them side by side
# A difference between kairos and the model aborts the run and prints the shrunk sequence as a
# GoogleTest test to paste into tests/model/model_test.cpp; libFuzzer saves the input as crash-*.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
seconds="${1:-${KAIROS_FUZZ_SECONDS:-60}}"
build="${KAIROS_FUZZ_BUILD_DIR:-${TMPDIR:-/tmp}/kairos-build-fuzz}"
sanitize="${KAIROS_FUZZ_SANITIZE-address,undefined}"
corpus="${KAIROS_FUZZ_CORPUS:-$build/corpus}"
source "$root/tests/fuzz/fuzz_build.sh"
cxx="$(fuzz_clang)" || exit 2

steps="${KAIROS_FUZZ_STEPS:-build run}"
if [[ " $steps " == *" build "* ]]; then
  fuzz_build "$root" "$build" "$cxx" "$sanitize" OFF kairos_model_fuzz
fi
[[ " $steps " == *" run "* ]] || exit 0

mkdir -p "$corpus"
cd "$build"
# -timeout: one input (at most 48 operations) takes milliseconds; a hang is a failure.
exec "$build/tests/model/kairos_model_fuzz" -max_total_time="$seconds" -timeout=60 \
  -max_len=256 -rss_limit_mb=4096 -print_final_stats=1 "$corpus"
