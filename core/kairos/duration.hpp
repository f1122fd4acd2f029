// duration.hpp: kairos::Duration and the saturating conversions every delay goes through.
// Any std::chrono::duration converts to nanoseconds with saturation (hours::max() stays "never"),
// and a fractional duration rounds up to the next nanosecond, so a delay is never shortened.
#pragma once
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ratio>
#include <type_traits>

namespace kairos {

using Duration = std::chrono::nanoseconds;

namespace detail {

inline constexpr std::int64_t kMaxNs = std::numeric_limits<std::int64_t>::max();
inline constexpr std::int64_t kMinNs = std::numeric_limits<std::int64_t>::min();

// Saturating conversion of any duration to whole nanoseconds, rounding toward +infinity.
template <class Rep, class Period>
constexpr std::int64_t to_ns_saturated(std::chrono::duration<Rep, Period> d) noexcept {
  using R = std::ratio_divide<Period, std::nano>;  // ns per tick = R::num / R::den
  if constexpr (std::is_floating_point_v<Rep>) {
    long double ns = static_cast<long double>(d.count()) * R::num / R::den;
    if (std::isnan(ns)) return 0;
    if (ns >= static_cast<long double>(kMaxNs)) return kMaxNs;
    if (ns <= static_cast<long double>(kMinNs)) return kMinNs;
    long double c = std::ceil(ns);
    if (c >= static_cast<long double>(kMaxNs)) return kMaxNs;
    return static_cast<std::int64_t>(c);
  } else {
    // Integral ticks: exact in 128-bit arithmetic, then clamp.
    __extension__ using i128 = __int128;
    i128 ticks = static_cast<i128>(d.count());
    i128 num = ticks * static_cast<i128>(R::num);
    i128 q = num / R::den;
    if (num % R::den != 0 && num > 0) ++q;  // round up (toward +inf) for positive remainders
    if (q > kMaxNs) return kMaxNs;
    if (q < kMinNs) return kMinNs;
    return static_cast<std::int64_t>(q);
  }
}

// a + b without overflow: clamps to [kMinNs, kMaxNs].
constexpr std::int64_t add_saturated(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kMaxNs : kMinNs;
  return r;
}

// a - b without overflow.
constexpr std::int64_t sub_saturated(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? kMaxNs : kMinNs;
  return r;
}

// A deadline `delay` after `now` (delay >= 0), as every submission and re-arm computes it:
// `never` past the clock's range, or for a delay of kMaxNs (Duration::max(), hours::max()); a
// deadline exactly at the end of a ManualClock's time is due then.
struct DeadlineNs {
  std::int64_t ns;
  bool never;
};
constexpr DeadlineNs deadline_after_ns(std::int64_t now, std::int64_t delay) noexcept {
  std::int64_t r;
  if (__builtin_add_overflow(now, delay, &r) || delay == kMaxNs) return {kMaxNs, true};
  return {r, false};
}

}  // namespace detail
}  // namespace kairos
