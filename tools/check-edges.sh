#!/usr/bin/env bash
# check-edges.sh [source dir]: the edge names of core/ and latency/ against their index in
# docs/design.md
# ("## Edges": | Edge | File | Operation | Partner |). Fails if
#   - an edge name used in core/ or latency/ is not in the index (a name is a registered prefix and a number,
#     XX<n>, or any parenthesised or bracketed (X1) / [X1] written in a comment the old way),
#   - the index lists a name twice, or
#   - a name in the index does not occur in the file the index gives for it.
set -euo pipefail
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
index=$src/docs/design.md
fail=0

rows=$(awk '/^## Edges/ {on = 1; next} /^## / {on = 0} on && /^\| [A-Z]+[0-9]+ \|/' "$index")
[ -n "$rows" ] || { echo "check-edges: no edge index in $index"; exit 1; }
names=$(echo "$rows" | awk -F'|' '{gsub(/ /, "", $2); print $2}')
dups=$(echo "$names" | sort | uniq -d)
[ -z "$dups" ] || { echo "check-edges: listed twice in the index: $dups"; fail=1; }
prefixes=$(echo "$names" | sed 's/[0-9]*$//' | sort -u | paste -sd'|')

# Every name in the index occurs in its file.
while IFS='|' read -r _ name file _; do
  name=${name// /}
  file=$(echo "$file" | tr -d ' `')
  [ -f "$src/$file" ] || { echo "check-edges: $name: no file $file"; fail=1; continue; }
  grep -qw -- "$name" "$src/$file" || { echo "check-edges: $name is not in $file"; fail=1; }
done <<< "$rows"

# Every name used in core/ and latency/ (comments included) is in the index.
dirs=("$src/core")
[ -d "$src/latency" ] && dirs+=("$src/latency")
used=$( (grep -rhoE "\b($prefixes)[0-9]+\b" "${dirs[@]}" || true
         grep -rhoE '//.*' "${dirs[@]}" | grep -oE '[([][A-Z]{1,3}[0-9]+[])]' | tr -d '()[]' |
           grep -vE '^W[0-9]+$' || true) | sort -u)  # W<n>: a workload (PERF.md), not an edge
for n in $used; do
  grep -qx -- "$n" <<< "$names" || {
    echo "check-edges: $n is used in core/ or latency/ but not in the index:"
    grep -rnw -- "$n" "${dirs[@]}" | head -3
    fail=1
  }
done

count=$(echo "$names" | wc -l)
[ $fail = 0 ] && echo "check-edges: $count edges, each indexed once and found where the index says"
exit $fail
