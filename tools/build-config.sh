# build-config.sh, sourced by tools/run-demo.sh and tools/run-tests.sh: how both README commands
# configure a build directory, and the one configuration of build/release they share. The demo
# builds its kairos-lat in build/release and the tests build everything there, so running both
# (a newcomer's first hour, or CI) compiles the engine and the tools once: the demo had a Release
# tree of its own, ~90 s of CI's 2-core host compiled twice. RelWithDebInfo at -O2 with line
# tables only (-g1): the code users run, file:line in every backtrace (run-tests.sh says why
# -g1), and the build PERF.md's figures come from, so the demo's come from it too.
release_dir=build/release
release_opt=-O2
release_args=(-DKAIROS_BUILD_PERF=ON -DKAIROS_BUILD_TOOLS=ON)

configure_build() {  # configure_build <build dir> <optimisation> <cmake args...>
  local dir=$1 opt=$2; shift 2
  mkdir -p "$dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$opt -g1 -DNDEBUG" "$@" \
    > "$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
}
