// cache_line.hpp: the one size the engine pads and aligns to, so that fields written by different
// threads never share a line (false sharing). 64 bytes on every x86-64 and on the common ARM64
// cores; std::hardware_destructive_interference_size is not used because its value may differ
// between compilers and flags (GCC warns when it appears in a layout, -Winterference-size).
// Each padded type states its layout with a static_assert beside it.
#pragma once
#include <cstddef>

namespace kairos::detail {

inline constexpr std::size_t kCacheLine = 64;

}  // namespace kairos::detail
