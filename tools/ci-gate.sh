#!/usr/bin/env bash
# The tail-latency gate CI runs.
# 1. Against a peer (always, ~10 s): a short W3 (one-shot lateness) for kairos-hybrid and
#    naive-stpe, alternating per repeat, then kairos-gate in reference mode on the paired ratios
#    (each kairos run over the naive-stpe run of the same repeat): the median paired ratio must
#    stay <= 0.25x for p50 and <= 5x for p99. Regression only when the 95% bootstrap interval of
#    the median ratio lies wholly beyond the limit.
# 2. Against a baseline build (when KAIROS_GATE_BASELINE names a build directory or a git
#    revision, e.g. origin/main; ~20 s plus, for a revision, a kairos-lat build of a few minutes):
#    tools/gate-ab.sh runs the baseline's and this build's kairos-lat alternately (ABBA), 10
#    rounds of W3 --quick --pin on kairos-hybrid, and fails when this build's p50 is surely more than
#    10% worse (the 95% interval of the median paired ratio wholly above 1.10x).
# An inconclusive verdict (too noisy to tell) exits 0 here with the verdict printed
# (KAIROS_GATE_INCONCLUSIVE_EXIT to change); a regression exits 1, bad input 2. Both gates run
# before the exit status is decided. Measured behaviour (10 invocations per build on a loaded
# 2-core machine) and its limits: docs/latency-tools.md.
# Usage: tools/ci-gate.sh <build dir with tools/>
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build/release}
lat="$build/tools/lat/kairos-lat"
gate="$build/tools/gate/kairos-gate"
out="$build/gate"
mkdir -p "$out"
rm -f "$out/w3.jsonl"
runs=${KAIROS_GATE_RUNS:-5}
p99_ratio=${KAIROS_GATE_P99_RATIO:-5x}
p50_ratio=${KAIROS_GATE_P50_RATIO:-0.25x}
inconclusive_exit=${KAIROS_GATE_INCONCLUSIVE_EXIT:-0}
echo "==== kairos: latency gate, W3 --quick x$runs: kairos-hybrid vs naive-stpe, paired by repeat"
if "$lat" -w W3 -s kairos-hybrid,naive-stpe --quick --no-java --repeat "$runs" --out "$out/w3.jsonl" > /dev/null; then
  "$gate" --current "$out/w3.jsonl" --reference naive-stpe --system kairos-hybrid --workload W3 \
          --max-ratio "p99=$p99_ratio" --max-ratio "p50=$p50_ratio" --min-runs "$runs" \
          --inconclusive-exit "$inconclusive_exit" --markdown "$out/gate.md"
  peer=$?
else
  echo "==== kairos: kairos-lat failed" >&2
  peer=2
fi
ab=0
if [ -n "${KAIROS_GATE_BASELINE:-}" ]; then
  echo "==== kairos: A/B latency gate, W3 --quick, baseline $KAIROS_GATE_BASELINE vs $build, alternating"
  KAIROS_GATE_AB_RECORD="$out/ab.jsonl" KAIROS_GATE_EXE="$gate" \
    bash "$here/gate-ab.sh" "$KAIROS_GATE_BASELINE" "$build" \
    --inconclusive-exit "$inconclusive_exit" --markdown "$out/gate-ab.md"
  ab=$?
fi
# The worse of the two: a regression (1) before bad input (2) before an inconclusive code.
for code in 1 2; do
  if [ "$peer" = $code ] || [ "$ab" = $code ]; then exit $code; fi
done
if [ "$peer" != 0 ]; then exit "$peer"; fi
exit "$ab"
