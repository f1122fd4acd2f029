// completion.cpp: the out-of-line half of completion.hpp: the report of an exception nobody can
// get() (an execute()d task's, a periodic task's failure; also a hook's or on_wake's).
#include <cstdio>
#include <exception>
#include <functional>

#include "engine_state.hpp"

namespace kairos::detail {

void report_uncaught(const std::function<void(std::exception_ptr)>& handler, std::exception_ptr e) noexcept {
  if (handler) {
    try {
      handler(e);
    } catch (...) {
      // on_uncaught threw: dropped, as documented.
    }
    return;
  }
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "kairos: uncaught exception in a task: %s\n", ex.what());
  } catch (...) {
    std::fprintf(stderr, "kairos: uncaught exception of a non-std type in a task\n");
  }
}

}  // namespace kairos::detail
