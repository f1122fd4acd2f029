# cpack -G DEB (or TGZ) in the build directory: one package with everything `cmake --install`
# puts in place: the library, its headers, the CMake and pkg-config files, kairos-lat and
# kairos-gate when the tools are built. tests/package/ checks the .deb's file list.
set(CPACK_PACKAGE_NAME kairos)
set(CPACK_PACKAGE_VENDOR "The kairos authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "The kairos authors")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_INSTALL_DIRECTORY kairos)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES OFF)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_LICENSE ${KAIROS_LICENSE})
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
# The tools and a shared libkairos link the C++ runtime; the headers need a C++20 compiler.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6 (>= 12)")
set(CPACK_PACKAGE_DESCRIPTION
    "kairos schedules in-process timers the way Java's ScheduledThreadPoolExecutor does, on lock-free inboxes and leader threads that wait precisely for the next deadline. This package holds the library, its headers, CMake and pkg-config files, and the kairos-lat and kairos-gate latency tools.")
include(CPack)
