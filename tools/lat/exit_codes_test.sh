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
# Hostile records: too deep to parse safely, a field the report reads missing or mistyped.
{ printf '{"workload":"W3","system":"s","parameters":{},"x":'; head -c 200000 /dev/zero | tr '\0' '['
  head -c 200000 /dev/zero | tr '\0' ']'; echo '}'; } > "$scratch/deep.jsonl"
expect 2 "--from a record nested 200,000 levels deep" "$lat" --from "$scratch/deep.jsonl"
grep -q "nested deeper than" "$scratch/err" || { echo "FAIL: the error does not say why"; fail=1; }
echo '{"workload":"W3","system":"kairos-sleep","p50_ns":5}' > "$scratch/no-parameters.jsonl"
expect 2 "--from a record without parameters" "$lat" --from "$scratch/no-parameters.jsonl" --svg "$scratch/svg"
echo '{"workload":"W3","system":"kairos-sleep","parameters":{},"config":{"shards":"two"}}' > "$scratch/mistyped.jsonl"
expect 2 "--from a record with a mistyped config" "$lat" --from "$scratch/mistyped.jsonl"
grep -q 'config "shards" must be' "$scratch/err" || { echo "FAIL: the error does not name the field"; fail=1; }
# Output that cannot be written is exit 2, found before anything runs.
: > "$scratch/a-file"
expect 2 "--svg into a path under a file" "$lat" -w W7 -s naive-stpe --w7-tasks 100 --svg "$scratch/a-file/svg"
grep -q "cannot write" "$scratch/err" || { echo "FAIL: the error does not say the directory is unwritable"; fail=1; }
# A count of 0 names its rule, not CLI11's 310-digit range.
expect 2 "--w3-count 0 (readable)" "$lat" -w W3 --w3-count 0
grep -q "must be greater than 0, got 0" "$scratch/err" && [ "$(wc -c < "$scratch/err")" -lt 200 ] ||
  { echo "FAIL: --w3-count 0 printed: $(cat "$scratch/err")"; fail=1; }
# --w8-lazy only changes the Java peers' W8.
expect 2 "--w8-lazy with --no-java" "$lat" --w8-lazy --no-java -w W8 -s kairos-hybrid
expect 2 "--w8-lazy without W8" "$lat" --w8-lazy -w W3 -s java-stpe-1

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
