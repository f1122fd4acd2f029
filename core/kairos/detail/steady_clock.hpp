// steady_clock.hpp: the engine's clock read, in nanoseconds on CLOCK_MONOTONIC (the clock of
// std::chrono::steady_clock), for deadlines computed at submission (now + delay) and for the
// leader's tests of what is due. Inline: a submission's clock read is its largest single cost
// (about 20 ns, the vDSO's), and a call around it only adds to it.
// Threads: any thread; no state of the caller's.
#pragma once
#include <cstdint>

#include <time.h>

namespace kairos::detail {

// CLOCK_MONOTONIC, as std::chrono::steady_clock.
inline std::int64_t steady_now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace kairos::detail
