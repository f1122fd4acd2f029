# pc_prefix.cmake: run by cpack when it stages the dev_debian component (cmake/KairosPackage.cmake),
# after the dev component put kairos.pc and kairos-latency.pc in place. In the Debian package their
# prefix is the literal install prefix (/usr), not ${pcfiledir}/../../..: pkg-config (pkgconf)
# then drops -I/usr/include and -L/usr/lib/<triplet> as system directories, and
# PKG_CONFIG_SYSROOT_DIR is prepended once (a path made from ${pcfiledir} already holds the sysroot
# and got it twice). A plain `cmake --install` keeps ${pcfiledir}: that tree may be moved, and it
# is rarely in a system directory. Input: KAIROS_DEB_PC_FILES (paths below the prefix) and
# KAIROS_DEB_PC_PREFIX (the package's prefix), set by the install(CODE) before this script.
foreach(pc IN LISTS KAIROS_DEB_PC_FILES)
  set(path "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${pc}")
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "kairos: ${path} is not staged: the dev component installs before dev_debian")
  endif()
  file(READ "${path}" text)
  string(REGEX REPLACE "(^|\n)prefix=[^\n]*" "\\1prefix=${KAIROS_DEB_PC_PREFIX}" text "${text}")
  file(WRITE "${path}" "${text}")
endforeach()
