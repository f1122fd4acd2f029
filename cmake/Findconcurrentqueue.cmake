# Finds moodycamel::ConcurrentQueue as Debian's libconcurrentqueue-dev installs it
# (/usr/include/concurrentqueue/concurrentqueue.h, no CMake config of its own).
# Defines the imported target concurrentqueue::concurrentqueue.
find_path(CONCURRENTQUEUE_INCLUDE_DIR concurrentqueue.h PATH_SUFFIXES concurrentqueue)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(concurrentqueue
  REQUIRED_VARS CONCURRENTQUEUE_INCLUDE_DIR
  REASON_FAILURE_MESSAGE "install it with: apt-get install -y libconcurrentqueue-dev")
if(concurrentqueue_FOUND AND NOT TARGET concurrentqueue::concurrentqueue)
  add_library(concurrentqueue::concurrentqueue INTERFACE IMPORTED)
  set_target_properties(concurrentqueue::concurrentqueue PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${CONCURRENTQUEUE_INCLUDE_DIR}")
endif()
mark_as_advanced(CONCURRENTQUEUE_INCLUDE_DIR)
