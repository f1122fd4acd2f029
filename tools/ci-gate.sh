#!/usr/bin/env bash
# The tail-latency gate CI runs: a short W3 (one-shot lateness) for kairos-hybrid and naive-stpe,
# alternating per repeat, then kairos-gate in reference mode on the paired ratios (each kairos run
# over the naive-stpe run of the same repeat): the median paired ratio must stay <= 0.25x for p50
# and <= 5x for p99. Regression only when the 95% bootstrap interval of the median ratio lies
# wholly beyond the limit; an inconclusive verdict (too noisy to tell) exits 0 here with the
# verdict printed (KAIROS_GATE_INCONCLUSIVE_EXIT to change). Measured behaviour (10 invocations per
# build on a loaded 2-core machine) and its limits: docs/latency-tools.md.
# Usage: tools/ci-gate.sh <build dir with tools/>
set -euo pipefail
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
"$lat" -w W3 -s kairos-hybrid,naive-stpe --quick --no-java --repeat "$runs" --out "$out/w3.jsonl" > /dev/null
"$gate" --current "$out/w3.jsonl" --reference naive-stpe --system kairos-hybrid --workload W3 \
        --max-ratio "p99=$p99_ratio" --max-ratio "p50=$p50_ratio" --min-runs "$runs" \
        --inconclusive-exit "$inconclusive_exit" --markdown "$out/gate.md"
