// WaitPolicy::adaptive()'s estimator (core/src/overshoot_estimator.hpp) driven by hand: it finds
// the injected percentile, stays within its floor and ceiling, forgets when overshoots shrink,
// follows them when they grow.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <kairos/options.hpp>

#include "overshoot_estimator.hpp"

namespace kairos::detail {
namespace {

constexpr std::int64_t kNoFloor = 0;
constexpr std::int64_t kNoCeiling = std::int64_t{1} << 40;

// A fixed permutation of 1..n (a multiplier coprime with n), so percentiles are known exactly.
std::vector<std::int64_t> shuffled(std::int64_t n) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back((i * 7919) % n + 1);
  return v;
}

TEST(OvershootEstimator, BucketsCoverEveryValueWithinAnEighth) {
  for (std::int64_t v : {0L, 1L, 7L, 8L, 15L, 16L, 17L, 1000L, 65'535L, 1'000'000L, (1L << 30) + 5}) {
    int b = OvershootEstimator::bucket_of(v);
    ASSERT_LT(b, OvershootEstimator::kBuckets);
    std::int64_t hi = OvershootEstimator::upper_of(b);
    EXPECT_GE(hi, v);
    EXPECT_LE(hi, v + v / 8) << v;
    if (b > 0) {
      EXPECT_LT(OvershootEstimator::upper_of(b - 1), v) << v;  // v is not in the bucket below
    }
  }
  EXPECT_EQ(OvershootEstimator::bucket_of(-5), 0);
  EXPECT_EQ(OvershootEstimator::bucket_of(std::int64_t{1} << 62), OvershootEstimator::kBuckets - 1);
  for (int b = 1; b < OvershootEstimator::kBuckets; ++b)
    ASSERT_EQ(OvershootEstimator::bucket_of(OvershootEstimator::upper_of(b)), b);
}

TEST(OvershootEstimator, StartsAtTheFloorWithNoEstimate) {
  OvershootEstimator e(3'000, 90'000, 0.99);
  EXPECT_EQ(e.window(), 3'000);
  EXPECT_EQ(e.estimate(), 0);
  EXPECT_EQ(e.samples(), 0u);
}

// Overshoots 1..n ns in a scrambled order: the p-th percentile is p * n.
TEST(OvershootEstimator, ConvergesToTheInjectedPercentile) {
  for (double p : {0.5, 0.9, 0.99, 0.999}) {
    const std::int64_t n = 20'000;
    OvershootEstimator e(kNoFloor, kNoCeiling, p, 1u << 30);  // no decay: the exact population
    for (std::int64_t v : shuffled(n)) e.record(v);
    e.record(1);  // the last refresh happens at a multiple of kRefreshEvery
    for (std::uint32_t i = 1; i < OvershootEstimator::kRefreshEvery; ++i) e.record(n / 2);
    const auto truth = static_cast<std::int64_t>(p * n);
    EXPECT_GE(e.estimate(), truth - truth / 100) << p;  // within the few added samples' share
    EXPECT_LE(e.estimate(), truth + truth / 8 + truth / 100) << p;  // one bucket above at most
    EXPECT_EQ(e.window(), e.estimate());
  }
}

// A heavy tail only the high percentile sees: 2% of overshoots at 80 us, the rest at 5 us.
TEST(OvershootEstimator, AHighPercentileSeesARareTail) {
  OvershootEstimator p99(kNoFloor, kNoCeiling, 0.99);
  OvershootEstimator p90(kNoFloor, kNoCeiling, 0.90);
  for (int i = 0; i < 5'000; ++i) {
    std::int64_t v = i % 50 == 0 ? 80'000 : 5'000;
    p99.record(v);
    p90.record(v);
  }
  EXPECT_GE(p99.window(), 80'000);
  EXPECT_LE(p99.window(), 90'000);
  EXPECT_GE(p90.window(), 5'000);
  EXPECT_LE(p90.window(), 5'625);
}

TEST(OvershootEstimator, RespectsItsFloorAndCeiling) {
  OvershootEstimator quiet(2'000, 40'000, 0.99);
  for (int i = 0; i < 1'000; ++i) quiet.record(100);
  EXPECT_EQ(quiet.window(), 2'000);
  EXPECT_LT(quiet.estimate(), 2'000);  // the estimate itself is reported unclamped

  OvershootEstimator loud(2'000, 40'000, 0.99);
  for (int i = 0; i < 1'000; ++i) loud.record(3'000'000);
  EXPECT_EQ(loud.window(), 40'000);
  EXPECT_GE(loud.estimate(), 3'000'000);

  OvershootEstimator between(2'000, 40'000, 0.99);
  for (int i = 0; i < 1'000; ++i) between.record(10'000);
  EXPECT_GE(between.window(), 10'000);
  EXPECT_LE(between.window(), 11'250);

  OvershootEstimator pinned(7'000, 7'000, 0.5);  // floor == ceiling: a fixed window
  for (int i = 0; i < 100; ++i) pinned.record(i * 1'000);
  EXPECT_EQ(pinned.window(), 7'000);
}

TEST(OvershootEstimator, NegativeOvershootsCountAsZero) {
  OvershootEstimator e(kNoFloor, kNoCeiling, 0.99);
  for (int i = 0; i < 100; ++i) e.record(-50'000);
  EXPECT_EQ(e.estimate(), 0);
}

// A loaded phase, then a quiet one: the window shrinks to the quiet overshoot after a few decay
// periods, and not before the loaded samples have lost their weight.
TEST(OvershootEstimator, DecaysWhenOvershootsShrink) {
  constexpr std::uint32_t kDecay = 256;
  OvershootEstimator e(500, 500'000, 0.99, kDecay);
  for (int i = 0; i < 4'000; ++i) e.record(80'000);
  ASSERT_GE(e.window(), 80'000);
  for (std::uint32_t i = 0; i < kDecay / 2; ++i) e.record(4'000);
  EXPECT_GE(e.window(), 80'000) << "half a decay period of quiet wakes must not erase the tail";
  int quiet = static_cast<int>(kDecay / 2);
  while (e.window() > 4'500 && quiet < 100'000) {
    e.record(4'000);
    ++quiet;
  }
  EXPECT_GE(e.window(), 4'000);
  EXPECT_LE(e.window(), 4'500);
  // A few halvings: the loaded weight (2 * kDecay after its own decays) falls under 1%.
  EXPECT_LE(quiet, static_cast<int>(12 * kDecay)) << "the window took too long to shrink";

  OvershootEstimator never(500, 500'000, 0.99, 1u << 30);  // without decay it stays wide
  for (int i = 0; i < 4'000; ++i) never.record(80'000);
  for (int i = 0; i < 4'000; ++i) never.record(4'000);
  EXPECT_GE(never.window(), 80'000);
}

// Overshoots that grow are followed within a few refreshes once more than 1% of them are late.
TEST(OvershootEstimator, GrowsAsSoonAsThePercentileIsLate) {
  OvershootEstimator e(500, 500'000, 0.99, 1024);
  for (int i = 0; i < 3'000; ++i) e.record(3'000);
  ASSERT_LE(e.window(), 3'375);
  int loud = 0;
  while (e.window() < 60'000 && loud < 10'000) {
    e.record(60'000);
    ++loud;
  }
  EXPECT_GE(e.window(), 60'000);
  EXPECT_LE(loud, 64) << "the window must widen within a few percent of the recent samples";
}

TEST(AdaptiveWindow, PublishesWhatTheLeaderUses) {
  AdaptiveWindow a(WaitPolicy::adaptive(std::chrono::microseconds(2), std::chrono::microseconds(30), 0.9));
  EXPECT_EQ(a.window(), 2'000);
  EXPECT_EQ(a.published_window(), 2'000);
  EXPECT_EQ(a.published_samples(), 0u);
  for (int i = 0; i < 64; ++i) a.record(10'000);
  EXPECT_EQ(a.published_window(), a.window());
  EXPECT_GE(a.window(), 10'000);
  EXPECT_LE(a.window(), 11'250);
  EXPECT_EQ(a.published_estimate(), a.window());
  EXPECT_EQ(a.published_samples(), 64u);

  AdaptiveWindow hybrid(WaitPolicy::hybrid(std::chrono::microseconds(50)));
  EXPECT_EQ(hybrid.published_window(), 50'000);
  AdaptiveWindow spin(WaitPolicy::spin());
  EXPECT_EQ(spin.published_window(), 0);
}

TEST(AdaptiveWindow, DefaultsComeFromThePolicy) {
  WaitPolicy p = WaitPolicy::adaptive();
  EXPECT_EQ(p.mode(), WaitPolicy::Mode::adaptive);
  EXPECT_STREQ(p.name(), "adaptive");
  EXPECT_EQ(p.spin_floor(), WaitPolicy::kAdaptiveFloor);
  EXPECT_EQ(p.spin_ceiling(), WaitPolicy::kAdaptiveCeiling);
  EXPECT_EQ(p.percentile(), WaitPolicy::kAdaptivePercentile);
  AdaptiveWindow a(p);
  EXPECT_EQ(a.window(), WaitPolicy::kAdaptiveFloor.count());
  for (int i = 0; i < 64; ++i) a.record(std::int64_t{1} << 40);
  EXPECT_EQ(a.window(), WaitPolicy::kAdaptiveCeiling.count());
}

// The default (Options::wait = WaitPolicy::fitted()) per host: where the kernel wakes a timed
// sleep within 50 us the window stays hybrid's former default of 50 us, the same spin; where it
// overshoots more (60-90 us on a host whose kernel wakes late), the window follows it; never past
// the ceiling.
TEST(AdaptiveWindow, TheDefaultIsHybrid50usWhereThatSufficesAndWidensWhereTheHostWakesLater) {
  const WaitPolicy p = kairos::Options{}.wait;
  EXPECT_EQ(p.mode(), WaitPolicy::Mode::adaptive);
  EXPECT_EQ(p.spin_floor(), std::chrono::microseconds(50));
  EXPECT_EQ(p.spin_ceiling(), WaitPolicy::kAdaptiveCeiling);
  AdaptiveWindow quiet_host(p);
  EXPECT_EQ(quiet_host.window(), 50'000);
  for (int i = 0; i < 4096; ++i) quiet_host.record(2'000 + (i % 7) * 5'000);  // 2..32 us late
  EXPECT_EQ(quiet_host.window(), 50'000) << "a host where 50 us suffices spins exactly as before";
  AdaptiveWindow late_host(p);
  for (int i = 0; i < 4096; ++i) late_host.record(60'000 + (i % 4) * 10'000);  // 60..90 us late
  EXPECT_GE(late_host.window(), 90'000) << "the window must cover the host's overshoot";
  EXPECT_LE(late_host.window(), 90'000 + 90'000 / 8);
  AdaptiveWindow awful_host(p);
  for (int i = 0; i < 64; ++i) awful_host.record(5'000'000);
  EXPECT_EQ(awful_host.window(), WaitPolicy::kAdaptiveCeiling.count());
}

}  // namespace
}  // namespace kairos::detail
