// result.hpp: what one workload run reports, and the pieces every workload shares: exact
// percentiles, the seeded delay sequence, resident memory, a progress callback.
// Threads: nothing here is thread-safe; a workload fills its RunResult on its own thread.
#pragma once
#include <kairos/latency_histogram.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <unistd.h>

namespace kairos::perf {

using Value = std::variant<std::int64_t, double, std::string>;
using Fields = std::vector<std::pair<std::string, Value>>;

struct RunResult {
  Fields parameters;  // the workload's shape (sizes, delays, seed)
  Fields figures;     // what was measured
  // The latency samples behind the percentiles (W1 call latency, W2 pair latency, W3/W4
  // lateness), every sample recorded; none for a workload without them. Negative samples
  // (early fires) are counted in below_zero().
  std::optional<LatencyHistogram> histogram;
  void param(std::string k, Value v) { parameters.emplace_back(std::move(k), std::move(v)); }
  void figure(std::string k, Value v) { figures.emplace_back(std::move(k), std::move(v)); }
};

// Percentile by nearest rank on sorted samples: the smallest sample with at least p% at or below.
inline std::int64_t nearest_rank(const std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  double rank = p / 100.0 * static_cast<double>(sorted.size());
  std::size_t i = static_cast<std::size_t>(rank);
  if (static_cast<double>(i) < rank) ++i;  // ceil
  if (i == 0) i = 1;
  return sorted[std::min(i, sorted.size()) - 1];
}

inline constexpr std::pair<const char*, double> kPercentiles[] = {
    {"p50_ns", 50.0}, {"p90_ns", 90.0}, {"p99_ns", 99.0}, {"p99_9_ns", 99.9}, {"p99_99_ns", 99.99}};

// Adds samples/p50/p90/p99/p99.9/p99.99/max (and, for lateness, early_fires: samples < 0), and
// every sample to r.histogram (without a prefix: the run's main samples). Sorts `samples` in place.
inline void add_percentiles(RunResult& r, std::vector<std::int64_t>& samples, bool lateness,
                            const std::string& prefix = "") {
  std::sort(samples.begin(), samples.end());
  if (prefix.empty()) {
    r.histogram.emplace();
    for (std::int64_t v : samples) r.histogram->record(v);
  }
  r.figure(prefix + "samples", static_cast<std::int64_t>(samples.size()));
  for (auto [name, p] : kPercentiles) r.figure(prefix + name, nearest_rank(samples, p));
  r.figure(prefix + "max_ns", samples.empty() ? std::int64_t{0} : samples.back());
  if (lateness) {
    auto early = std::lower_bound(samples.begin(), samples.end(), std::int64_t{0}) - samples.begin();
    r.figure(prefix + "early_fires", static_cast<std::int64_t>(early));
    r.figure(prefix + "min_ns", samples.empty() ? std::int64_t{0} : samples.front());
  }
}

// SplitMix64: a tiny generator that LatHarness.java implements bit for bit, so that the Java
// peers see exactly the same delays.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) noexcept : x_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (x_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (the modulo bias is below 1e-9 for the ranges used here).
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) noexcept {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }

 private:
  std::uint64_t x_;
};

// Picks one iteration in each block of `every` consecutive ones, at a random position within the
// block: the sampling rate is exactly 1/every, and no period of the measured system can line up
// with it. sampled(i) must be called with i = 0, 1, 2, ...
class SampleClock {
 public:
  SampleClock(std::size_t every, std::uint64_t seed) : every_(every), rng_(seed) { next_block(0); }
  bool operator()(std::size_t i) noexcept {
    if (i != pick_) return false;
    next_block(i - i % every_ + every_);
    return true;
  }

 private:
  void next_block(std::size_t block_start) noexcept {
    pick_ = block_start + static_cast<std::size_t>(rng_.next() % every_);
  }
  std::size_t every_;
  SplitMix64 rng_;
  std::size_t pick_ = 0;
};

inline std::vector<std::int64_t> seeded_delays(std::size_t n, std::int64_t lo, std::int64_t hi,
                                               std::uint64_t seed) {
  SplitMix64 g(seed);
  std::vector<std::int64_t> d(n);
  for (auto& v : d) v = g.uniform(lo, hi);
  return d;
}

// Resident set size of this process in bytes (/proc/self/statm), 0 if unreadable.
inline std::int64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long size = 0, resident = 0;
  int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<std::int64_t>(resident) * sysconf(_SC_PAGESIZE) : 0;
}

// Told how far a long run is (done of total); the caller decides whether to print. Workloads call
// it from their own thread, at most every few thousand iterations or milliseconds.
using Progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

}  // namespace kairos::perf
