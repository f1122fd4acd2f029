#!/usr/bin/env bash
# check_deb.sh <source dir> <build dir> <scratch dir> <c++ compiler> <version> <soversion>: packages
# with cpack -G DEB the build of kairos made the way a Debian package is built (build_shared.sh:
# shared library, Release, prefix /usr so GNUInstallDirs picks the multiarch lib/<triplet>;
# cmake/KairosPackage.cmake), and checks:
#   - two packages, libkairos<soversion> (the shared libraries only: libkairos and the latency
#     kit's libkairos-latency) and libkairos-dev (headers, the .so links, CMake and pkg-config
#     files kairos.pc and kairos-latency.pc, both tools, their man pages, the Java harness), each
#     with /usr/share/doc/<package>/copyright (machine-readable) and changelog.Debian.gz;
#   - Version <version>-<revision>, a Maintainer "Name <address>", libkairos-dev depending on
#     the exact runtime package, the runtime package on zlib (libkairos-latency links it) and
#     libkairos-dev not on zlib1g-dev (no installed header includes <zlib.h>), binaries stripped;
#   - kairos.pc and kairos-latency.pc say prefix=/usr (pkg-config filters the system directories
#     and applies a sysroot once: no ${pcfiledir}/../../.. path in their flags);
#   - ldconfig runs through libc's trigger (the runtime package's DEBIAN/triggers): no postinst or
#     postrm calls it;
#   - lintian: its whole output is printed; any E: line fails the test, and so does the warning
#     maintscript-calls-ldconfig;
#   - unpacked into a scratch root, the tools run from there, link the packaged libkairos and
#     hold no path of the build machine.
set -euo pipefail
src=$1 build=$2 scratch=$3 cxx=$4 version=$5 soversion=$6
rm -rf "$scratch" && mkdir -p "$scratch"
[ -f "$build/CPackConfig.cmake" ] || { echo "no build in $build (build_shared.sh makes it)"; exit 1; }
(cd "$scratch" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$scratch/out" > cpack.log 2>&1) ||
  { cat "$scratch/cpack.log"; exit 1; }
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2> /dev/null || "$cxx" -print-multiarch)
fail=0
[ "$libdir" = "lib/$multiarch" ] || { echo "libdir is '$libdir', not the multiarch lib/$multiarch"; fail=1; }

runtime_pkg=libkairos$soversion
ls "$scratch"/out/*.deb
runtime=$(ls "$scratch"/out/"${runtime_pkg}"_"$version"-*.deb)
dev=$(ls "$scratch"/out/libkairos-dev_"$version"-*.deb)
[ "$(ls "$scratch"/out/*.deb | wc -l)" = 2 ] || { echo "expected exactly two packages"; fail=1; }
deb_version=$(dpkg-deb -f "$dev" Version)
for deb in "$runtime" "$dev"; do
  pkg=$(dpkg-deb -f "$deb" Package)
  echo "==== $(basename "$deb")"
  dpkg-deb -f "$deb" Package Version Architecture Section Maintainer Depends
  dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$' > "$scratch/$pkg.files"
  [ "$(dpkg-deb -f "$deb" Version)" = "$deb_version" ] || { echo "$pkg: versions of the two packages differ"; fail=1; }
  case $deb_version in "$version"-[0-9]*) ;; *) echo "$pkg: version $deb_version is not $version-<revision>"; fail=1;; esac
  dpkg-deb -f "$deb" Maintainer | grep -E '^[^<>]+ <[^<>@ ]+@[^<>@ ]+\.[a-z]+>$' > /dev/null ||
    { echo "$pkg: Maintainer is not 'Name <address>'"; fail=1; }
  for f in copyright changelog.Debian.gz; do
    grep -qx -- "/usr/share/doc/$pkg/$f" "$scratch/$pkg.files" || { echo "$pkg: no /usr/share/doc/$pkg/$f"; fail=1; }
  done
  if grep -n -e '/build' -e "$src" "$scratch/$pkg.files"; then echo "$pkg holds build paths"; fail=1; fi
  dpkg-deb -x "$deb" "$scratch/root"
done
# The runtime package is the library and its documentation, nothing else.
if grep -v -x -e "/usr/$libdir/libkairos.so.$version" -e "/usr/$libdir/libkairos.so.$soversion" \
        -e "/usr/$libdir/libkairos-latency.so.$version" -e "/usr/$libdir/libkairos-latency.so.$soversion" \
        -e "/usr/share/doc/$runtime_pkg/copyright" -e "/usr/share/doc/$runtime_pkg/changelog.Debian.gz" \
        "$scratch/$runtime_pkg.files"; then
  echo "$runtime_pkg holds more than the shared library (above)"; fail=1
fi
for f in "/usr/$libdir/libkairos.so.$version" "/usr/$libdir/libkairos.so.$soversion" \
         "/usr/$libdir/libkairos-latency.so.$version" "/usr/$libdir/libkairos-latency.so.$soversion"; do
  grep -qx -- "$f" "$scratch/$runtime_pkg.files" || { echo "missing from $runtime_pkg: $f"; fail=1; }
done
for f in /usr/$libdir/libkairos.so /usr/include/kairos/kairos.hpp /usr/include/kairos/version.hpp \
         /usr/include/kairos/scheduler.hpp /usr/include/kairos/wait.hpp /usr/include/kairos/hdr_codec.hpp \
         /usr/include/kairos/pacer.hpp /usr/$libdir/libkairos-latency.so /usr/$libdir/pkgconfig/kairos-latency.pc \
         /usr/$libdir/cmake/kairos/kairosConfig.cmake /usr/$libdir/cmake/kairos/kairosConfigVersion.cmake \
         /usr/$libdir/cmake/kairos/kairosTargets.cmake /usr/$libdir/pkgconfig/kairos.pc \
         /usr/bin/kairos-lat /usr/bin/kairos-gate /usr/share/man/man1/kairos-lat.1.gz \
         /usr/share/man/man1/kairos-gate.1.gz /usr/share/kairos/java/LatHarness.java; do
  grep -qx -- "$f" "$scratch/libkairos-dev.files" || { echo "missing from libkairos-dev: $f"; fail=1; }
done
depends=$(dpkg-deb -f "$dev" Depends)
case "$depends, " in *"$runtime_pkg (= $deb_version)"*) ;; *) echo "libkairos-dev does not depend on '$runtime_pkg (= $deb_version)'"; fail=1;; esac
case "$depends, " in *zlib1g-dev*) echo "libkairos-dev depends on zlib1g-dev: no installed header needs it"; fail=1;; esac
case "$(dpkg-deb -f "$runtime" Depends), " in *"zlib1g "*) ;; *) echo "$runtime_pkg does not depend on zlib1g"; fail=1;; esac
if grep -rl 'zlib[.]h' "$scratch/root/usr/include"; then echo "an installed header includes <zlib.h> (above)"; fail=1; fi
head -1 "$scratch/root/usr/share/doc/libkairos-dev/copyright" |
  grep -x 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' > /dev/null ||
  { echo "copyright is not in the machine-readable format"; fail=1; }
zcat "$scratch/root/usr/share/doc/$runtime_pkg/changelog.Debian.gz" > "$scratch/changelog"
head -1 "$scratch/changelog" | grep -F "($deb_version)" > /dev/null ||
  { echo "changelog.Debian.gz does not open with version $deb_version"; fail=1; }
for f in "usr/$libdir/libkairos.so.$version" "usr/$libdir/libkairos-latency.so.$version" usr/bin/kairos-lat \
         usr/bin/kairos-gate; do
  if readelf -S "$scratch/root/$f" | grep -F -e '.symtab' -e '.debug_info' > /dev/null; then
    echo "$f is not stripped"; fail=1
  fi
done
for tool in kairos-lat kairos-gate; do
  zcat "$scratch/root/usr/share/man/man1/$tool.1.gz" > "$scratch/$tool.1"
  grep -F -e '\-\-help' "$scratch/$tool.1" > /dev/null || { echo "$tool.1 does not show the --help text"; fail=1; }
done

# The .pc files: a literal /usr prefix; through pkg-config with the unpacked root as sysroot, no
# path built from ${pcfiledir} (it held the sysroot already, and got it a second time).
for pc in kairos kairos-latency; do
  grep -qx 'prefix=/usr' "$scratch/root/usr/$libdir/pkgconfig/$pc.pc" ||
    { grep -n '^prefix=' "$scratch/root/usr/$libdir/pkgconfig/$pc.pc"; echo "$pc.pc: prefix is not /usr"; fail=1; }
  flags=$(PKG_CONFIG_SYSROOT_DIR=$scratch/root \
          PKG_CONFIG_LIBDIR=$scratch/root/usr/$libdir/pkgconfig:$(pkg-config --variable pc_path pkg-config) \
          pkg-config --cflags --libs "$pc") || { echo "pkg-config $pc failed"; fail=1; }
  echo "pkg-config --cflags --libs $pc (sysroot $scratch/root): $flags"
  case "$flags" in *pkgconfig/..*|*"$scratch/root$scratch/root"*) echo "$pc.pc: flags built from its own path"; fail=1;; esac
done
# ldconfig: libc's trigger, not maintainer scripts.
for deb in "$runtime" "$dev"; do
  pkg=$(dpkg-deb -f "$deb" Package)
  dpkg-deb --control "$deb" "$scratch/control-$pkg"
  for script in preinst postinst prerm postrm; do
    if [ -f "$scratch/control-$pkg/$script" ] && grep -n ldconfig "$scratch/control-$pkg/$script"; then
      echo "$pkg: its $script calls ldconfig (above)"; fail=1
    fi
  done
done
grep -qx 'activate-noawait ldconfig' "$scratch/control-$runtime_pkg/triggers" ||
  { echo "$runtime_pkg: no DEBIAN/triggers with 'activate-noawait ldconfig'"; fail=1; }

echo "==== lintian"
command -v lintian > /dev/null || { echo "lintian is not installed (tools/install-deps.sh installs it)"; exit 1; }
rc=0
lintian --tag-display-limit 0 --info --fail-on error "$runtime" "$dev" > "$scratch/lintian.log" 2>&1 || rc=$?
cat "$scratch/lintian.log"
[ $rc = 0 ] || [ $rc = 2 ] || { echo "lintian did not run (exit $rc, above)"; fail=1; }
if [ $rc = 2 ] || grep -E '^E: ' "$scratch/lintian.log" > /dev/null; then echo "lintian reports errors (E: above)"; fail=1; fi
if grep -F maintscript-calls-ldconfig "$scratch/lintian.log"; then echo "lintian: maintscript-calls-ldconfig (above)"; fail=1; fi

# From the unpacked root: the tools run and link the packaged libkairos.
export LD_LIBRARY_PATH=$scratch/root/usr/$libdir
ldd "$scratch/root/usr/bin/kairos-lat" > "$scratch/ldd.txt"
grep -F "$scratch/root/usr/$libdir/libkairos.so.$soversion" "$scratch/ldd.txt" > /dev/null ||
  { cat "$scratch/ldd.txt"; echo "kairos-lat does not load the packaged libkairos"; fail=1; }
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
