#!/usr/bin/env bash
# A/B latency gate of two kairos builds on one machine: the baseline's kairos-lat and the
# candidate's run alternately (ABBA: baseline first in odd rounds, candidate first in even ones),
# the same workload and flags, and kairos-gate judges the ratios candidate / baseline of the two
# runs of each round (kairos-gate --baseline-cmd/--candidate-cmd; docs/latency-tools.md). Runs of
# one round are seconds apart, so the state of a shared machine, which moves W3's median by 2x
# within a minute, cancels in their ratio; a baseline stored minutes earlier does not.
#
# Usage: tools/gate-ab.sh BASELINE CANDIDATE [kairos-gate options]
#   BASELINE, CANDIDATE: a build directory holding tools/lat/kairos-lat, or a git revision of
#   this repository, whose kairos-lat and kairos-gate are then built (Release, nothing else) into
#   build/gate-ab/<commit>. kairos-gate comes from CANDIDATE (else BASELINE, else KAIROS_GATE_EXE).
#   Options after the two are passed to kairos-gate (e.g. --inconclusive-exit 0, --markdown F).
# Environment:
#   KAIROS_GATE_AB_LAT     kairos-lat arguments    (default: -w W3 -s kairos-hybrid --quick --no-java --pin;
#                          pinned, W3's p50 spreads ~1% from run to run on a quiet 2-core VM, unpinned ~5-50%)
#   KAIROS_GATE_AB_ROUNDS  rounds, one pair each   (default: 10; about 2 s per round for the default)
#   KAIROS_GATE_AB_LIMIT   the judged figure       (default: p50=10%: the median paired ratio's 95%
#                          interval must lie wholly below 1.10x to pass, wholly above to fail)
#   KAIROS_GATE_AB_RECORD  file for the tagged runs (default: none; judge again with kairos-gate --ab)
# Exit: kairos-gate's: 0 pass, 1 regression, 2 bad input or a failed command or build,
# inconclusive 3 (or --inconclusive-exit).
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
baseline=$1 candidate=$2
shift 2

# A build directory as given, or a revision built into build/gate-ab/<commit>.
build_of() {
  local what=$1
  if [ -x "$what/tools/lat/kairos-lat" ]; then
    (cd "$what" && pwd)
    return
  fi
  local sha
  if ! sha=$(git -C "$repo" rev-parse --verify --quiet "$what^{commit}"); then
    echo "gate-ab: $what is neither a build directory with tools/lat/kairos-lat nor a git revision" >&2
    return 2
  fi
  local dir="$repo/build/gate-ab/$sha"
  if [ ! -x "$dir/build/tools/lat/kairos-lat" ] || [ ! -x "$dir/build/tools/gate/kairos-gate" ]; then
    echo "==== gate-ab: building kairos-lat and kairos-gate of $what ($sha) in $dir" >&2
    rm -rf "$dir/src"
    mkdir -p "$dir/src"
    git -C "$repo" archive "$sha" | tar -x -C "$dir/src"
    cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DKAIROS_BUILD_PERF=ON -DKAIROS_BUILD_TOOLS=ON \
          > "$dir/configure.log" 2>&1 || { tail -20 "$dir/configure.log" >&2; return 2; }
    cmake --build "$dir/build" -j"$(nproc)" --target kairos-lat kairos-gate \
          > "$dir/build.log" 2>&1 || { tail -40 "$dir/build.log" >&2; return 2; }
  fi
  echo "$dir/build"
}

base_dir=$(build_of "$baseline") || exit 2
cand_dir=$(build_of "$candidate") || exit 2
gate=${KAIROS_GATE_EXE:-}
for d in "$cand_dir" "$base_dir"; do
  if [ -z "$gate" ] && [ -x "$d/tools/gate/kairos-gate" ]; then gate="$d/tools/gate/kairos-gate"; fi
done
if [ -z "$gate" ]; then
  echo "gate-ab: no kairos-gate in $cand_dir or $base_dir (build it, or set KAIROS_GATE_EXE)" >&2
  exit 2
fi
lat_args=${KAIROS_GATE_AB_LAT:--w W3 -s kairos-hybrid --quick --no-java --pin}
rounds=${KAIROS_GATE_AB_ROUNDS:-10}
limit=${KAIROS_GATE_AB_LIMIT:-p50=10%}
record=()
if [ -n "${KAIROS_GATE_AB_RECORD:-}" ]; then record=(--record "$KAIROS_GATE_AB_RECORD"); fi
quote() { printf '%q' "$1"; }
echo "==== gate-ab: $rounds rounds of kairos-lat $lat_args, baseline $baseline, candidate $candidate, $limit"
exec "$gate" --baseline-cmd "$(quote "$base_dir/tools/lat/kairos-lat") $lat_args" \
             --candidate-cmd "$(quote "$cand_dir/tools/lat/kairos-lat") $lat_args" \
             --rounds "$rounds" --tolerance "$limit" "${record[@]}" "$@"
