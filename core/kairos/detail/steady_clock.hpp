// steady_clock.hpp: the engine's clock read, in nanoseconds on CLOCK_MONOTONIC (the clock of
// std::chrono::steady_clock), for deadlines computed at submission (now + delay) and for the
// leader's tests of what is due. Defined in core/src/threads.cpp.
// Threads: any thread; no state of the caller's.
#pragma once
#include <cstdint>

namespace kairos::detail {

std::int64_t steady_now_ns() noexcept;  // CLOCK_MONOTONIC, as std::chrono::steady_clock

}  // namespace kairos::detail
