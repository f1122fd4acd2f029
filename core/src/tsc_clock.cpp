// tsc_clock.cpp: the process's submission clock (tsc_clock.hpp has the argument) and the CPU
// check it needs.
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <kairos/detail/futex.hpp>

#include "tsc_clock.hpp"

namespace kairos::detail {

// Invariant TSC: the counter runs at a constant rate in every P-, C- and T-state (the kernel's
// constant_tsc + nonstop_tsc). Read once.
bool cpu_has_invariant_tsc() noexcept {
#if defined(__x86_64__)
  static const bool invariant = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) return false;
    __cpuid(0x80000007u, a, b, c, d);
    return (d & (1u << 8)) != 0;
  }();
  return invariant;
#else
  return false;
#endif
}

bool cpu_has_rdtscp() noexcept {
#if defined(__x86_64__)
  static const bool rdtscp = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000001u) return false;
    __cpuid(0x80000001u, a, b, c, d);
    return (d & (1u << 27)) != 0;
  }();
  return rdtscp;
#else
  return false;
#endif
}

namespace {
constinit TscClock<HardwareTicks> g_submit_clock;
}  // namespace

TscClock<HardwareTicks>& process_submit_clock() noexcept { return g_submit_clock; }

std::int64_t submit_now_ns() noexcept { return g_submit_clock.now(); }

}  // namespace kairos::detail
