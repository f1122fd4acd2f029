#!/usr/bin/env bash
# check_shared.sh <source dir> <scratch dir> <c++ compiler> <version> <soversion>: configures and
# builds libkairos as a shared library, then checks its file names, its SONAME, that every symbol
# it exports is in namespace kairos, and that a consumer links and runs against it.
set -euo pipefail
src=$1 scratch=$2 cxx=$3 version=$4 soversion=$5
rm -rf "$scratch" && mkdir -p "$scratch"
cmake -S "$src" -B "$scratch/build" -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_COMPILER="$cxx" -DKAIROS_BUILD_TESTS=OFF -DKAIROS_BUILD_PERF=OFF \
      -DKAIROS_BUILD_TOOLS=OFF > "$scratch/configure.log" 2>&1 || { cat "$scratch/configure.log"; exit 1; }
cmake --build "$scratch/build" -j2 --target kairos > "$scratch/build.log" 2>&1 || { cat "$scratch/build.log"; exit 1; }
cmake --install "$scratch/build" --prefix "$scratch/prefix" > /dev/null
lib=$(find "$scratch/prefix" -name "libkairos.so.$version")
[ -n "$lib" ] || { echo "no libkairos.so.$version installed"; exit 1; }
[ -L "${lib%.$version}.$soversion" ] && [ -L "${lib%.$version}" ] || { echo "missing SOVERSION or dev links"; exit 1; }
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = "libkairos.so.$soversion" ] || { echo "SONAME is '$soname', not libkairos.so.$soversion"; exit 1; }
nm -DC --defined-only "$lib" | awk '$2 != "A" {$1 = ""; $2 = ""; sub(/^  /, ""); print}' | sed 's/@@.*//' > "$scratch/exports"
echo "exported symbols: $(wc -l < "$scratch/exports")"
fail=0
if grep -v -E '^((typeinfo|typeinfo name|vtable|VTT) for )?kairos::' "$scratch/exports"; then
  echo "exported from libkairos outside namespace kairos (above)"; fail=1
fi
# Internals stay hidden: every exported name (the class or function right below kairos:: or
# kairos::detail::) is declared in an installed header.
while IFS= read -r sym; do
  name=$(echo "$sym" | sed -E 's/^(typeinfo name|typeinfo|vtable|VTT) for //; s/\(.*//; s/^kairos::(detail::)?//; s/::.*//; s/<.*//')
  grep -rqw -- "$name" "$scratch/prefix/include/kairos" || { echo "exported but in no installed header: $sym"; fail=1; }
done < "$scratch/exports"
[ $fail = 0 ] || exit 1
# Every call of the public API links against the shared library: the API check with its inline
# functions kept, plus the consumer program.
mkdir -p "$scratch/consumer"
"$cxx" -std=c++20 -pthread -fkeep-inline-functions -I"$scratch/prefix/include" -c "$src/tests/api/api_check.cpp" \
       -o "$scratch/consumer/api_check.o"
"$cxx" -std=c++20 -pthread -I"$scratch/prefix/include" "$src/tests/install/consumer/main.cpp" \
       "$scratch/consumer/api_check.o" -o "$scratch/consumer/consumer" \
       -L"$(dirname "$lib")" -lkairos -Wl,-rpath,"$(dirname "$lib")" -Wl,--no-undefined
ldd "$scratch/consumer/consumer" | grep "libkairos.so.$soversion" > /dev/null || { echo "consumer did not link the .so"; exit 1; }
"$scratch/consumer/consumer"
