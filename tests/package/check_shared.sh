#!/usr/bin/env bash
# check_shared.sh <source dir> <build dir> <scratch dir> <c++ compiler> <version> <soversion>:
# installs the shared libkairos and the latency kit's libkairos-latency of the package build
# (build_shared.sh: shared, Release) into a scratch prefix, then checks their
# file names, libkairos's SONAME, that every symbol libkairos exports is in namespace kairos and
# every one of libkairos-latency in kairos::hdr, and that consumers link and run against them
# (the kit's without naming zlib: the library carries its own NEEDED libz), and that a plugin
# linked against libkairos.so loads by dlopen() where no static TLS is left.
set -euo pipefail
src=$1 build=$2 scratch=$3 cxx=$4 version=$5 soversion=$6
rm -rf "$scratch" && mkdir -p "$scratch"
[ -f "$build/cmake_install.cmake" ] || { echo "no build in $build (build_shared.sh makes it)"; exit 1; }
# The components runtime, dev and license: what this test's own build (tools and metrics off) used
# to install. Not the metrics component: its header would widen the set of installed headers that
# every exported name is looked up in below.
for component in runtime dev license; do
  cmake --install "$build" --prefix "$scratch/prefix" --component "$component" > /dev/null
done
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
kit=$(find "$scratch/prefix" -name "libkairos-latency.so.$version")
[ -n "$kit" ] && [ -L "${kit%.$version}.$soversion" ] || { echo "no libkairos-latency.so.$version and SONAME link"; exit 1; }
nm -DC --defined-only "$kit" | awk '$2 != "A" {$1 = ""; $2 = ""; sub(/^  /, ""); print}' | sed 's/@@.*//' > "$scratch/kit-exports"
echo "exported symbols of the kit: $(wc -l < "$scratch/kit-exports")"
if grep -v -E '^((typeinfo|typeinfo name|vtable) for )?kairos::hdr::' "$scratch/kit-exports"; then
  echo "exported from libkairos-latency outside namespace kairos::hdr (above)"; fail=1
fi
objdump -p "$kit" | grep -E 'NEEDED +libz[.]so' > /dev/null || { echo "libkairos-latency does not link zlib"; fail=1; }
[ $fail = 0 ] || exit 1
# Every call of the public API links against the shared library: the API check with its inline
# functions kept, plus the consumer program.
mkdir -p "$scratch/consumer"
"$cxx" -std=c++20 -pthread -fkeep-inline-functions -I"$scratch/prefix/include" -c "$src/tests/api/api_check.cpp" \
       -o "$scratch/consumer/api_check.o"
# (api_check covers the latency kit too: its inline code calls into libkairos-latency.)
"$cxx" -std=c++20 -pthread -I"$scratch/prefix/include" "$src/tests/install/consumer/main.cpp" \
       "$scratch/consumer/api_check.o" -o "$scratch/consumer/consumer" \
       -L"$(dirname "$lib")" -lkairos-latency -lkairos -Wl,-rpath,"$(dirname "$lib")" -Wl,--no-undefined
ldd "$scratch/consumer/consumer" | grep "libkairos.so.$soversion" > /dev/null || { echo "consumer did not link the .so"; exit 1; }
"$scratch/consumer/consumer"
"$cxx" -std=c++20 -pthread -I"$scratch/prefix/include" "$src/tests/install/consumer/latency.cpp" \
       -o "$scratch/consumer/latency" -L"$(dirname "$lib")" -lkairos-latency -lkairos \
       -Wl,-rpath,"$(dirname "$lib")" -Wl,--no-undefined
"$scratch/consumer/latency"
# Loaded by dlopen() (a plugin, a JNI or Python extension) into a process with no static TLS to
# spare: libkairos.so must not need any (no STATIC_TLS flag, which an initial-exec thread_local
# sets for the library's whole TLS block), and a plugin linked against it loads and runs tasks
# from the main thread and from a thread that existed before the dlopen(). The tunables leave
# glibc no surplus of static TLS for dlopen()ed libraries.
if readelf -d "$lib" | grep -q STATIC_TLS; then
  echo "libkairos.so needs static TLS (an initial-exec thread_local?): dlopen() fails without spare"; exit 1
fi
"$cxx" -std=c++20 -pthread -fPIC -shared -I"$scratch/prefix/include" "$src/tests/package/dlopen/plugin.cpp" \
       -o "$scratch/consumer/libplugin.so" -L"$(dirname "$lib")" -lkairos -Wl,-rpath,"$(dirname "$lib")" \
       -Wl,--no-undefined
"$cxx" -std=c++20 -pthread "$src/tests/package/dlopen/host.cpp" -o "$scratch/consumer/dlopen_host" -ldl
GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0:glibc.rtld.nns=1 "$scratch/consumer/dlopen_host" "$scratch/consumer/libplugin.so"
