#!/usr/bin/env bash
# Builds kairos (Release) and runs the latency demo: W3 (one-shot lateness) and W1 (submit cost)
# for kairos in hybrid mode beside naive-stpe, a mutex+heap+condition-variable scheduler built
# the way Java's ScheduledThreadPoolExecutor is. About a minute; prints a table and an SVG path.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
dir=build/demo
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DKAIROS_BUILD_TESTS=OFF -DKAIROS_BUILD_PERF=ON \
      -DKAIROS_BUILD_TOOLS=ON > "$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
cmake --build "$dir" -j"$(nproc)" --target kairos-lat
mkdir -p "$dir/out"
"$dir/tools/lat/kairos-lat" --demo --svg "$dir/out" "$@"
