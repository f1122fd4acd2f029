#!/usr/bin/env bash
# build_shared.sh <source dir> <build dir> <c++ compiler> <tools ON|OFF>: the one shared build
# both package tests check (CTest fixture kairos_shared_build, tests/package/CMakeLists.txt):
# kairos configured the way a Debian package is built (shared libraries, Release, prefix /usr so
# GNUInstallDirs picks the multiarch lib/<triplet>; cmake/KairosPackage.cmake), tests, perf and
# examples off (the examples install nothing, and the normal build builds and runs them), the
# tools as the enclosing build has them (the package holds them; the exports check needs none).
# check_deb.sh packages it with cpack; check_shared.sh installs its runtime and dev components
# into a scratch prefix. Each test once configured and built a tree of its own (229 s and 94 s
# of the release ctest on the 2-core CI host, the engine compiled twice); now the build is
# 192 s, then the package checks 13 s and the exports checks 26 s (idle 2-core host). The
# libraries are the same as those check_shared.sh built (identical compile and link lines:
# neither the tools, nor the metrics component, nor the /usr prefix changes them). At -O1, not
# Release's -O3: the checks read the packages' contents, links, exports and TLS, and run the tools
# for --help and --version, none of which the optimisation level changes; the tools' workload
# code compiles in about 0.6 of the time (275 s of the release ctest at -O3, on the CI host
# under the other tests' load).
set -euo pipefail
src=$1 build=$2 cxx=$3 tools=$4
rm -rf "$build" && mkdir -p "$build"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
      -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX=/usr \
      -DCMAKE_CXX_COMPILER="$cxx" -DKAIROS_BUILD_TESTS=OFF -DKAIROS_BUILD_PERF=OFF -DKAIROS_BUILD_TOOLS="$tools" \
      -DKAIROS_BUILD_EXAMPLES=OFF > "$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j2 > "$build/build.log" 2>&1 || { tail -50 "$build/build.log"; exit 1; }
echo "built $build"
