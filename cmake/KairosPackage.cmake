# cpack -G DEB in a build directory: Debian packages of what `cmake --install` puts in place.
#
# A shared build (-DBUILD_SHARED_LIBS=ON; what a distribution ships) gives two packages, the way
# Debian splits its own C++ libraries (libfmt9 / libfmt-dev):
#   libkairos<SOVERSION>  (libkairos0.1)  the shared libraries: libkairos.so.0.1.0 and the latency
#                         kit's libkairos-latency.so.0.1.0, with their SONAME links
#   libkairos-dev         the headers, the .so links, the CMake and pkg-config files (kairos.pc,
#                         kairos-latency.pc), and the tools kairos-lat and kairos-gate with their
#                         man pages and the Java harness
# A static build gives libkairos-dev alone (libkairos.a, libkairos-latency.a; nothing to load at
# run time).
# Each package has /usr/share/doc/<package>/copyright (machine-readable, Debian's copyright-format
# 1.0) and changelog.Debian.gz; binaries are stripped (CPACK_STRIP_FILES). The multiarch library
# directory (lib/x86_64-linux-gnu) is what GNUInstallDirs picks when CMAKE_INSTALL_PREFIX is /usr:
#   cmake -S . -B build/deb -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX=/usr \
#         -DKAIROS_BUILD_TESTS=OFF -DKAIROS_BUILD_PERF=OFF
#   cmake --build build/deb -j && (cd build/deb && cpack -G DEB)
# tests/package/check_deb.sh builds exactly that and runs lintian on the result (no error allowed).
#
# Components (install rules of the top CMakeLists.txt and, by CMAKE_INSTALL_DEFAULT_COMPONENT_NAME,
# of tools/): runtime (the shared library), dev (everything else), license (LICENSE under
# share/doc/kairos for a plain install; the packages carry it as their copyright file instead),
# and, installed only by cpack, runtime_debian / dev_debian (copyright and changelog per package).
#
# pkg-config: in libkairos-dev, kairos.pc and kairos-latency.pc say prefix=/usr (cmake/debian/
# pc_prefix.cmake, run as the dev_debian component is staged), so that pkg-config filters the
# system directories and applies a sysroot once; a plain `cmake --install` keeps the relocatable
# ${pcfiledir} form.
# ldconfig: the runtime package triggers libc's ldconfig (DEBIAN/triggers); CPack's own postinst
# and postrm calling ldconfig are taken out of the packages after they are made
# (cmake/debian/drop_ldconfig_scripts.cmake), so lintian has no maintscript-calls-ldconfig.
#
# Dependencies are written out, not computed: the library and the tools need the C and C++
# runtimes of Debian 12's g++ 12; libkairos-latency (the HdrHistogram codec) links zlib, so the
# package that holds it depends on zlib1g; no installed header includes <zlib.h>, so zlib1g-dev is
# needed only to link a static libkairos-latency (kairos-latency.pc's Requires.private).
set(KAIROS_DEB_MAINTAINER "The kairos authors <kairos@example.org>" CACHE STRING
    "Maintainer field of the Debian packages, 'Name <address>': whoever ships them puts their own")
set(KAIROS_DEB_RELEASE 1)   # Debian revision: 0.1.0-1 (a non-native package: changelog.Debian.gz)
set(KAIROS_DEB_VERSION ${PROJECT_VERSION}-${KAIROS_DEB_RELEASE})
set(KAIROS_SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
set(KAIROS_DEB_RUNTIME_NAME libkairos${KAIROS_SOVERSION})
set(_kairos_deb_base_depends "libc6 (>= 2.34), libgcc-s1 (>= 3.0), libstdc++6 (>= 12)")
if(CMAKE_LIBRARY_ARCHITECTURE AND NOT CMAKE_INSTALL_LIBDIR MATCHES "${CMAKE_LIBRARY_ARCHITECTURE}")
  message(STATUS "kairos: cpack -G DEB puts the library in /usr/${CMAKE_INSTALL_LIBDIR}; "
                 "-DCMAKE_INSTALL_PREFIX=/usr gives Debian's multiarch lib/${CMAKE_LIBRARY_ARCHITECTURE}")
endif()

# copyright: the LICENSE's permission notice as an Expat License paragraph (each line indented,
# empty lines written " .").
file(STRINGS ${PROJECT_SOURCE_DIR}/LICENSE _license_lines)
set(KAIROS_LICENSE_TEXT "")
set(_in_notice FALSE)
foreach(line IN LISTS _license_lines)
  if(line MATCHES "^Permission is hereby granted")
    set(_in_notice TRUE)
  endif()
  if(_in_notice)
    if(line STREQUAL "")
      string(APPEND KAIROS_LICENSE_TEXT " .\n")
    else()
      string(APPEND KAIROS_LICENSE_TEXT " ${line}\n")
    endif()
  endif()
endforeach()
string(STRIP "${KAIROS_LICENSE_TEXT}" KAIROS_LICENSE_TEXT)
set(KAIROS_LICENSE_TEXT " ${KAIROS_LICENSE_TEXT}")
# The changelog entry is dated at configure time (SOURCE_DATE_EPOCH, when set, fixes it).
string(TIMESTAMP KAIROS_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(_deb_dir ${CMAKE_CURRENT_BINARY_DIR}/debian)
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/copyright.in ${_deb_dir}/copyright @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/changelog.in ${_deb_dir}/changelog @ONLY)
find_program(KAIROS_GZIP gzip REQUIRED)
execute_process(COMMAND ${KAIROS_GZIP} -9nc ${_deb_dir}/changelog OUTPUT_FILE ${_deb_dir}/changelog.Debian.gz
                COMMAND_ERROR_IS_FATAL ANY)
foreach(group runtime dev)
  if(group STREQUAL runtime)
    set(_pkg ${KAIROS_DEB_RUNTIME_NAME})
  else()
    set(_pkg libkairos-dev)
  endif()
  install(FILES ${_deb_dir}/copyright ${_deb_dir}/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_pkg} COMPONENT ${group}_debian EXCLUDE_FROM_ALL)
endforeach()
# The .pc files of libkairos-dev with prefix=/usr (see above). dev_debian is staged after dev
# (CPACK_COMPONENTS_ALL's order), into the same package directory; the script fails if not.
set(_kairos_deb_pc_files ${CMAKE_INSTALL_LIBDIR}/pkgconfig/kairos.pc)
if(TARGET kairos_latency)
  list(APPEND _kairos_deb_pc_files ${CMAKE_INSTALL_LIBDIR}/pkgconfig/kairos-latency.pc)
endif()
install(CODE "set(KAIROS_DEB_PC_FILES \"${_kairos_deb_pc_files}\")\nset(KAIROS_DEB_PC_PREFIX /usr)"
        COMPONENT dev_debian EXCLUDE_FROM_ALL)
install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/debian/pc_prefix.cmake COMPONENT dev_debian EXCLUDE_FROM_ALL)

set(CPACK_PACKAGE_NAME kairos)
set(CPACK_PACKAGE_VENDOR "The kairos authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${KAIROS_DEB_MAINTAINER}")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_INSTALL_DIRECTORY kairos)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)  # also the .pc files' prefix: pc_prefix.cmake
set(CPACK_POST_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/debian/drop_ldconfig_scripts.cmake)
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ONE_PER_GROUP)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${KAIROS_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${KAIROS_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_LICENSE ${KAIROS_LICENSE})
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "")
set(CPACK_COMPONENT_RUNTIME_GROUP runtime)
set(CPACK_COMPONENT_RUNTIME_DEBIAN_GROUP runtime)
set(CPACK_COMPONENT_DEV_GROUP dev)
set(CPACK_COMPONENT_DEV_DEBIAN_GROUP dev)

# Descriptions: CPack puts the project's DESCRIPTION first as the summary line of both, and
# formats the rest (a space before each line, " ." for the empty one).
set(_kairos_about
    "kairos schedules in-process timers the way Java's ScheduledThreadPoolExecutor\ndoes, on lock-free inboxes and leader threads that wait precisely for the next\ndeadline.\n\n")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libkairos-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "${_kairos_about}This package holds the development files: the headers, the CMake and\npkg-config files, and the kairos-lat and kairos-gate latency tools.")
set(_kairos_deb_zlib "zlib1g (>= 1:1.2.0)")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${_kairos_deb_base_depends}, ${_kairos_deb_zlib}, zlib1g-dev")
if(_kairos_type STREQUAL "SHARED_LIBRARY")
  set(CPACK_COMPONENTS_ALL runtime runtime_debian dev dev_debian)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${KAIROS_DEB_RUNTIME_NAME})
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
  set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "${_kairos_about}This package holds the shared libraries: libkairos and libkairos-latency.")
  # ldconfig runs through libc's trigger (Debian policy 8.1.1), which lintian requires.
  file(WRITE ${_deb_dir}/triggers "activate-noawait ldconfig\n")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${_deb_dir}/triggers)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "${_kairos_deb_base_depends}, ${_kairos_deb_zlib}")
  set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # DEBIAN/shlibs: libkairos 0.1 libkairos0.1 (= 0.1.0-1)
  set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
      "${KAIROS_DEB_RUNTIME_NAME} (= ${KAIROS_DEB_VERSION}), ${_kairos_deb_base_depends}")
else()
  set(CPACK_COMPONENTS_ALL dev dev_debian)
endif()
include(CPack)
