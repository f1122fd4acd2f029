#!/usr/bin/env bash
# run_fuzz.sh: builds the tools' input fuzz targets (gate_reader_fuzz, lat_records_fuzz,
# hdr_decoder_fuzz; tests/fuzz/CMakeLists.txt) with clang, libFuzzer, AddressSanitizer and UBSan
# in a build directory of its own, then runs each for a bounded time, one after the other.
#   usage: tests/fuzz/run_fuzz.sh [seconds per target]   (default 30, or KAIROS_FUZZ_SECONDS)
#   KAIROS_TOOLS_FUZZ_BUILD_DIR  build directory (default: $TMPDIR/kairos-build-tools-fuzz)
#   KAIROS_FUZZ_SANITIZE         sanitizers for the whole build (default: address,undefined)
#   KAIROS_FUZZ_STEPS            "build run" (default), "build" or "run" (the targets already
#                                built): CI builds both fuzz scripts' targets, then runs them side by side
# Each target starts from its committed seed corpus (tests/fuzz/corpus/<target>/, read only) and
# keeps what it finds in <build dir>/corpus/<target>/ between runs. A crash, a sanitizer report,
# an exception other than the reader's own error or a hang stops the script with the target's
# exit status; libFuzzer saves the input as <build dir>/crash-* (or timeout-*, leak-*).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
seconds="${1:-${KAIROS_FUZZ_SECONDS:-30}}"
build="${KAIROS_TOOLS_FUZZ_BUILD_DIR:-${TMPDIR:-/tmp}/kairos-build-tools-fuzz}"
sanitize="${KAIROS_FUZZ_SANITIZE-address,undefined}"
source "$root/tests/fuzz/fuzz_build.sh"
cxx="$(fuzz_clang)" || exit 2
targets=(gate_reader_fuzz lat_records_fuzz hdr_decoder_fuzz)

steps="${KAIROS_FUZZ_STEPS:-build run}"
if [[ " $steps " == *" build "* ]]; then
  fuzz_build "$root" "$build" "$cxx" "$sanitize" ON "${targets[@]}"
fi
[[ " $steps " == *" run "* ]] || exit 0

cd "$build"
for t in "${targets[@]}"; do
  exe="$(find "$build/tests/fuzz" -maxdepth 1 -name "$t" -type f | head -n 1)"
  [[ -x "$exe" ]] || { echo "run_fuzz.sh: $t was not built (no libFuzzer?)" >&2; exit 2; }
  mkdir -p "corpus/$t"
  echo "==== $t: ${seconds} s"
  # -timeout: one input takes milliseconds; 10 s is a hang. -max_len: inputs up to 64 KiB (a
  # deep JSON value needs a few KiB to pass the depth bound). Leaks are reported too.
  "$exe" -max_total_time="$seconds" -timeout=10 -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
    "corpus/$t" "$root/tests/fuzz/corpus/$t"
done
