// lat_record_test.cpp: kairos-lat's records carry each run's histogram (HdrHistogram V2
// compressed, base64) with the run's sample count; --warm builds and runs a second system of the
// same kind first, and the record and its row label say so; --no-lateness turns kairos's
// lateness statistic off, and says so too.
#include <kairos/hdr_codec.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "native_runs.hpp"
#include "plan.hpp"
#include "report.hpp"
#include "workloads/kairos_system.hpp"

namespace {

using kairos::lat::Kind;
using kairos::lat::SystemSpec;
using kairos::lat::WorkloadSizes;

SystemSpec spec(Kind kind, const std::string& name, const std::string& wait, bool warm) {
  SystemSpec s{kind, {}, name};
  s.config.system = name;
  s.config.wait = wait;
  s.warm = warm;
  return s;
}

WorkloadSizes small() {
  WorkloadSizes z;
  z.w1.calls_per_producer = 20'000;
  z.w2.iterations = 20'000;
  z.w3.count = 2'000;
  z.w3.interval_ns = 20'000;
  z.w4.tasks = 4;
  z.w4.duration_ns = 100'000'000;
  z.w6.tasks = 10'000;
  return z;
}

std::int64_t as_int(const nlohmann::ordered_json& v) { return v.get<std::int64_t>(); }

TEST(LatRecord, TheHistogramDecodesToTheRunsSampleCount) {
  for (const SystemSpec& s : {spec(Kind::kairos, "kairos-hybrid", "hybrid", false),
                              spec(Kind::naive_stpe, "naive-stpe", "condvar", false)}) {
    for (const char* w : {"W1", "W2", "W3", "W4"}) {
      const nlohmann::ordered_json rec = kairos::lat::run_native(s, w, small(), {});
      ASSERT_TRUE(rec.contains("histogram")) << w << " on " << s.label;
      EXPECT_EQ(rec["histogram_format"], kairos::lat::kHistogramFormat);
      const kairos::LatencyHistogram h = kairos::hdr::from_base64(rec["histogram"].get<std::string>());
      const std::int64_t early = rec.contains("early_fires") ? as_int(rec["early_fires"]) : 0;
      EXPECT_GT(as_int(rec["samples"]), 0) << w;
      EXPECT_EQ(static_cast<std::int64_t>(h.count()), as_int(rec["samples"]) - early) << w << " on " << s.label;
      // The histogram holds the same samples as the exact percentiles, to its resolution (1%).
      if (early == 0) {
        EXPECT_NEAR(static_cast<double>(h.value_at_percentile(50)), static_cast<double>(as_int(rec["p50_ns"])),
                    static_cast<double>(as_int(rec["p50_ns"])) * 0.01 + 1)
            << w << " on " << s.label;
      }
    }
  }
}

TEST(LatRecord, AWorkloadWithoutSamplesHasNoHistogram) {
  const nlohmann::ordered_json rec =
      kairos::lat::run_native(spec(Kind::kairos, "kairos-hybrid", "hybrid", false), "W6", small(), {});
  EXPECT_FALSE(rec.contains("histogram"));
}

TEST(LatRecord, WarmRunsTheWorkloadOnAnotherSystemFirstAndSaysSo) {
  for (bool warm : {false, true}) {
    const SystemSpec s = spec(Kind::kairos, "kairos-hybrid", "hybrid", warm);
    const std::uint64_t before = kairos::lat::systems_built();
    const nlohmann::ordered_json rec = kairos::lat::run_native(s, "W2", small(), {});
    EXPECT_EQ(kairos::lat::systems_built() - before, warm ? 2u : 1u);
    EXPECT_EQ(rec["config"]["warm"], warm);
    EXPECT_EQ(kairos::lat::row_label(rec), warm ? "kairos-hybrid warm" : "kairos-hybrid");
    EXPECT_EQ(as_int(rec["pending_at_end"]), 1024);  // the measured system's own figures
  }
  // Peers get the same pass on their own kind of system.
  const std::uint64_t before = kairos::lat::systems_built();
  const nlohmann::ordered_json rec =
      kairos::lat::run_native(spec(Kind::naive_stpe, "naive-stpe", "condvar", true), "W1", small(), {});
  EXPECT_EQ(kairos::lat::systems_built() - before, 2u);
  EXPECT_EQ(kairos::lat::row_label(rec), "naive-stpe warm");
}

// --no-lateness: the kairos system runs with Options::record_lateness off, and the record and
// its row say so (a run without it is not labelled).
TEST(LatRecord, NoLatenessTurnsTheStatisticOffAndSaysSo) {
  for (bool record : {true, false}) {
    kairos::perf::SystemConfig c;
    c.system = "kairos-hybrid";
    c.wait = "hybrid";
    c.record_lateness = record;
    kairos::perf::KairosSystem sys(c);
    std::atomic<int> ran{0};
    for (int i = 0; i < 100; ++i) sys.execute([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    ASSERT_TRUE(sys.drain(std::chrono::seconds(30)));
    EXPECT_EQ(ran.load(), 100);
    EXPECT_EQ(sys.scheduler().stats().total().lateness.count(), record ? 100u : 0u);

    SystemSpec s = spec(Kind::kairos, "kairos-hybrid", "hybrid", false);
    s.config.record_lateness = record;
    WorkloadSizes z = small();
    z.w7.tasks = 10'000;
    const nlohmann::ordered_json rec = kairos::lat::run_native(s, "W7", z, {});
    EXPECT_EQ(rec["config"].contains("record_lateness"), !record);
    if (!record) {
      EXPECT_EQ(rec["config"]["record_lateness"], false);
    }
    EXPECT_EQ(kairos::lat::row_label(rec), record ? "kairos-hybrid" : "kairos-hybrid no-lateness");
    EXPECT_EQ(as_int(rec["inversions"]), 0);
  }
}

}  // namespace
