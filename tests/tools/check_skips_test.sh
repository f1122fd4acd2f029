#!/usr/bin/env bash
# check_skips_test.sh <source dir> <scratch dir>: tools/check-skips.sh on made-up ctest logs:
#   - a test that skipped in both runs and passed in neither fails the check, named;
#   - one that skipped in one run and passed in the other does not (a load-dependent skip);
#   - a name that passes in one binary and skips in another (poll and thread modes) does not;
#   - one the expected list names (a glob) is reported with its reason, and does not fail it;
#   - a Disabled test is not a skip;
#   - with one run read, what skipped is named and the check does not fail.
set -euo pipefail
src=$1 scratch=$2
check=$src/tools/check-skips.sh
rm -rf "$scratch" && mkdir -p "$scratch"
line() {  # line <n> <name> <status...>
  printf '%3d/9 Test #%d: %s ...................................   %s   0.01 sec\n' "$1" "$1" "$2" "$3"
}
{ line 1 Alive.Always Passed
  line 2 Dead.AlwaysSkips '***Skipped'
  line 3 'Param/Dead.Too/Spin  # GetParam() = 32-byte object <01-00>' '***Skipped'
  line 4 Load.SkipsSometimes '***Skipped'
  line 5 Mode.OneBinaryOnly '***Skipped'
  line 6 Mode.OneBinaryOnly Passed
  line 7 Asio.NeedsNewBoost '***Skipped'
  line 8 Table.Disabled '***Not Run (Disabled)'
} > "$scratch/release.log"
{ line 1 Alive.Always Passed
  line 2 Dead.AlwaysSkips '***Skipped'
  line 3 'Param/Dead.Too/Spin  # GetParam() = 32-byte object <01-00>' '***Skipped'
  line 4 Load.SkipsSometimes Passed
  line 7 Asio.NeedsNewBoost '***Skipped'
} > "$scratch/tsan.log"
printf '# comment\nAsio.*   needs Boost 1.80  # trailing comment\n\n' > "$scratch/expected.txt"

fail() { echo "FAIL: $*"; echo "--- output:"; cat "$scratch/out"; exit 1; }
if bash "$check" "$scratch/expected.txt" "$scratch/release.log" "$scratch/tsan.log" > "$scratch/out" 2>&1; then
  fail "the check passed with two tests skipped in every run"
fi
grep -q 'PASSED IN NONE: Dead.AlwaysSkips$' "$scratch/out" || fail "Dead.AlwaysSkips not named"
grep -q 'PASSED IN NONE: Param/Dead.Too/Spin$' "$scratch/out" || fail "a parameterized name not named whole"
grep -q '2 test(s) skipped in every ctest run' "$scratch/out" || fail "not two unexpected skips"
grep -q 'as expected: Asio.NeedsNewBoost (needs Boost 1.80)' "$scratch/out" || fail "the expected skip's reason not given"
for alive in Alive.Always Load.SkipsSometimes Mode.OneBinaryOnly Table.Disabled; do
  if grep -q "$alive" "$scratch/out"; then fail "$alive reported"; fi
done

# Passing in one run is enough: with the load-dependent skip's passing run alone, and the dead
# tests named in the list, the check passes.
printf 'Asio.*  needs Boost 1.80\nDead.*  dead on purpose\nParam/Dead.*  dead too\n' > "$scratch/expected.txt"
bash "$check" "$scratch/expected.txt" "$scratch/release.log" "$scratch/tsan.log" > "$scratch/out" 2>&1 ||
  fail "the check failed with every never-passing test in the list"
grep -q 'but those expected (2 run(s) read)' "$scratch/out" || fail "no summary line"

# One run alone cannot tell a dead test from a load-dependent skip: Load.SkipsSometimes (skipped
# in the only run read) is named, and the check does not fail.
bash "$check" "$scratch/expected.txt" "$scratch/release.log" > "$scratch/out" 2>&1 ||
  fail "the check failed on one run"
grep -q 'PASSED IN NONE: Load.SkipsSometimes$' "$scratch/out" || fail "Load.SkipsSometimes not named"
grep -q 'skipped in the only ctest run read' "$scratch/out" || fail "one run's skips not said"
echo "check-skips.sh: all cases as expected"
