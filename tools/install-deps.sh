#!/usr/bin/env bash
# Installs the Debian packages kairos builds with, if any is missing (Debian 12, as root or with
# sudo). KAIROS_WITH_JAVA=0 leaves out the Java peers' packages (a JDK, Netty, HdrHistogram).
set -euo pipefail
# lintian and file: the Debian package check (tests/package/check_deb.sh; CPack reads sonames with file).
# clang and its runtime: the public headers compiled with clang++ -Werror (public_headers_werror)
# and the libFuzzer targets CI runs (tests/fuzz, tests/model).
# valgrind, python3, binutils: the path budget's exact counts (tools/count-locked-rmw.py, CTest
# PathBudget.*).
# prometheus-cpp-dev: the optional metrics component (metrics/, kairos::metrics) and its test
# (tests/metrics: a scrape through prometheus-cpp's Exposer); without it the component is left out.
pkgs=(cmake g++ make git pkgconf libconcurrentqueue-dev libgtest-dev libbenchmark-dev libboost-dev
      nlohmann-json3-dev libcli11-dev zlib1g-dev lintian file clang libclang-rt-14-dev prometheus-cpp-dev
      valgrind python3 binutils)
if [ "${KAIROS_WITH_JAVA:-1}" = 1 ]; then
  # The Java peers (java-stpe-1, java-stpe-2, netty-wheel) need javac; the default JDK is enough.
  pkgs+=(default-jdk-headless libnetty-java libhdrhistogram-java)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" > /dev/null || missing+=("$p")
done
# A JDK installed some other way (not the default-jdk-headless package) is fine too.
if [ "${KAIROS_WITH_JAVA:-1}" = 1 ] && command -v javac > /dev/null 2>&1; then
  missing=("${missing[@]/default-jdk-headless}")
  read -r -a missing <<< "${missing[*]}"
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "kairos: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
