// cache_line.hpp: the one size the engine pads and aligns to, so that fields written by different
// threads never share a line (false sharing). 64 bytes on every x86-64 and on the common ARM64
// cores; std::hardware_destructive_interference_size is not used because its value may differ
// between compilers and flags (GCC warns when it appears in a layout, -Winterference-size).
// Each padded type states its layout with a static_assert beside it. prefetch_for_write: a line
// another core wrote, asked for ahead of the write that needs it (task_pool.cpp, take_in_all).
#pragma once
#include <cstddef>

namespace kairos::detail {

inline constexpr std::size_t kCacheLine = 64;

// Asks for the line at p in the exclusive state (the caller will write it): a node freed or
// written by another core is still in that core's cache. PREFETCHW is a no-op on cores that lack it.
inline void prefetch_for_write(const void* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace kairos::detail
