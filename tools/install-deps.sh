#!/usr/bin/env bash
# Installs the Debian packages kairos builds with, if any is missing (Debian 12, as root).
set -euo pipefail
pkgs=(cmake g++ make libconcurrentqueue-dev libgtest-dev libbenchmark-dev libboost-dev
      nlohmann-json3-dev libcli11-dev)
[ "${KAIROS_WITH_JAVA:-1}" = 1 ] && pkgs+=(libnetty-java)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "kairos: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi
