#!/usr/bin/env bash
# Builds kairos-lat (in build/release, at -O2: the build PERF.md measures) and runs the latency
# demo: W3 (one-shot lateness) and W1 (submit cost) for kairos in hybrid mode beside naive-stpe, a
# mutex+heap+condition-variable scheduler built the way Java's ScheduledThreadPoolExecutor is,
# and beside Java's own class (java-stpe-1) when a JDK is present. About a minute; prints a table and the paths of three SVG charts in
# build/demo/out: W3 lateness by system (w3_lateness.svg) and the percentile spectrum of each
# workload (w3_spectrum.svg, w1_spectrum.svg: log axis on 1/(1-p)).
#   bash tools/run-demo.sh            the demo
#   bash tools/run-demo.sh --quick    the same, small sizes (a few seconds; what CI runs)
# Other arguments go to kairos-lat. KAIROS_WITH_JAVA=0 leaves Java out.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
# kairos-lat from build/release, configured as tools/run-tests.sh configures it (build-config.sh):
# running the tests afterwards compiles none of it again.
source tools/build-config.sh
dir=$release_dir
configure_build "$dir" "$release_opt" "${release_args[@]}"
echo "==== kairos: building kairos-lat ($dir)"
cmake --build "$dir" -j"$(nproc)" --target kairos-lat > "$dir/demo-build.log" 2>&1 ||
  { tail -50 "$dir/demo-build.log"; exit 1; }
systems=kairos-hybrid,naive-stpe
if [ "${KAIROS_WITH_JAVA:-1}" != 1 ]; then
  echo "kairos-lat: java-stpe-1 skipped: KAIROS_WITH_JAVA=0"
elif ! command -v javac > /dev/null 2>&1; then
  echo "kairos-lat: java-stpe-1 skipped: no javac on PATH (apt-get install default-jdk-headless)"
else
  systems+=,java-stpe-1  # kairos-lat prints one line itself if it cannot compile the harness
fi
out=build/demo/out
mkdir -p "$out"
"$dir/tools/lat/kairos-lat" --demo -s "$systems" --svg "$out" --out "$out/demo.jsonl" "$@" 2>&1
