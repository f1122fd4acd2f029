#!/usr/bin/env bash
# exit_codes_test.sh <kairos-lat> <scratch dir> <version>: the exit status of kairos-lat for each
# kind of outcome a CI script has to tell apart.
set -uo pipefail
lat=$1 scratch=$2 version=$3
rm -rf "$scratch" && mkdir -p "$scratch"
fail=0
expect() {  # expect <status> <what> <command...>
  local want=$1 what=$2; shift 2
  "$@" > "$scratch/out" 2> "$scratch/err"
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want"; sed 's/^/  | /' "$scratch/err" | tail -5; fail=1
  else
    echo "ok:   $what: exit $got"
  fi
}
expect 0 "--version" "$lat" --version
grep -q "^kairos-lat $version (commit " "$scratch/out" || { echo "FAIL: --version printed: $(cat "$scratch/out")"; fail=1; }
expect 0 "--help" "$lat" --help
expect 2 "an unknown option" "$lat" --no-such-option
expect 2 "a missing option value" "$lat" --w3-count
expect 2 "--w3-count 0" "$lat" -w W3 --w3-count 0
expect 2 "--w3-count -5" "$lat" -w W3 --w3-count -5
expect 2 "--w4-seconds 0" "$lat" -w W4 --w4-seconds 0
expect 2 "--shards 0" "$lat" -w W3 --shards 0
expect 2 "--threads 0" "$lat" -w W3 --threads 0
expect 2 "--repeat 0" "$lat" -w W3 --repeat 0
expect 2 "--adaptive-percentile 1" "$lat" -w W3 --adaptive-percentile 1
expect 2 "--adaptive-percentile 0" "$lat" -w W3 --adaptive-percentile 0
expect 2 "an unknown workload" "$lat" -w W42
expect 2 "an unknown system" "$lat" -w W3 -s no-such-scheduler
printf 'this is not JSON\n{"half": \n' > "$scratch/garbage.jsonl"
expect 2 "--from a file of garbage" "$lat" --from "$scratch/garbage.jsonl"
grep -q "garbage.jsonl:1" "$scratch/err" || { echo "FAIL: the error does not name the bad line"; fail=1; }
echo '{"some": "object"}' > "$scratch/foreign.jsonl"
expect 2 "--from JSON that is not a kairos-lat record" "$lat" --from "$scratch/foreign.jsonl"
: > "$scratch/empty.jsonl"
expect 2 "--from an empty file" "$lat" --from "$scratch/empty.jsonl"
expect 2 "--from a file that does not exist" "$lat" --from "$scratch/none.jsonl"

# A run that fails: W5 needs far more memory than the address-space limit leaves its child.
expect 1 "a failed run (W5 out of memory)" \
  bash -c "ulimit -v 400000; exec '$lat' --no-java -w W5 -s kairos-sleep --w5-timers 50000000"
grep -q "failed" "$scratch/err" || { echo "FAIL: no line says the run failed"; fail=1; }

# A run that works: every record carries its provenance, and --from reads it back.
expect 0 "a small run" "$lat" --no-java -w W7 -s naive-stpe --w7-tasks 1000 --out "$scratch/good.jsonl"
for key in '"date"' '"kairos"' '"version"' '"commit"' '"compiler"' '"build_type"' '"machine"'; do
  grep -q "$key" "$scratch/good.jsonl" || { echo "FAIL: the record has no $key"; fail=1; }
done
expect 0 "--from its own output" "$lat" --from "$scratch/good.jsonl"
exit $fail
