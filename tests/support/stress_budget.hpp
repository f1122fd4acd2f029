// stress_budget.hpp: how long the stress, fault, soak and model tests of kairos run and which
// seed they use.
//   KAIROS_STRESS_SECONDS  seconds per timed stress test (default 3; CI under sanitizers may
//                          shorten it, a long run may lengthen it). 0.5 is the floor.
//   KAIROS_STRESS_SEED     run one given seed instead of a fresh one (print on failure).
//   KAIROS_SOAK_SECONDS    seconds of the soak test (default 10).
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>

namespace kairos_test {

inline double env_seconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || !(d > 0)) return fallback;
  return d;
}

inline std::chrono::nanoseconds stress_budget(double default_seconds = 3.0) {
  double s = env_seconds("KAIROS_STRESS_SECONDS", default_seconds);
  if (s < 0.5) s = 0.5;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9));
}

// The seed of a randomised test: KAIROS_STRESS_SEED if set, else fresh from the OS.
inline std::uint64_t stress_seed() {
  if (const char* v = std::getenv("KAIROS_STRESS_SEED"); v && *v) return std::strtoull(v, nullptr, 0);
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

inline bool sanitized_build() {
#if defined(KAIROS_SANITIZED)
  return true;
#elif defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

}  // namespace kairos_test
