// futex.hpp: waiting on a 32-bit atomic word (Linux futex), with an optional absolute deadline
// (CLOCK_MONOTONIC: the clock of steady_clock.hpp), and a spin-wait's pause.
#pragma once
#include <atomic>
#include <cstdint>

namespace kairos::detail {

// Sleeps while *word == expected, until woken or until deadline_ns on CLOCK_MONOTONIC
// (deadline_ns < 0: no deadline). Returns false iff the deadline passed. Spurious returns happen:
// callers re-check their condition.
[[nodiscard]] bool futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected, std::int64_t deadline_ns) noexcept;
void futex_wake_all(std::atomic<std::uint32_t>* word) noexcept;

// One iteration of a short spin-wait.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace kairos::detail
