#!/usr/bin/env bash
# check_deb.sh <build dir> <scratch dir> <version> <libdir> <source dir>: packages the build with
# cpack -G DEB and checks what the .deb installs; then unpacks it into a scratch root and runs the
# two tools from there (no file of the build machine is needed by them).
set -euo pipefail
build=$1 scratch=$2 version=$3 libdir=$4 src=$5
rm -rf "$scratch" && mkdir -p "$scratch"
(cd "$scratch" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$scratch/out" > cpack.log 2>&1) ||
  { cat "$scratch/cpack.log"; exit 1; }
deb=$(ls "$scratch"/out/kairos_"$version"_*.deb)
echo "package: $(basename "$deb")"
dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|' > "$scratch/files"
fail=0
for f in /usr/$libdir/libkairos.a /usr/include/kairos/kairos.hpp /usr/include/kairos/version.hpp \
         /usr/include/kairos/scheduler.hpp /usr/include/kairos/wait.hpp \
         /usr/$libdir/cmake/kairos/kairosConfig.cmake /usr/$libdir/cmake/kairos/kairosConfigVersion.cmake \
         /usr/$libdir/cmake/kairos/kairosTargets.cmake /usr/$libdir/pkgconfig/kairos.pc \
         /usr/bin/kairos-lat /usr/bin/kairos-gate /usr/share/doc/kairos/LICENSE \
         /usr/share/kairos/java/LatHarness.java; do
  grep -qx -- "$f" "$scratch/files" || { echo "missing from the .deb: $f"; fail=1; }
done
if grep -n -e '/build' -e "$src" "$scratch/files"; then echo "the .deb holds build paths"; fail=1; fi
dpkg-deb -f "$deb" Package Version License 2>/dev/null || dpkg-deb -f "$deb" Package Version
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || { echo "package version is not $version"; fail=1; }
dpkg-deb -x "$deb" "$scratch/root"
"$scratch/root/usr/bin/kairos-lat" --version | grep "$version" > /dev/null || { echo "kairos-lat --version"; fail=1; }
"$scratch/root/usr/bin/kairos-gate" --help > /dev/null || { echo "kairos-gate --help failed"; fail=1; }
# The packaged kairos-lat finds the Java harness beside itself (share/kairos/java of wherever it
# is unpacked), and its constant data names no directory of the machine that built it.
default=$("$scratch/root/usr/bin/kairos-lat" --help | sed -n 's/.*--java-dir TEXT=\([^ ]*\).*/\1/p')
[ "$default" = "$scratch/root/usr/share/kairos/java" ] ||
  { echo "kairos-lat's --java-dir default is '$default', not the unpacked share/kairos/java"; fail=1; }
for tool in kairos-lat kairos-gate; do
  objcopy -O binary --only-section=.rodata "$scratch/root/usr/bin/$tool" "$scratch/$tool.rodata"
  # (No early-closing pipe here: under pipefail a reader that stops early fails the writer.)
  if grep -a -o -F -e "$src" -e "$build" "$scratch/$tool.rodata" > "$scratch/$tool.paths"; then
    head -3 "$scratch/$tool.paths"
    echo "$tool holds a path of the build machine (above)"; fail=1
  fi
done
exit $fail
