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
nm -DC --defined-only "$lib" | awk '$2 != "A" {$1 = ""; $2 = ""; sub(/^  /, ""); print}' > "$scratch/exports"
echo "exported symbols: $(wc -l < "$scratch/exports")"
if grep -v -E '^((typeinfo|typeinfo name|vtable|VTT) for )?kairos::' "$scratch/exports"; then
  echo "exported from libkairos outside namespace kairos (above)"; exit 1
fi
mkdir -p "$scratch/consumer"
"$cxx" -std=c++20 -pthread -I"$scratch/prefix/include" "$src/tests/install/consumer/main.cpp" \
       -o "$scratch/consumer/consumer" -L"$(dirname "$lib")" -lkairos -Wl,-rpath,"$(dirname "$lib")"
ldd "$scratch/consumer/consumer" | grep -q "libkairos.so.$soversion" || { echo "consumer did not link the .so"; exit 1; }
"$scratch/consumer/consumer"
