// gate_test.cpp: kairos-gate's logic: every input format, limits with units, paired ratios
// against unpaired medians, a 20% shift, the three verdicts, early fires, machine mismatch, and
// A/B mode (two builds run alternately): ABBA order, tagging and pairing of rounds, verdicts
// decided only with confidence, the record's round trip.
#include "gate.hpp"

#include <kairos/hdr_codec.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace gate = kairos::gate;
using gate::Verdict;

std::string record(const std::string& workload, const std::string& system, int repeat, double p50, double p99,
                   const std::string& extra = "") {
  return R"({"workload":")" + workload + R"(","system":")" + system + R"(","repeat":)" + std::to_string(repeat) +
         R"(,"p50_ns":)" + std::to_string(p50) + R"(,"p99_ns":)" + std::to_string(p99) + extra + "}\n";
}

// Load factors of a noisy machine: each repeat slows both systems alike.
const std::vector<double> kLoad = {1.0, 7.0, 0.9, 30.0, 1.4, 2.0, 0.8, 12.0, 1.1, 3.0};

TEST(GateLimits, NeedAUnit) {
  EXPECT_EQ(gate::parse_limit("15%").kind, gate::Limit::relative);
  EXPECT_DOUBLE_EQ(gate::parse_limit("15%").value, 0.15);
  EXPECT_DOUBLE_EQ(gate::parse_limit("10us").value, 10'000);
  EXPECT_EQ(gate::parse_limit("10us").kind, gate::Limit::absolute);
  EXPECT_DOUBLE_EQ(gate::parse_limit("1.5ms").value, 1.5e6);
  EXPECT_EQ(gate::parse_limit("0.5x").kind, gate::Limit::ratio);
  for (const char* bad : {"10", "", "x", "10 parsecs", "-5%", "nan%", "1e999us", "%"})
    EXPECT_THROW(gate::parse_limit(bad), gate::BadInput) << bad;
  EXPECT_THROW(gate::parse_limit_assignment("p99=10"), gate::BadInput);
  EXPECT_EQ(gate::parse_limit_assignment("p99_ns=10us").first, "p99");
}

TEST(GateInput, KairosLatLinesWithAnyWorkloadName) {
  const auto runs = gate::parse_runs(record("order-send", "mine", 1, 800, 2000, R"(,"machine":{"cpu":"X","nproc":2})"), "t");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].workload, "order-send");
  EXPECT_EQ(runs[0].repeat, 1);
  EXPECT_EQ(runs[0].machine, "X, 2 CPUs");
  EXPECT_DOUBLE_EQ(runs[0].figures.at("p99"), 2000);
  EXPECT_THROW(gate::parse_runs(R"({"system":"a","p50_ns":1})", "t"), gate::BadInput);
  EXPECT_THROW(gate::parse_runs(R"({"workload":"w","system":"a","p50_ns":1,"p50":2})", "t"), gate::BadInput);
  EXPECT_THROW(gate::parse_runs(R"({"workload":"w","system":"a","tasks_per_s":-1})", "t"), gate::BadInput);
  EXPECT_THROW(gate::parse_runs("{not json\n", "t"), gate::BadInput);
  EXPECT_THROW(gate::parse_runs("", "t"), gate::BadInput);
  EXPECT_THROW(gate::parse_runs("hello", "t"), gate::BadInput);
}

// Google Benchmark's console output (the default format) opens with the date, which an .hlog's
// reader took for an interval line ("hlog line 1: expected 4 comma-separated fields"). It, its
// coloured form and CSV are named, with the flag that gives JSON.
TEST(GateInput, GoogleBenchmarkConsoleOutputAsksForJson) {
  const std::string console =
      "2026-11-27T14:00:00+00:00\n"
      "Running ./my_bench\n"
      "Run on (2 X 2400 MHz CPU s)\n"
      "Load Average: 0.52, 0.41, 0.30\n"
      "-------------------------------------------------------------\n"
      "Benchmark                   Time             CPU   Iterations\n"
      "-------------------------------------------------------------\n"
      "BM_Send/repeats:10       12.3 ns         12.3 ns     56789012\n";
  const std::string coloured =  // --benchmark_color=true: the header and rows in ANSI colours
      "\x1b[1m\x1b[32mBenchmark                   Time             CPU   Iterations\x1b[0m\n"
      "\x1b[32mBM_Send        \x1b[0m\x1b[33m      12.3 ns \x1b[0m\x1b[36m  56789012\x1b[0m\n";
  const std::string csv = "name,iterations,real_time,cpu_time,time_unit,bytes_per_second\n\"BM_Send\",1,2,3,ns,,\n";
  for (const auto& [text, format] : {std::pair{console, "console"}, {coloured, "console"}, {csv, "CSV"}}) {
    try {
      (void)gate::parse_runs(text, "now.txt");
      ADD_FAILURE() << "accepted Google Benchmark " << format << " output";
    } catch (const gate::BadInput& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("Google Benchmark ") + format + " output"), std::string::npos) << what;
      EXPECT_NE(what.find("--benchmark_format=json"), std::string::npos) << what;
      EXPECT_EQ(what.find("hlog"), std::string::npos) << what;
    }
  }
}

TEST(GateInput, HistogramJsonLines) {
  kairos::LatencyHistogram h;
  for (int i = 1; i <= 100; ++i) h.record(i * 10);
  h.record(-1);
  std::string line = h.to_json();
  line.insert(1, R"("workload":"order-send","repeat":3,)");
  const auto runs = gate::parse_runs(line, "dir/h.jsonl");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].workload, "order-send");
  EXPECT_EQ(runs[0].system, "");  // none given: the group is named by its workload alone
  EXPECT_DOUBLE_EQ(runs[0].figures.at("p50"), static_cast<double>(h.value_at_percentile(50)));
  EXPECT_DOUBLE_EQ(runs[0].figures.at("early_fires"), 1);
  EXPECT_DOUBLE_EQ(runs[0].figures.at("stddev"), h.stddev());
  // Without a workload: the options', else the file's stem.
  EXPECT_EQ(gate::parse_runs(h.to_json(), "dir/send.jsonl")[0].workload, "send");
  EXPECT_EQ(gate::parse_runs(h.to_json(), "x", {.workload = "w", .system = "s"})[0].system, "s");
  EXPECT_THROW(gate::parse_runs(R"({"kind":"other"})", "t"), gate::BadInput);
  EXPECT_THROW(gate::parse_runs(R"({"kind":"kairos.latency_histogram","version":1})", "t"), gate::BadInput);
}

TEST(GateInput, HdrHistogramIntervalLogs) {
  std::ostringstream log;
  kairos::hdr::HlogWriter w(log, 1.7e9);
  for (int k = 0; k < 4; ++k) {
    kairos::LatencyHistogram h;
    for (int i = 0; i < 100; ++i) h.record(1000 * (k + 1) + i);
    w.write(h, k, 1.0, k < 2 ? "order-send" : "");
  }
  const auto runs = gate::parse_runs(log.str(), "logs/run.hlog");
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].workload, "order-send");
  EXPECT_EQ(runs[1].repeat, 1);
  EXPECT_EQ(runs[2].workload, "run");  // untagged: the file's stem
  EXPECT_EQ(runs[2].repeat, 0);
  EXPECT_NEAR(runs[3].figures.at("p50"), 4050, 4050 / 128.0);
  EXPECT_THROW(gate::parse_runs("#[Histogram log format version 1.3]\n0.0,1.0,2.0,@@@@\n", "t"), gate::BadInput);
}

std::string benchmark_json(const std::vector<double>& times, const std::string& unit = "us", const std::string& host = "ci") {
  std::string s = R"({"context":{"host_name":")" + host + R"(","num_cpus":2},"benchmarks":[)";
  for (std::size_t i = 0; i < times.size(); ++i) {
    s += R"({"name":"BM_send/64","run_name":"BM_send/64","run_type":"iteration","repetitions":)" +
         std::to_string(times.size()) + R"(,"repetition_index":)" + std::to_string(i) +
         R"(,"iterations":1000,"real_time":)" + std::to_string(times[i]) + R"(,"cpu_time":)" +
         std::to_string(times[i] * 0.9) + R"(,"time_unit":")" + unit + R"(","items_per_second":)" +
         std::to_string(1e6 / times[i]) + "},";
  }
  s += R"({"name":"BM_send/64_mean","run_name":"BM_send/64","run_type":"aggregate","aggregate_name":"mean","real_time":1,"cpu_time":1,"time_unit":"us"}]})";
  return s;
}

TEST(GateInput, GoogleBenchmarkJsonWithRepetitions) {
  const auto runs = gate::parse_runs(benchmark_json({1.5, 2.0, 2.5}), "b.json");
  ASSERT_EQ(runs.size(), 3u);  // the aggregate is skipped
  EXPECT_EQ(runs[0].workload, "BM_send/64");
  EXPECT_EQ(runs[2].repeat, 2);
  EXPECT_DOUBLE_EQ(runs[0].figures.at("real_time"), 1500);  // us -> ns
  EXPECT_DOUBLE_EQ(runs[1].figures.at("cpu_time"), 1800);
  EXPECT_TRUE(runs[0].figures.count("items_per_s"));
  EXPECT_EQ(gate::unit_of("items_per_s"), gate::Unit::per_s);
  EXPECT_EQ(runs[0].machine, "ci, 2 CPUs");
  EXPECT_THROW(gate::parse_runs(R"({"benchmarks":[{"name":"a","real_time":1,"time_unit":"fortnight"}]})", "t"), gate::BadInput);
}

gate::GateOptions reference_options(const std::string& figure, double ratio) {
  gate::GateOptions o;
  o.reference = "peer";
  o.max_ratios[figure] = {gate::Limit::ratio, ratio};
  return o;
}

TEST(GatePaired, PairedRatiosPassWhereUnpairedMediansFail) {
  // The issue's failing invocation: paired ratios 4.9, 1.45, 0.91, 36.5, 3.1 (median 3.1), with the
  // peer's own p99 swinging by load from repeat to repeat.
  const std::vector<double> ratio = {4.9, 1.45, 0.91, 36.5, 3.1}, peer = {10, 100, 1, 10, 1};
  std::string text;
  std::vector<double> mine;
  for (int k = 0; k < 5; ++k) {
    mine.push_back(peer[k] * ratio[k] * 1000);
    text += record("W3", "kairos", k, 100, peer[k] * ratio[k] * 1000);
    text += record("W3", "peer", k, 1000, peer[k] * 1000);
  }
  std::vector<double> theirs = {10'000, 100'000, 1000, 10'000, 1000};
  EXPECT_GT(gate::median(mine) / gate::median(theirs), 4.0);  // unpaired medians: 4.9x, would fail
  const auto runs = gate::parse_runs(text, "t");
  const gate::Comparison c = gate::compare_to_reference(runs, reference_options("p99", 4.0));
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(c.rows[0].statistic, 3.1);
  EXPECT_EQ(c.rows[0].verdict, Verdict::pass);
  EXPECT_LE(c.rows[0].ci_low, 3.1);
  EXPECT_GE(c.rows[0].ci_high, 3.1);
}

TEST(GatePaired, TwentyPercentShiftOnALoadedMachineIsFlagged) {
  std::string same, slower;
  for (std::size_t k = 0; k < kLoad.size(); ++k) {
    const double noise = 1.0 + 0.03 * std::sin(static_cast<double>(k) * 1.7);  // +-3% per run
    same += record("W3", "kairos", static_cast<int>(k), 300 * kLoad[k] * noise, 1);
    slower += record("W3", "kairos", static_cast<int>(k), 1.2 * 300 * kLoad[k] * noise, 1);
    same += record("W3", "peer", static_cast<int>(k), 1000 * kLoad[k], 1);
    slower += record("W3", "peer", static_cast<int>(k), 1000 * kLoad[k], 1);
  }
  const auto o = reference_options("p50", 0.33);
  const auto a = gate::compare_to_reference(gate::parse_runs(same, "t"), o);
  const auto b = gate::compare_to_reference(gate::parse_runs(slower, "t"), o);
  EXPECT_EQ(gate::overall({a}), Verdict::pass);
  EXPECT_EQ(gate::overall({b}), Verdict::regression);
  EXPECT_NEAR(b.rows[0].statistic, 0.36, 0.015);
}

TEST(GatePaired, PairsByRepeatNotByOrder) {
  std::string text;
  // The peer's runs come in another order; pairing by repeat still gives ratio 0.1 for each.
  for (int k : {0, 1, 2, 3, 4}) text += record("W", "kairos", k, 100 * kLoad[k], 1);
  for (int k : {4, 3, 2, 1, 0}) text += record("W", "peer", k, 1000 * kLoad[k], 1);
  const auto c = gate::compare_to_reference(gate::parse_runs(text, "t"), reference_options("p50", 0.11));
  EXPECT_DOUBLE_EQ(c.rows[0].statistic, 0.1);
  EXPECT_DOUBLE_EQ(c.rows[0].ci_high, 0.1);
  EXPECT_EQ(c.rows[0].verdict, Verdict::pass);
}

TEST(GateVerdicts, InconclusiveWhenTooFewOrTooNoisy) {
  std::string text;
  for (int k = 0; k < 3; ++k) text += record("W", "kairos", k, 100, 1) + record("W", "peer", k, 1000, 1);
  auto c = gate::compare_to_reference(gate::parse_runs(text, "t"), reference_options("p50", 0.5));
  EXPECT_EQ(c.rows[0].verdict, Verdict::inconclusive);  // 3 pairs < --min-runs 5
  // Median beyond the limit, but the interval reaches below it.
  text.clear();
  const std::vector<double> ratios = {0.2, 0.3, 0.9, 0.95, 1.0, 0.25, 0.98};
  for (std::size_t k = 0; k < ratios.size(); ++k)
    text += record("W", "kairos", static_cast<int>(k), 1000 * ratios[k], 1) + record("W", "peer", static_cast<int>(k), 1000, 1);
  c = gate::compare_to_reference(gate::parse_runs(text, "t"), reference_options("p50", 0.85));
  EXPECT_EQ(c.rows[0].verdict, Verdict::inconclusive);
  EXPECT_LT(c.rows[0].ci_low, 0.85);
  EXPECT_EQ(gate::overall({c}), Verdict::inconclusive);
}

std::vector<gate::Run> bench_runs(double scale, double noise, std::uint64_t seed, const std::string& host = "ci") {
  std::vector<double> t;
  std::uint64_t x = seed;
  for (int i = 0; i < 10; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(x >> 11) / 9007199254740992.0;  // [0, 1)
    t.push_back(scale * (1.0 + noise * (2 * u - 1)));
  }
  return gate::parse_runs(benchmark_json(t, "ns", host), "b.json");
}

TEST(GateBaseline, MannWhitneyFlagsATwentyPercentShiftAndPassesTheSame) {
  gate::GateOptions o;
  o.tolerances["real_time"] = gate::parse_limit("10%");
  const auto base = bench_runs(1000, 0.08, 1);
  const auto same = gate::compare_to_baseline(base, bench_runs(1000, 0.08, 2), o);
  const auto slow = gate::compare_to_baseline(base, bench_runs(1200, 0.08, 3), o);
  EXPECT_EQ(gate::overall({same}), Verdict::pass);
  EXPECT_EQ(gate::overall({slow}), Verdict::regression);
  EXPECT_LT(slow.rows[0].p_value, 0.01);
  EXPECT_NEAR(slow.rows[0].statistic, 0.2, 0.08);
  // A rate: lower is worse.
  gate::GateOptions r;
  r.tolerances["items_per_s"] = gate::parse_limit("10%");
  EXPECT_EQ(gate::overall({gate::compare_to_baseline(base, bench_runs(1200, 0.08, 3), r)}), Verdict::regression);
  EXPECT_EQ(gate::overall({gate::compare_to_baseline(base, bench_runs(800, 0.08, 3), r)}), Verdict::pass);
  // An absolute limit in ns.
  gate::GateOptions a;
  a.tolerances["real_time"] = gate::parse_limit("500ns");
  EXPECT_EQ(gate::overall({gate::compare_to_baseline(base, bench_runs(1200, 0.08, 3), a)}), Verdict::pass);
}

TEST(GateBaseline, BeyondTheLimitButNotSignificantIsInconclusive) {
  gate::GateOptions o;
  o.tolerances["real_time"] = gate::parse_limit("10%");
  const auto base = bench_runs(1000, 0.9, 4);
  const auto c = gate::compare_to_baseline(base, bench_runs(1150, 0.9, 5), o);
  if (c.rows[0].statistic > 0.10) {
    EXPECT_GE(c.rows[0].p_value, 0.05);
    EXPECT_EQ(c.rows[0].verdict, Verdict::inconclusive);
  } else {
    EXPECT_EQ(c.rows[0].verdict, Verdict::pass);
  }
  // Fewer runs than --min-runs on a side.
  o.min_runs = 11;
  EXPECT_EQ(gate::overall({gate::compare_to_baseline(base, bench_runs(2000, 0.01, 5), o)}), Verdict::inconclusive);
}

TEST(GateBaseline, MachineMismatchIsAnErrorUnlessAllowed) {
  gate::GateOptions o;
  o.tolerances["real_time"] = gate::parse_limit("10%");
  const auto base = bench_runs(1000, 0.05, 1, "laptop");
  EXPECT_THROW(gate::compare_to_baseline(base, bench_runs(1000, 0.05, 2, "ci"), o), gate::BadInput);
  o.allow_machine_mismatch = true;
  const auto c = gate::compare_to_baseline(base, bench_runs(1000, 0.05, 2, "ci"), o);
  ASSERT_EQ(c.notes.size(), 2u);  // the mismatch, then the rule of the verdict
  EXPECT_NE(c.notes[0].find("laptop"), std::string::npos);
}

// Two clusters of run times: the U test (ranks) finds current worse while the bootstrap interval
// of the medians' ratio spans 0 (a resampled median may fall in either cluster). The verdict is
// the U test's, and the row says so beside the interval (it printed "+34% [-50% .. +100%]"
// beside REGRESSION with no word on what decided).
TEST(GateBaseline, RegressionSaysTheUTestDecidedWhenTheIntervalSpansZero) {
  gate::GateOptions o;
  o.tolerances["real_time"] = gate::parse_limit("10%");
  const std::vector<double> base = {100, 100, 100, 100, 100, 200, 200, 200, 200, 200};
  const std::vector<double> cur = {101, 101, 101, 201, 201, 201, 201, 201, 201, 201};
  const auto c = gate::compare_to_baseline(gate::parse_runs(benchmark_json(base, "ns", "ci"), "b.json"),
                                           gate::parse_runs(benchmark_json(cur, "ns", "ci"), "c.json"), o);
  ASSERT_EQ(c.rows.size(), 1u);
  const gate::Row& row = c.rows[0];
  EXPECT_EQ(row.verdict, Verdict::regression) << row.p_value;
  EXPECT_LE(row.ci_low, 0);
  EXPECT_NE(row.note.find("decided by the U test: p = "), std::string::npos) << row.note;
  EXPECT_NE(row.note.find("the interval spans 0"), std::string::npos) << row.note;
  ASSERT_FALSE(c.notes.empty());
  EXPECT_NE(c.notes.back().find("does not decide"), std::string::npos) << c.notes.back();
}

TEST(GateVerdicts, EarlyFiresAreARegressionUnlessAllowed) {
  std::string text;
  for (int k = 0; k < 5; ++k)
    text += record("W3", "kairos", k, 100, 1, k == 2 ? R"(,"early_fires":1)" : R"(,"early_fires":0)") +
            record("W3", "peer", k, 1000, 1);
  auto o = reference_options("p50", 0.5);
  EXPECT_EQ(gate::overall({gate::compare_to_reference(gate::parse_runs(text, "t"), o)}), Verdict::regression);
  o.allow_early_fires = true;
  EXPECT_EQ(gate::overall({gate::compare_to_reference(gate::parse_runs(text, "t"), o)}), Verdict::pass);
}

TEST(GateVerdicts, BadInputIsNeverAPass) {
  const auto runs = gate::parse_runs(record("W", "kairos", 0, 1, 1), "t");
  EXPECT_THROW(gate::compare_to_reference(runs, reference_options("p50", 0.5)), gate::BadInput);  // no peer
  std::string text;
  for (int k = 0; k < 5; ++k) text += record("W", "kairos", k, 1, 1) + record("W", "peer", k, 1, 1);
  EXPECT_THROW(gate::compare_to_reference(gate::parse_runs(text, "t"), reference_options("p99.9", 0.5)), gate::BadInput);
  auto pct = reference_options("p50", 0.5);
  pct.max_ratios["p50"] = gate::parse_limit("50%");
  EXPECT_THROW(gate::compare_to_reference(gate::parse_runs(text, "t"), pct), gate::BadInput);
  gate::GateOptions o;
  o.tolerances["cpu_time"] = gate::parse_limit("10%");
  EXPECT_THROW(gate::compare_to_baseline(bench_runs(1, 0, 1), gate::parse_runs(text, "t"), o), gate::BadInput);
}

TEST(GateStatistics, MannWhitneyExactAndApproximate) {
  // Exact, no ties: 3 vs 3 completely separated: 1 arrangement of C(6,3) = 20.
  EXPECT_NEAR(gate::mann_whitney_p_greater({4, 5, 6}, {1, 2, 3}), 1.0 / 20, 1e-12);
  EXPECT_NEAR(gate::mann_whitney_p_greater({1, 2, 3}, {4, 5, 6}), 1.0, 1e-12);
  EXPECT_NEAR(gate::mann_whitney_p_greater({1, 4, 5}, {2, 3, 6}), 13.0 / 20, 1e-12);  // U = 4: 13 of 20 arrangements reach it
  // Normal approximation (ties): identical samples are not significant.
  EXPECT_GT(gate::mann_whitney_p_greater({1, 1, 2, 2, 3}, {1, 1, 2, 2, 3}), 0.4);
  std::vector<double> hi, lo;
  for (int i = 0; i < 30; ++i) hi.push_back(100 + i), lo.push_back(i);
  EXPECT_LT(gate::mann_whitney_p_greater(hi, lo), 1e-6);
}

TEST(GateOutput, UnitsAndSpreadEverywhere) {
  EXPECT_EQ(gate::format_value(812, gate::Unit::ns), "812 ns");
  EXPECT_EQ(gate::format_value(12'500, gate::Unit::ns), "12.5 us");
  EXPECT_EQ(gate::format_value(3.2e6, gate::Unit::ns), "3.2 ms");
  EXPECT_EQ(gate::format_value(1.25e6, gate::Unit::per_s), "1.25 M/s");
  EXPECT_EQ(gate::format_percent(0.123), "+12.3%");
  EXPECT_EQ(gate::format_percent(4468658.837), "4.47e+06x");  // never +446865883.7%
  std::string text;
  for (int k = 0; k < 5; ++k) text += record("W3", "kairos", k, 100 + k, 1) + record("W3", "peer", k, 1000, 1);
  const std::string table = gate::render_table({gate::compare_to_reference(gate::parse_runs(text, "t"), reference_options("p50", 0.5))});
  EXPECT_NE(table.find("102 ns (100 ns .. 104 ns, n=5)"), std::string::npos) << table;
  EXPECT_NE(table.find("1 us (1 us .. 1 us, n=5)"), std::string::npos) << table;
  EXPECT_NE(table.find("verdict: PASS"), std::string::npos) << table;
}

// ---- A/B mode --------------------------------------------------------------------------------

// One run as a command prints it: kairos-lat's form, repeat 1 as every single-run invocation.
gate::Run one_run(const std::string& system, double p50, const std::string& extra = "") {
  auto runs = gate::parse_runs(record("W3", system, 1, p50, 1, extra), "cmd");
  return runs.front();
}

// An A/B record of len(base) rounds: round k's baseline p50 base[k], candidate cand[k].
std::vector<gate::Run> ab_record(const std::vector<double>& base, const std::vector<double>& cand) {
  gate::AbRecord rec;
  for (std::size_t k = 0; k < base.size(); ++k) rec.add_round({one_run("kairos", base[k])}, {one_run("kairos", cand[k])});
  return rec.runs();
}

gate::GateOptions ab_options(const char* tolerance = "10%") {
  gate::GateOptions o;
  o.tolerances["p50"] = gate::parse_limit(tolerance);
  return o;
}

// The machine's state moves a run's p50 by up to 2x from round to round (docs/latency-tools.md:
// W3 p50 from ~490 ns to ~1.16 us within a minute); both runs of a round see the same state.
const std::vector<double> kState = {1.0, 1.0, 2.3, 2.4, 0.9, 1.1, 2.2, 1.0, 1.05, 2.35};
const std::vector<double> kJitter = {1.00, 1.03, 0.98, 1.02, 0.97, 1.01, 1.04, 0.99, 0.96, 1.02};

TEST(GateAb, AbbaOrder) {
  const std::vector<bool> want = {true, false, true, false, true, false};
  for (unsigned r = 0; r < want.size(); ++r) EXPECT_EQ(gate::baseline_first(r), want[r]) << "round " << r;
}

TEST(GateAb, RoundsAreTaggedAndPairedByRound) {
  gate::AbRecord rec;
  rec.add_round({one_run("kairos", 100), one_run("peer", 900)}, {one_run("kairos", 120), one_run("peer", 910)});
  rec.add_round({one_run("kairos", 200), one_run("peer", 800)}, {one_run("kairos", 240), one_run("peer", 820)});
  EXPECT_EQ(rec.rounds(), 2u);
  ASSERT_EQ(rec.runs().size(), 8u);
  // Each side's runs of a group are numbered over the rounds; both runs of a round share it.
  std::map<std::string, std::vector<std::int64_t>> repeats;
  for (const gate::Run& r : rec.runs())
    repeats[r.config.at(gate::kBuildKey).get<std::string>() + " " + r.system].push_back(*r.repeat);
  const std::vector<std::int64_t> rounds = {0, 1};
  EXPECT_EQ(repeats["baseline kairos"], rounds);
  EXPECT_EQ(repeats["candidate kairos"], rounds);
  EXPECT_EQ(repeats["baseline peer"], rounds);
  EXPECT_EQ(repeats["candidate peer"], rounds);
  gate::GateOptions o = ab_options();
  o.min_runs = 2;
  const gate::Comparison c = gate::compare_ab(rec.runs(), o);
  ASSERT_EQ(c.rows.size(), 2u);  // kairos and peer, each judged against its own baseline runs
  for (const gate::Row& row : c.rows) {
    if (row.group.find("kairos") != std::string::npos) {
      EXPECT_DOUBLE_EQ(row.statistic, 1.2);  // 120/100 and 240/200, not 240/100
      EXPECT_EQ(row.verdict, Verdict::regression);
    } else {
      EXPECT_NEAR(row.statistic, (910.0 / 900 + 820.0 / 800) / 2, 1e-12);
      EXPECT_EQ(row.verdict, Verdict::pass);
    }
  }
}

TEST(GateAb, RoundsThatCannotBePairedAreBadInput) {
  gate::AbRecord rec;
  EXPECT_THROW(rec.add_round({}, {one_run("kairos", 1)}), gate::BadInput);
  EXPECT_THROW(rec.add_round({one_run("kairos", 1)}, {}), gate::BadInput);
  EXPECT_THROW(rec.add_round({one_run("kairos", 1)}, {one_run("other", 1)}), gate::BadInput);
  EXPECT_THROW(rec.add_round({one_run("kairos", 1)}, {one_run("kairos", 1), one_run("kairos", 2)}), gate::BadInput);
  gate::Run tagged = one_run("kairos", 1);
  tagged.config[gate::kBuildKey] = "baseline";
  EXPECT_THROW(rec.add_round({tagged}, {one_run("kairos", 1)}), gate::BadInput);
  EXPECT_EQ(rec.rounds(), 0u);
  EXPECT_TRUE(rec.runs().empty());
}

TEST(GateAb, UnmodifiedBuildPassesWhileTheMachineMovesTwofold) {
  std::vector<double> base, cand;
  for (std::size_t k = 0; k < kState.size(); ++k) {
    base.push_back(480 * kState[k]);
    cand.push_back(480 * kState[k] * kJitter[k]);
  }
  // Unpaired, the two sides' medians differ by the machine's state alone; paired, they agree.
  const gate::Comparison c = gate::compare_ab(ab_record(base, cand), ab_options());
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_NEAR(c.rows[0].statistic, 1.005, 0.01);
  EXPECT_LE(c.rows[0].ci_high, 1.1);
  EXPECT_EQ(c.rows[0].verdict, Verdict::pass);
  EXPECT_EQ(gate::overall({c}), Verdict::pass);
}

TEST(GateAb, TwentyPercentSlowerBuildIsARegressionWhileTheMachineMoves) {
  std::vector<double> base, cand;
  for (std::size_t k = 0; k < kState.size(); ++k) {
    base.push_back(480 * kState[k]);
    cand.push_back(1.2 * 480 * kState[k] * kJitter[k]);
  }
  // One round whose candidate ran while the machine moved (the ratio of that pair is 0.5).
  cand[4] = base[4] * 0.5;
  const gate::Comparison c = gate::compare_ab(ab_record(base, cand), ab_options());
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_NEAR(c.rows[0].statistic, 1.2, 0.03);
  EXPECT_GT(c.rows[0].ci_low, 1.1);
  EXPECT_EQ(c.rows[0].verdict, Verdict::regression);
}

TEST(GateAb, PassAndRegressionNeedTheWholeInterval) {
  // Median 1.05x, within +10%, but the ratios spread from 0.9x to 1.3x: the interval reaches
  // beyond the limit, so this is not a pass (reference mode would pass on the median alone).
  const std::vector<double> wide = {0.9, 1.3, 1.02, 1.25, 0.95, 1.08, 1.22, 0.92, 1.04, 1.06};
  std::vector<double> base(wide.size(), 500), cand;
  for (double r : wide) cand.push_back(500 * r);
  gate::Comparison c = gate::compare_ab(ab_record(base, cand), ab_options());
  EXPECT_LE(c.rows[0].statistic, 1.1);
  EXPECT_GT(c.rows[0].ci_high, 1.1);
  EXPECT_EQ(c.rows[0].verdict, Verdict::inconclusive);
  EXPECT_EQ(gate::overall({c}), Verdict::inconclusive);
  // Median 1.2x beyond the limit, but the interval reaches below it: not a regression either.
  for (double& x : cand) x *= 1.14;
  c = gate::compare_ab(ab_record(base, cand), ab_options());
  EXPECT_GT(c.rows[0].statistic, 1.1);
  EXPECT_LT(c.rows[0].ci_low, 1.1);
  EXPECT_EQ(c.rows[0].verdict, Verdict::inconclusive);
}

TEST(GateAb, FewerPairsThanMinRunsIsInconclusive) {
  const std::vector<double> base = {500, 500, 500}, cand = {700, 700, 700};
  const gate::Comparison c = gate::compare_ab(ab_record(base, cand), ab_options());
  EXPECT_EQ(c.rows[0].verdict, Verdict::inconclusive);  // 3 pairs < --min-runs 5, however clear
  gate::GateOptions o = ab_options();
  o.min_runs = 3;
  EXPECT_EQ(gate::overall({gate::compare_ab(ab_record(base, cand), o)}), Verdict::regression);
}

TEST(GateAb, RecordRoundTripsThroughJsonLines) {
  std::vector<double> base, cand;
  for (std::size_t k = 0; k < kState.size(); ++k) {
    base.push_back(480 * kState[k]);
    cand.push_back(1.2 * 480 * kState[k] * kJitter[k]);
  }
  const std::vector<gate::Run> runs = ab_record(base, cand);
  std::string text;
  for (const gate::Run& r : runs) text += gate::run_to_json(r).dump() + "\n";
  const std::vector<gate::Run> back = gate::parse_runs(text, "record.jsonl");
  ASSERT_EQ(back.size(), runs.size());
  for (std::size_t k = 0; k < runs.size(); ++k) {
    EXPECT_EQ(back[k].config, runs[k].config);
    EXPECT_EQ(back[k].repeat, runs[k].repeat);
    EXPECT_EQ(back[k].figures, runs[k].figures);
  }
  const gate::Comparison a = gate::compare_ab(runs, ab_options()), b = gate::compare_ab(back, ab_options());
  EXPECT_DOUBLE_EQ(a.rows[0].statistic, b.rows[0].statistic);
  EXPECT_EQ(a.rows[0].verdict, b.rows[0].verdict);
}

TEST(GateAb, RatesAndRatioLimits) {
  // A rate 20% lower is worse: --tolerance 10% means candidate >= baseline / 1.1.
  gate::AbRecord rec;
  for (int k = 0; k < 6; ++k)
    rec.add_round({one_run("kairos", 500, R"(,"submissions_per_s":1000000)")},
                  {one_run("kairos", 500, R"(,"submissions_per_s":800000)")});
  gate::GateOptions o;
  o.tolerances["submissions_per_s"] = gate::parse_limit("10%");
  EXPECT_EQ(gate::overall({gate::compare_ab(rec.runs(), o)}), Verdict::regression);
  o.tolerances.clear();
  o.min_ratios["submissions_per_s"] = gate::parse_limit("0.75x");
  EXPECT_EQ(gate::overall({gate::compare_ab(rec.runs(), o)}), Verdict::pass);
  o.min_ratios.clear();
  o.max_ratios["p50"] = gate::parse_limit("1.01x");
  EXPECT_EQ(gate::overall({gate::compare_ab(rec.runs(), o)}), Verdict::pass);  // p50 ratio exactly 1
}

TEST(GateAb, EarlyFiresOfTheCandidateAreARegression) {
  gate::AbRecord rec;
  for (int k = 0; k < 6; ++k)
    rec.add_round({one_run("kairos", 500, R"(,"early_fires":0)")}, {one_run("kairos", 500, R"(,"early_fires":1)")});
  EXPECT_EQ(gate::overall({gate::compare_ab(rec.runs(), ab_options())}), Verdict::regression);
  gate::GateOptions o = ab_options();
  o.allow_early_fires = true;
  EXPECT_EQ(gate::overall({gate::compare_ab(rec.runs(), o)}), Verdict::pass);
}

TEST(GateAb, WhatCannotBeJudgedIsBadInput) {
  const std::vector<gate::Run> runs = ab_record({500, 500, 500, 500, 500}, {500, 500, 500, 500, 500});
  EXPECT_THROW(gate::compare_ab(runs, gate::GateOptions{}), gate::BadInput);  // no limit
  EXPECT_THROW(gate::compare_ab(runs, ab_options("20ns")), gate::BadInput);   // not a ratio or %
  gate::GateOptions all;
  all.tolerances["all"] = gate::parse_limit("10%");
  EXPECT_THROW(gate::compare_ab(runs, all), gate::BadInput);
  gate::GateOptions missing;
  missing.max_ratios["p77"] = gate::parse_limit("1.1x");
  EXPECT_THROW(gate::compare_ab(runs, missing), gate::BadInput);  // no run has p77
  // Runs without a side (a plain kairos-lat file) are not an A/B record.
  EXPECT_THROW(gate::compare_ab(gate::parse_runs(record("W3", "kairos", 1, 500, 1), "t"), ab_options()), gate::BadInput);
  // Candidate runs without baseline runs of the same group.
  std::vector<gate::Run> only_candidate;
  for (const gate::Run& r : runs)
    if (r.config.at(gate::kBuildKey) == "candidate") only_candidate.push_back(r);
  EXPECT_THROW(gate::compare_ab(only_candidate, ab_options()), gate::BadInput);
}

}  // namespace

// ---- hostile input: every failure is BadInput (exit 2), never a crash or another exception ----

// One value nested `levels` deep: [[[...]]].
std::string nested(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(GateHostileInput, DeeplyNestedJsonIsRefusedBeforeParsing) {
  // 200,000 levels overflowed the stack of whatever copied, dumped or destroyed the parsed value.
  const std::string deep_record = R"({"workload":"w","system":"a","p50_ns":1,"config":)" + nested(200'000) + "}\n";
  try {
    gate::parse_runs(deep_record, "deep.jsonl");
    ADD_FAILURE() << "a record nested 200,000 levels deep was accepted";
  } catch (const gate::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("deep.jsonl:1"), std::string::npos) << e.what();
  }
  const std::string deep_benchmark = R"({"benchmarks":[{"name":"b","real_time":1,"x":)" + nested(200'000) + "}]}";
  EXPECT_THROW(gate::parse_runs(deep_benchmark, "bench.json"), gate::BadInput);
  const std::string deep_histogram = R"({"kind":"kairos.latency_histogram","version":1,"buckets":)" +
                                     nested(200'000) + "}\n";
  EXPECT_THROW(gate::parse_runs(deep_histogram, "h.jsonl"), gate::BadInput);
  // What kairos's own inputs nest (4 levels) stays readable.
  EXPECT_NO_THROW(gate::parse_runs(R"({"workload":"w","system":"a","p50_ns":1,"config":{"a":[[1]]}})", "ok"));
}

TEST(GateHostileInput, MistypedFieldsAreBadInputNotJsonExceptions) {
  const std::vector<std::string> mistyped = {
      // Google Benchmark JSON: strings read with a default
      R"({"benchmarks":[{"name":"b","real_time":1,"run_type":5}]})",
      R"({"benchmarks":[{"name":"b","real_time":1,"time_unit":[]}]})",
      R"({"benchmarks":[{"name":"b","real_time":1,"error_occurred":true,"error_message":{}}]})",
      R"({"context":{"host_name":7},"benchmarks":[{"name":"b","real_time":1}]})",
      // kairos-lat records: the machine, config and parameters objects
      R"({"workload":"w","system":"a","p50_ns":1,"machine":{"cpu":1}})",
      R"({"workload":"w","system":"a","p50_ns":1,"config":5})",
      R"({"workload":"w","system":"a","p50_ns":1,"parameters":"x"})",
  };
  for (const std::string& text : mistyped) {
    try {
      gate::parse_runs(text, "t");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const gate::BadInput&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not BadInput (" << e.what() << "): " << text;
    }
  }
}
