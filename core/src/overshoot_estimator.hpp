// overshoot_estimator.hpp: WaitPolicy::adaptive()'s measurement of how late the leader's timed
// sleeps wake, and the spin window it derives from that (docs/adaptive-wait.md).
//
// OvershootEstimator: a high percentile of recent overshoots in fixed memory.
//   Buckets: exact below 8 ns, then 8 per power of two (a bucket spans 12.5% of its value) up
//   to 2^30 ns; larger overshoots fall in the last bucket. A sample adds kOne to its bucket.
//   Decay: every `decay_every` samples every bucket is halved, so a sample's weight halves per
//   `decay_every` later samples; old overshoots fade as new ones come (the estimate shrinks when
//   the machine quiets down, and grows as soon as the percentile's share of samples is late).
//   Estimate: the upper edge of the bucket holding the percentile (never below the percentile
//   of the weighted samples, at most 12.5% above), recomputed every kRefreshEvery samples (and
//   on every sample until there are that many). window() is the estimate within [floor, ceiling]
//   (the floor before the first sample).
//   Cost: record() is a few instructions; a refresh or a decay scans kBuckets counters. No
//   allocation, no atomics: one thread at a time (the shard's leader; the role passes under the
//   shard's mutex).
// AdaptiveWindow: the estimator of one shard plus what stats() reads from other threads
//   (relaxed atomics, written by the leader at each refresh).
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>

#include <kairos/wait.hpp>

namespace kairos::detail {

class OvershootEstimator {
 public:
  static constexpr int kSubBits = 3;                 // 8 buckets per power of two
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kMaxExp = 30;                  // exact up to 2^30 ns (about 1 s)
  static constexpr int kBuckets = (kMaxExp - kSubBits + 2) * kSub;  // 8 exact, then 8 per octave
  static constexpr std::uint32_t kOne = 256;          // a sample's weight (8 bits survive halving)
  static constexpr std::uint32_t kRefreshEvery = 8;
  static constexpr std::uint32_t kDefaultDecayEvery = 1024;

  OvershootEstimator(std::int64_t floor_ns, std::int64_t ceiling_ns, double percentile,
                     std::uint32_t decay_every = kDefaultDecayEvery) noexcept
      : floor_(floor_ns), ceiling_(std::max(floor_ns, ceiling_ns)), percentile_(percentile),
        decay_every_(std::max<std::uint32_t>(decay_every, 1)), window_(floor_ns) {}

  // One timed sleep's overshoot: wake time - the deadline it slept for (negative counts as 0).
  void record(std::int64_t overshoot_ns) noexcept {
    counts_[bucket_of(overshoot_ns)] += kOne;
    weight_ += kOne;
    ++samples_;
    if (++since_decay_ >= decay_every_) decay();
    if (++since_refresh_ >= kRefreshEvery || samples_ < kRefreshEvery) refresh();
  }

  std::int64_t window() const noexcept { return window_; }      // the spin window to use now
  std::int64_t estimate() const noexcept { return estimate_; }  // the percentile; 0: no sample yet
  std::uint64_t samples() const noexcept { return samples_; }   // recorded since construction
  std::int64_t floor() const noexcept { return floor_; }
  std::int64_t ceiling() const noexcept { return ceiling_; }

  static int bucket_of(std::int64_t v) noexcept {
    if (v < kSub) return v < 0 ? 0 : static_cast<int>(v);
    if (v >= (std::int64_t{1} << (kMaxExp + 1))) return kBuckets - 1;
    int e = std::bit_width(static_cast<std::uint64_t>(v)) - 1;  // kSubBits..kMaxExp
    int sub = static_cast<int>(v >> (e - kSubBits)) & (kSub - 1);
    return (e - kSubBits + 1) * kSub + sub;
  }
  // The largest value that falls in bucket b.
  static std::int64_t upper_of(int b) noexcept {
    if (b < kSub) return b;
    int e = b / kSub + kSubBits - 1;
    std::int64_t step = std::int64_t{1} << (e - kSubBits);
    return (static_cast<std::int64_t>(kSub + b % kSub) + 1) * step - 1;
  }

 private:
  void decay() noexcept {
    since_decay_ = 0;
    weight_ = 0;
    for (std::uint32_t& c : counts_) {
      c >>= 1;
      weight_ += c;
    }
  }
  void refresh() noexcept {
    since_refresh_ = 0;
    if (weight_ == 0) return;  // everything decayed away: keep the last estimate
    // The smallest bucket whose cumulative weight reaches percentile * total.
    const double need = percentile_ * static_cast<double>(weight_);
    std::uint64_t cum = 0;
    int b = 0;
    for (; b < kBuckets - 1; ++b) {
      cum += counts_[b];
      if (static_cast<double>(cum) >= need) break;
    }
    estimate_ = upper_of(b);
    window_ = std::clamp(estimate_, floor_, ceiling_);
  }

  std::array<std::uint32_t, kBuckets> counts_{};
  std::uint64_t weight_ = 0;
  std::uint64_t samples_ = 0;
  std::uint32_t since_decay_ = 0;
  std::uint32_t since_refresh_ = 0;
  const std::int64_t floor_;
  const std::int64_t ceiling_;
  const double percentile_;
  const std::uint32_t decay_every_;
  std::int64_t window_;
  std::int64_t estimate_ = 0;
};

class AdaptiveWindow {
 public:
  explicit AdaptiveWindow(const WaitPolicy& p) noexcept
      : est_(p.spin_floor().count(), p.spin_ceiling().count(), p.percentile()),
        window_pub_(p.mode() == WaitPolicy::Mode::hybrid ? p.spin_window().count() : est_.window()) {}

  // -- the leader ----------------------------------------------------------------------------
  std::int64_t window() const noexcept { return est_.window(); }
  void record(std::int64_t overshoot_ns) noexcept {
    est_.record(overshoot_ns);
    window_pub_.store(est_.window(), std::memory_order_relaxed);
    estimate_pub_.store(est_.estimate(), std::memory_order_relaxed);
    samples_pub_.store(est_.samples(), std::memory_order_relaxed);
  }

  // -- any thread (stats) ----------------------------------------------------------------------
  std::int64_t published_window() const noexcept { return window_pub_.load(std::memory_order_relaxed); }
  std::int64_t published_estimate() const noexcept { return estimate_pub_.load(std::memory_order_relaxed); }
  std::uint64_t published_samples() const noexcept { return samples_pub_.load(std::memory_order_relaxed); }

 private:
  OvershootEstimator est_;
  std::atomic<std::int64_t> window_pub_;
  std::atomic<std::int64_t> estimate_pub_{0};
  std::atomic<std::uint64_t> samples_pub_{0};
};

}  // namespace kairos::detail
