# fuzz_build.sh, sourced by tests/fuzz/run_fuzz.sh and tests/model/run_fuzz.sh: how both configure
# and build their libFuzzer targets, in one place (they differ only in the build directory, the
# tools option and the targets).
#   fuzz_clang                    prints clang++'s path, or fails with the packages to install
#   fuzz_build <root> <build dir> <clang++> <sanitizers> <tools ON|OFF> <target>...
# RelWithDebInfo at -O2 with line tables (-g1): a sanitizer report names file:line. Ninja when
# installed. KAIROS_SANITIZE applies to the whole build, the engine included, so a fault the
# fuzzer provokes inside kairos is reported where it happens.
fuzz_clang() {
  local cxx
  cxx="$(command -v clang++ || command -v clang++-14 || true)"
  if [[ -z "$cxx" ]]; then
    echo "$0: clang++ not found (apt-get install -y clang libclang-rt-14-dev)" >&2
    return 2
  fi
  echo "$cxx"
}

fuzz_build() {
  local root=$1 build=$2 cxx=$3 sanitize=$4 tools=$5; shift 5
  local generator=()
  command -v ninja > /dev/null && generator=(-G Ninja)
  cmake -S "$root" -B "$build" "${generator[@]}" \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    -DKAIROS_BUILD_PERF=OFF -DKAIROS_BUILD_TOOLS="$tools" -DKAIROS_SANITIZE="$sanitize" > /dev/null
  cmake --build "$build" --target "$@" -j2
}
