#!/usr/bin/env bash
# check_warnings.sh <source dir> <scratch dir> <compiler>...: what a user who builds with
# -Wall -Wextra -Wpedantic -Wshadow -Werror includes or copies must compile under each given
# compiler (the headers: each alone under the first, all in one file under the others):
#   - every installed public header on its own (core/kairos/**/*.hpp, detail/ too,
#     policies/kairos/*.hpp and the latency kit's latency/kairos/*.hpp), as the first include
#     of a file; asio/kairos/asio.hpp too, under each compiler that finds Boost.Asio's headers
#     (skipped with a message under one that does not: Boost is that header's users' dependency),
#     and the metrics component's metrics/kairos/metrics.hpp under each that finds
#     prometheus-cpp's (the component is left out of a build without them). The one check that
#     each header compiles alone (a CMake target compiled them all again with the build's flags);
#   - every ```cpp block of README.md, extracted here, so the README cannot drift from it: a block
#     with a main() is compiled as it stands; any other is a fragment, compiled as the body of a
#     function after <kairos/kairos.hpp> and the kit's <kairos/pacer.hpp>, with the names the README leaves to the reader
#     (send_one_order) declared;
#   - designated_options.cpp: Options built with designated initializers naming a few fields
#     (g++ warns -Wmissing-field-initializers for every member left without a default member
#     initializer).
# A compiler given as "-" or that is not installed is skipped with a message (clang is optional).
set -euo pipefail
src=$1 scratch=$2; shift 2
flags=(-std=c++20 -Wall -Wextra -Wpedantic -Wshadow -Werror -fsyntax-only -I"$src/core" -I"$src/policies"
       -I"$src/latency" -I"$src/asio" -I"$src/metrics")
rm -rf "$scratch" && mkdir -p "$scratch/headers" "$scratch/readme"

# One translation unit per header: header_units <prefix> <root>... writes one file per header of
# each root's kairos/ and prints its path.
header_units() {
  local prefix=$1 root; shift
  for root in "$@"; do
    (cd "$src/$root" && find kairos -name '*.hpp' | sort) | while IFS= read -r h; do
      local name; name=$(echo "$h" | tr '/' '_')
      printf '#include <%s>\n' "$h" > "$scratch/headers/$prefix${name%.hpp}.cpp"
      echo "$scratch/headers/$prefix${name%.hpp}.cpp"
    done
  done
}
mapfile -t header_units < <(header_units "" core policies latency)
# kairos/asio.hpp and kairos/metrics.hpp: compiled only where Boost.Asio's and prometheus-cpp's
# headers are found (below).
mapfile -t asio_units < <(header_units asio_ asio)
mapfile -t metrics_units < <(header_units metrics_ metrics)

# One per README block.
awk -v dir="$scratch/readme" '
  /^```cpp[[:space:]]*$/ { n++; file = sprintf("%s/block%d.txt", dir, n); inside = 1; next }
  /^```/                 { if (inside) close(file); inside = 0; next }
  inside                 { print > file }' "$src/README.md"
units=()
blocks=0
for b in "$scratch"/readme/block*.txt; do
  [ -e "$b" ] || continue
  blocks=$((blocks + 1))
  out=${b%.txt}.cpp
  if grep -E '\bint main\(' "$b" > /dev/null; then
    cp "$b" "$out"
  else
    { echo '#include <kairos/kairos.hpp>'
      echo '#include <kairos/pacer.hpp>'
      echo '#include <chrono>'
      echo '#include <cstdio>'
      echo 'void send_one_order();'
      echo "void readme_$(basename "${b%.txt}")() {"
      cat "$b"
      echo '}'; } > "$out"
  fi
  units+=("$out")
done
[ "$blocks" -ge 2 ] || { echo "found $blocks cpp blocks in README.md (expected the quick start and the Pacer's)"; exit 1; }
units+=("$(dirname "$0")/designated_options.cpp")

# The first compiler compiles each header alone (that each is self-contained: the same standard
# library headers under both, libstdc++); the others look for their own warnings in one file
# that includes every header, a second pass of 40-odd files costing them ~1 s each. The README
# blocks and designated_options.cpp go through every compiler one by one.
compilers=0 fail=0
for cxx in "$@"; do
  if [ "$cxx" = - ] || ! command -v "$cxx" > /dev/null 2>&1; then
    echo "skipped: compiler '$cxx' is not installed"; continue
  fi
  compilers=$((compilers + 1))
  headers=("${header_units[@]}")
  if printf '#include <boost/asio/version.hpp>\n' | "$cxx" -std=c++20 -fsyntax-only -x c++ - > /dev/null 2>&1; then
    headers+=("${asio_units[@]}")
  else
    echo "$cxx: no Boost.Asio headers: kairos/asio.hpp skipped"
  fi
  if printf '#include <prometheus/collectable.h>\n' | "$cxx" -std=c++20 -fsyntax-only -x c++ - > /dev/null 2>&1; then
    headers+=("${metrics_units[@]}")
  else
    echo "$cxx: no prometheus-cpp headers: kairos/metrics.hpp skipped"
  fi
  if [ "$compilers" = 1 ]; then
    these=("${headers[@]}" "${units[@]}")
    how="each header alone"
  else
    cat "${headers[@]}" > "$scratch/headers/all_$compilers.cpp"
    these=("$scratch/headers/all_$compilers.cpp" "${units[@]}")
    how="the ${#headers[@]} headers in one file"
  fi
  for u in "${these[@]}"; do
    if ! "$cxx" "${flags[@]}" "$u" > "$scratch/log" 2>&1; then
      echo "== $cxx ${flags[*]} $u"; cat "$scratch/log"; fail=1
    fi
  done
  echo "$cxx: $how, $blocks README blocks and designated_options.cpp compiled with ${flags[*]:0:6}"
done
[ "$compilers" -ge 1 ] || { echo "no compiler ran"; exit 1; }
exit $fail
