// tsc_clock.cpp: the process's submission clock (tsc_clock.hpp has the argument) and the CPU
// check it needs.
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <kairos/detail/steady_clock.hpp>

#include "tsc_clock.hpp"

namespace kairos::detail {

namespace {
// Bit `bit` of EDX of extended CPUID leaf `leaf`; false where the leaf does not exist.
bool extended_cpuid_edx_bit(unsigned leaf, unsigned bit) noexcept {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) < leaf) return false;
  __cpuid(leaf, a, b, c, d);
  return (d & (1u << bit)) != 0;
#else
  (void)leaf;
  (void)bit;
  return false;
#endif
}
}  // namespace

// Invariant TSC: the counter runs at a constant rate in every P-, C- and T-state (the kernel's
// constant_tsc + nonstop_tsc). Read once.
bool cpu_has_invariant_tsc() noexcept {
  static const bool invariant = extended_cpuid_edx_bit(0x80000007u, 8);
  return invariant;
}

bool cpu_has_rdtscp() noexcept {
  static const bool rdtscp = extended_cpuid_edx_bit(0x80000001u, 27);
  return rdtscp;
}

namespace {
constinit TscClock<HardwareTicks> g_submit_clock;
}  // namespace

TscClock<HardwareTicks>& process_submit_clock() noexcept { return g_submit_clock; }

// A measurement-only build (CMake KAIROS_SUBMIT_CLOCK_GETTIME=ON) answers with clock_gettime
// itself: the A/B that decides whether the counter path pays for itself (PERF.md).
std::int64_t submit_now_ns() noexcept {
#if defined(KAIROS_SUBMIT_CLOCK_GETTIME)
  return steady_now_ns();
#else
  return g_submit_clock.now();
#endif
}

}  // namespace kairos::detail
