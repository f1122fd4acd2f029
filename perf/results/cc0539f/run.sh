#!/usr/bin/env bash
# The runs behind PERF.md's "Engine v4: the one-CAS cancel" round (issue 29): kairos-lat and
# kairos_submit_driver built at two trees, RelWithDebInfo, g++ 12:
#   new = this round's tip; old = 04816c8 (the round's start).
# Usage: run.sh quiet|busy   (busy: the caller runs `( while :; do :; done ) &` first, and kills it)
set -u
NEW=${NEW:-/tmp/lat-new/build-tools}
OLD=${OLD:-/tmp/lat-old/build-tools}
regime=$1
{ date -u; uptime; ps aux --sort=-%cpu | head -8; } > env-$regime-before.txt
"$NEW/tools/lat/kairos-lat" -w W1,W2,W2b,W6,W7 -s kairos-fitted,naive-stpe --warm-and-fresh --repeat 3 --out "main-$regime.jsonl" > /dev/null 2>> log-$regime.txt
"$OLD/tools/lat/kairos-lat" -w W1,W2,W2b -s kairos-fitted --warm-and-fresh --repeat 3 --out "old-$regime.jsonl" > /dev/null 2>> log-$regime.txt
"$NEW/tools/lat/kairos-lat" --quick -w W4 -s kairos-fitted --warm-and-fresh --repeat 3 --out "w4-$regime.jsonl" > /dev/null 2>> log-$regime.txt
for b in new old; do
  d=$NEW; [ $b = old ] && d=$OLD
  for r in 1 2 3; do
    echo "$b two-cpus: $("$d/perf/micro/kairos_submit_driver" 2000000 cancel1024 | head -1)" >> transfer-$regime.txt
    echo "$b one-cpu:  $(taskset -c 0 "$d/perf/micro/kairos_submit_driver" 2000000 cancel1024 | head -1)" >> transfer-$regime.txt
  done
done
if [ "$regime" = quiet ]; then
  "$NEW/tools/lat/kairos-lat" -w W5 -s kairos-fitted,naive-stpe --w5-timers 1000000 --out "w5-$regime.jsonl" > /dev/null 2>> log-$regime.txt
fi
{ date -u; uptime; ps aux --sort=-%cpu | head -8; } > env-$regime-after.txt
