// pacer_report_test.cpp: the Pacer's service-time and start-lag histograms beside the response
// time, the warm-up, the intended start passed to f, the report printer, a report as an .hlog,
// and the pacing error at 100,000 calls/s (printed, bounded generously).
#include <kairos/hdr_codec.hpp>
#include <kairos/kairos.hpp>
#include <kairos/pacer.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;

std::int64_t spin_for(std::chrono::nanoseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  std::int64_t n = 0;
  while (std::chrono::steady_clock::now() < until) ++n;
  return n;
}

TEST(PacerReport, ServiceTimeBesideResponseTimeAndIntendedStartGiven) {
  kairos::Scheduler s{kairos::Options{.wait = kairos::WaitPolicy::spin()}};
  kairos::Pacer pacer{s};
  std::vector<std::int64_t> lag;  // start minus the intended start f was given
  // Every 10th call takes 3 ms at a 1 ms period: the calls behind it wait (response) but do not
  // take longer themselves (service).
  const kairos::PacerReport r = pacer.run_count(
      [&](std::uint64_t n, kairos::SteadyClock::time_point intended) {
        lag.push_back((kairos::SteadyClock::now() - intended).count());
        if (n % 10 == 9) spin_for(3ms);
      },
      1ms, 40);
  ASSERT_EQ(r.calls, 40u);
  ASSERT_EQ(lag.size(), 40u);
  for (std::int64_t l : lag) EXPECT_GE(l, 0);  // never before its intended start
  EXPECT_EQ(r.service.count(), 40u);
  EXPECT_EQ(r.start_lag.count(), 40u);
  EXPECT_GE(r.service.max(), 3'000'000);
  EXPECT_GE(r.histogram.value_at_percentile(90), 1'000'000);  // waited behind a slow call
  EXPECT_LT(r.service.value_at_percentile(50), 1'000'000);    // its own work is tiny
  EXPECT_GE(r.start_lag.max(), 1'000'000);
  EXPECT_EQ(r.max_behind.count(), r.start_lag.max());
  const std::string text = kairos::format_report(r);
  for (const char* line : {"40 calls (+0 warm-up)", "response (corrected)", "service (uncorrected)", "start lag",
                           "response time spectrum (us)", "1/(1-Percentile)"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(PacerReport, WarmupCallsAreMadeButNotReported) {
  kairos::Scheduler s;
  kairos::Pacer pacer{s};
  pacer.set_warmup(5);
  std::vector<std::uint64_t> seen;
  const kairos::PacerReport r = pacer.run_count([&](std::uint64_t n) {
    seen.push_back(n);
    if (n < 5) spin_for(20ms);  // slow warm-up calls: none of this may show in the report
  }, 1ms, 10);
  EXPECT_EQ(seen.size(), 15u);
  EXPECT_EQ(r.calls, 10u);
  EXPECT_EQ(r.warmup_calls, 5u);
  EXPECT_EQ(r.histogram.count(), 10u);
  EXPECT_LT(r.service.max(), 20'000'000);
}

TEST(PacerReport, ReportAsIntervalLog) {
  kairos::Scheduler s;
  kairos::Pacer pacer{s};
  const kairos::PacerReport r = pacer.run_count([] {}, 200us, 50);
  std::stringstream log;
  kairos::hdr::HlogWriter w(log);
  w.write(r.histogram, 0, 0.01, "response");
  w.write(r.service, 0, 0.01, "service");
  const kairos::hdr::Hlog back = kairos::hdr::read_hlog(log);
  ASSERT_EQ(back.intervals.size(), 2u);
  EXPECT_EQ(back.intervals[0].histogram.count(), 50u);
  EXPECT_EQ(back.intervals[1].tag, "service");
}

// The pacing error (actual start minus intended, empty callee) at 100,000 calls/s, with the calls
// on the scheduler thread (concurrency 1) and on 4 calling threads. Printed; bounded generously.
void pacing_error_at_100k(unsigned concurrency) {
  kairos::Scheduler s{kairos::Options{.wait = kairos::WaitPolicy::spin()}};
  kairos::Pacer pacer{s};
  pacer.set_warmup(10'000);
  pacer.set_concurrency(concurrency);
  const kairos::PacerReport r = pacer.run_for([] {}, kairos::Pacer::period_for_rate(100'000), 2s);
  const auto& e = r.start_lag;
  std::printf("pacing error at 100k calls/s, concurrency %u (start - intended, empty callee, %llu calls): p50 %lld ns, "
              "p99 %lld ns, p99.9 %lld ns, max %lld ns; achieved %.0f calls/s\n",
              concurrency, static_cast<unsigned long long>(e.count()), static_cast<long long>(e.value_at_percentile(50)),
              static_cast<long long>(e.value_at_percentile(99)), static_cast<long long>(e.value_at_percentile(99.9)),
              static_cast<long long>(e.max()), r.achieved_rate);
  ::testing::Test::RecordProperty("pacing_error_p50_ns", std::to_string(e.value_at_percentile(50)));
  ::testing::Test::RecordProperty("pacing_error_p99_ns", std::to_string(e.value_at_percentile(99)));
  ::testing::Test::RecordProperty("pacing_error_max_ns", std::to_string(e.max()));
  EXPECT_EQ(r.calls, 200'000u);
  EXPECT_EQ(r.concurrency, concurrency);
  EXPECT_EQ(e.count(), 200'000u);
  EXPECT_EQ(e.below_zero(), 0u);  // never early
  // Generous: a loaded 2-core machine. With 4 calling threads a release wakes a thread that
  // shares the 2 cores with the scheduler's spinning thread and the 3 others.
  EXPECT_LT(e.value_at_percentile(50), concurrency == 1 ? 1'000'000 : 50'000'000);
}

TEST(PacerReport, PacingErrorAt100kCallsPerSecond) { pacing_error_at_100k(1); }
TEST(PacerReport, PacingErrorAt100kCallsPerSecondOnFourThreads) { pacing_error_at_100k(4); }

// Interval snapshots written as an interval log, read back: the intervals add up to the run, and
// the log's StartTime and BaseTime are the first measured call's intended start (after the start
// delay and the warm-up), which the Pacer wrote itself (the log was made with start_later).
TEST(PacerReport, IntervalsWrittenAsAnIntervalLogAddUpToTheRun) {
  kairos::Scheduler s;
  kairos::Pacer pacer{s};
  pacer.set_warmup(20);
  pacer.set_concurrency(2);
  std::ostringstream text;
  kairos::hdr::HlogWriter log(text, kairos::hdr::start_later);
  pacer.set_intervals(20ms, kairos::Pacer::hlog_intervals(log, "paced"));
  const kairos::PacerReport r = pacer.run_count([] {}, 1ms, 150);
  std::istringstream in(text.str());
  const kairos::hdr::Hlog back = kairos::hdr::read_hlog(in);
  ASSERT_GE(back.intervals.size(), 5u);  // 150 ms of calls in 20 ms intervals, at least
  kairos::LatencyHistogram sum;
  for (std::size_t k = 0; k < back.intervals.size(); ++k) {
    EXPECT_EQ(back.intervals[k].tag, "paced");
    EXPECT_NEAR(back.intervals[k].start_s, 0.020 * static_cast<double>(k), 1e-9);
    sum.merge(back.intervals[k].histogram);
  }
  EXPECT_EQ(sum.count(), 150u);  // the warm-up is in no interval
  EXPECT_EQ(sum.count(), r.histogram.count());
  EXPECT_EQ(sum.max(), kairos::hdr::decode(kairos::hdr::encode_v2(r.histogram)).max());
  const double measured_from = kairos::Pacer::epoch_seconds(r.measured_from);  // written to the ms
  EXPECT_NEAR(back.start_time_s, measured_from, 0.0006);
  EXPECT_NEAR(back.base_time_s, measured_from, 0.0006);
}

// The run's start on the wall clock: the start delay after the run was submitted, and the
// measured part the warm-up later (20 calls of 1 ms), exactly.
TEST(PacerReport, StartTimesAreTheRunsOnTheWallClock) {
  kairos::Scheduler s;
  kairos::Pacer pacer{s, 5ms};
  pacer.set_warmup(20);
  const auto before = std::chrono::system_clock::now();
  const kairos::PacerReport r = pacer.run_count([] {}, 1ms, 10);
  const auto after = std::chrono::system_clock::now();
  EXPECT_GE(r.start_time, before + 5ms);
  EXPECT_LE(r.measured_from, after);  // the calls happen after their intended start
  EXPECT_EQ(r.measured_from - r.start_time, 20ms);
}

// write_hlog(): a report as an interval log that HdrHistogram's tools place in time by
// themselves: StartTime and BaseTime the report's measured_from, one interval of the whole run.
TEST(PacerReport, WriteHlogPlacesTheReportInTime) {
  kairos::Scheduler s;
  kairos::Pacer pacer{s};
  pacer.set_warmup(5);
  const kairos::PacerReport r = pacer.run_count([] {}, 1ms, 20);
  std::stringstream text;
  kairos::write_hlog(text, r, "paced");
  const kairos::hdr::Hlog back = kairos::hdr::read_hlog(text);
  EXPECT_NEAR(back.start_time_s, kairos::Pacer::epoch_seconds(r.measured_from), 0.0006);
  EXPECT_NEAR(back.base_time_s, kairos::Pacer::epoch_seconds(r.measured_from), 0.0006);
  EXPECT_GT(back.start_time_s, 1.6e9);  // an epoch time, not 0
  ASSERT_EQ(back.intervals.size(), 1u);
  EXPECT_EQ(back.intervals[0].tag, "paced");
  EXPECT_EQ(back.intervals[0].start_s, 0.0);
  EXPECT_NEAR(back.intervals[0].length_s, std::chrono::duration<double>(r.elapsed).count(), 0.0006);
  EXPECT_EQ(back.intervals[0].histogram.count(), 20u);
}

}  // namespace
