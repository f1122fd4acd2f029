#!/usr/bin/env bash
# The runs behind PERF.md's "Restamp and the transfer budget" round (issue 29): kairos-lat and
# kairos_submit_driver built at three trees, RelWithDebInfo, g++ 12:
#   new    = this round's tip; old = 3787b0e (the round's start); noruns = the tip with the
#   measurement-only -DKAIROS_NO_SORTED_RUNS=ON (every task in the heap).
# Usage: run.sh quiet|busy   (busy: the caller runs `( while :; do :; done ) &` first)
set -u
NEW=${NEW:-/tmp/lat-new/build-tools}
OLD=${OLD:-/tmp/lat-old/build-tools}
NORUNS=${NORUNS:-/tmp/lat-noruns/build-tools}
regime=$1
{ date -u; uptime; ps aux --sort=-%cpu | head -8; } > env-$regime-before.txt
"$NEW/tools/lat/kairos-lat" -w W1,W2,W2b,W6,W7 -s kairos-fitted,naive-stpe --warm-and-fresh --repeat 3 --out "main-$regime.jsonl" > /dev/null 2>> log-$regime.txt
"$NEW/tools/lat/kairos-lat" --quick -w W4 -s kairos-fitted --warm-and-fresh --repeat 3 --out "w4-$regime.jsonl" > /dev/null 2>> log-$regime.txt
if [ "$regime" = quiet ]; then
  "$OLD/tools/lat/kairos-lat" -w W1,W2 -s kairos-fitted --warm-and-fresh --repeat 3 --out "old-$regime.jsonl" > /dev/null 2>> log-$regime.txt
  "$NORUNS/tools/lat/kairos-lat" -w W2,W2b,W7 -s kairos-fitted --warm-and-fresh --repeat 3 --out "noruns-$regime.jsonl" > /dev/null 2>> log-$regime.txt
  "$NEW/tools/lat/kairos-lat" -w W2,W2b,W7 -s kairos-fitted --warm-and-fresh --repeat 3 --out "runs-$regime.jsonl" > /dev/null 2>> log-$regime.txt
  "$NEW/tools/lat/kairos-lat" -w W5 -s kairos-fitted,naive-stpe --w5-timers 1000000 --out "w5-$regime.jsonl" > /dev/null 2>> log-$regime.txt
  for b in new old; do
    d=$NEW; [ $b = old ] && d=$OLD
    for r in 1 2 3; do
      echo "$b two-cpus: $("$d/perf/micro/kairos_submit_driver" 2000000 cancel1024 | head -1)" >> transfer-$regime.txt
      echo "$b one-cpu:  $(taskset -c 0 "$d/perf/micro/kairos_submit_driver" 2000000 cancel1024 | head -1)" >> transfer-$regime.txt
    done
  done
  "$NEW/perf/micro/kairos_micro" --benchmark_filter=Sched_RestampPass > restamp-pass-$regime.txt 2>&1
fi
{ date -u; uptime; ps aux --sort=-%cpu | head -8; } > env-$regime-after.txt
