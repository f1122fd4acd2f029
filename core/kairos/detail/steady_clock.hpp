// steady_clock.hpp: the engine's clock reads, in nanoseconds on CLOCK_MONOTONIC (the clock of
// std::chrono::steady_clock). Defined in core/src (threads.cpp, tsc_clock.cpp).
// Threads: any thread; no state of the caller's.
#pragma once
#include <cstdint>

namespace kairos::detail {

std::int64_t steady_now_ns() noexcept;  // CLOCK_MONOTONIC, as std::chrono::steady_clock
// "Now" for a deadline computed at submission (now + delay): never below CLOCK_MONOTONIC at the
// call and at most 0.4 us above it, never below what an earlier call (by happens-before)
// returned. Read from the CPU's counter where the kernel keeps CLOCK_MONOTONIC with it; else
// steady_now_ns() (core/src/tsc_clock.hpp). Not for deciding that something is due.
std::int64_t submit_now_ns() noexcept;

}  // namespace kairos::detail
