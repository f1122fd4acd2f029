#!/usr/bin/env bash
# The runs behind PERF.md's "Reliability v4 / ecosystem v3 round" (kairos-lat built at three commits):
#   old = d1e2653 (this round's start), new = 411b15d, tsc-off = 3f0755b with KAIROS_SUBMIT_CLOCK_GETTIME=ON
# (3f0755b differs from 411b15d only by that measurement-only switch). Builds: RelWithDebInfo, g++ 12.
set -u
OLD=/tmp/old/build-tools/tools/lat/kairos-lat
NEW=/tmp/headwt/build-tools/tools/lat/kairos-lat
AB=/tmp/abwt/build-tools/tools/lat/kairos-lat
regime=$1   # quiet | busy
rounds=${2:-2}
{ date -u; uptime; ps aux --sort=-%cpu | head -8; } > env-$regime-before.txt
for r in $(seq 1 "$rounds"); do
  for b in old new tsc-off; do
    case $b in old) bin=$OLD;; new) bin=$NEW;; tsc-off) bin=$AB;; esac
    "$bin" -w W1,W2 -s kairos-hybrid,naive-stpe --warm-and-fresh --repeat 3 --out "w1w2-$regime-$b-r$r.jsonl" > /dev/null 2>> log-$regime.txt
  done
done
"$NEW" --quick -w W4 -s kairos-fitted,kairos-hybrid --warm-and-fresh --repeat 3 --out "w4-$regime.jsonl" > /dev/null 2>> log-$regime.txt
"$NEW" --quick -w W9 -s kairos-loop,kairos-loop-nowake,asio --repeat 3 --out "w9-$regime.jsonl" > /dev/null 2>> log-$regime.txt
"$OLD" --quick -w W9 -s kairos-loop --repeat 3 --out "w9-$regime-old.jsonl" > /dev/null 2>> log-$regime.txt
{ date -u; uptime; ps aux --sort=-%cpu | head -8; } > env-$regime-after.txt
