// gate_test.cpp: kairos-gate's comparison logic (tools/gate/gate.hpp): every verdict, every
// kind of bad input, medians, grouping, and the histogram JSON input.
#include "gate.hpp"

#include <kairos/latency_histogram.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace gate = kairos::gate;
using gate::BadInput;
using gate::Verdict;

// One kairos-lat line; p99 sets the tail, the other figures follow from it.
std::string report(const std::string& workload, const std::string& system, double p99,
                   const std::string& config = R"({"threads":1})", const std::string& extra = "") {
  const auto num = [](double v) { return gate::format_value(v); };
  return R"({"workload":")" + workload + R"(","system":")" + system + R"(","config":)" + config +
         R"(,"p50":)" + num(p99 / 10) + R"(,"p90":)" + num(p99 / 2) + R"(,"p99":)" + num(p99) +
         R"(,"p99.9":)" + num(p99 * 2) + R"(,"p99.99":)" + num(p99 * 3) + R"(,"max":)" + num(p99 * 10) +
         R"(,"early_fires":0)" + extra + "}\n";
}

std::string runs(const std::string& workload, const std::string& system, std::vector<double> p99s,
                 const std::string& config = R"({"threads":1})") {
  std::string out;
  for (double v : p99s) out += report(workload, system, v, config);
  return out;
}

std::vector<gate::Run> parse(const std::string& text) { return gate::parse_runs(text, "test.jsonl"); }

gate::GateOptions tolerance(const std::string& assignment) {
  gate::GateOptions o;
  o.tolerances.insert(gate::parse_tolerance_assignment(assignment));
  return o;
}

const gate::Row& row_of(const gate::Comparison& c, const std::string& group, const std::string& figure) {
  for (const gate::Row& r : c.rows)
    if (r.group == group && r.figure == figure) return r;
  throw std::runtime_error("no row " + group + " " + figure);
}

std::string bad_input_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const BadInput& e) {
    return e.what();
  }
  return "(no BadInput thrown)";
}

// -- baseline mode ----------------------------------------------------------------------------

TEST(GateBaseline, WithinToleranceIsNoRegression) {
  const auto base = parse(runs("W3", "kairos-hybrid", {10000, 10200, 9900}));
  const auto cur = parse(runs("W3", "kairos-hybrid", {10500, 11000, 11400}));
  const auto c = gate::compare_to_baseline(base, cur, tolerance("p99=15%"));
  EXPECT_FALSE(c.regression());
  const gate::Row& r = row_of(c, "W3 kairos-hybrid", "p99");
  EXPECT_EQ(r.baseline, 10000);
  EXPECT_EQ(r.current, 11000);
  EXPECT_EQ(r.verdict, Verdict::ok);
  EXPECT_EQ(r.change, "+10.0%");
  EXPECT_EQ(row_of(c, "W3 kairos-hybrid", "p50").verdict, Verdict::info);  // no tolerance: shown only
  EXPECT_EQ(c.judged(), 2u);                                              // p99 and early_fires
}

TEST(GateBaseline, BeyondToleranceIsARegression) {
  const auto base = parse(runs("W3", "kairos-hybrid", {10000, 10000, 10000}));
  const auto cur = parse(runs("W3", "kairos-hybrid", {11600, 11600, 11600}));
  const auto c = gate::compare_to_baseline(base, cur, tolerance("p99=15%"));
  EXPECT_TRUE(c.regression());
  EXPECT_EQ(row_of(c, "W3 kairos-hybrid", "p99").verdict, Verdict::regression);
  EXPECT_EQ(c.regressions(), 1u);
}

TEST(GateBaseline, ImprovementIsNoRegression) {
  const auto base = parse(runs("W4", "kairos-spin", {10000, 10000, 10000}));
  const auto cur = parse(runs("W4", "kairos-spin", {2000, 2000, 2000}));
  const auto c = gate::compare_to_baseline(base, cur, tolerance("all=0%"));
  EXPECT_FALSE(c.regression());
  EXPECT_EQ(row_of(c, "W4 kairos-spin", "max").change, "-80.0%");
}

TEST(GateBaseline, AbsoluteTolerance) {
  const auto base = parse(runs("W3", "k", {10000, 10000, 10000}));
  const auto ok = parse(runs("W3", "k", {11999, 11999, 11999}));
  const auto bad = parse(runs("W3", "k", {12001, 12001, 12001}));
  EXPECT_FALSE(gate::compare_to_baseline(base, ok, tolerance("p99=2us")).regression());
  EXPECT_TRUE(gate::compare_to_baseline(base, bad, tolerance("p99=2us")).regression());
  EXPECT_TRUE(gate::compare_to_baseline(base, bad, tolerance("p99=2000ns")).regression());
}

TEST(GateBaseline, AllSetsTheDefaultAndAFigureOverridesIt) {
  const auto base = parse(runs("W3", "k", {10000, 10000, 10000}));
  const auto cur = parse(runs("W3", "k", {13000, 13000, 13000}));  // +30% on every figure
  gate::GateOptions o = tolerance("all=50%");
  EXPECT_FALSE(gate::compare_to_baseline(base, cur, o).regression());
  o.tolerances.insert(gate::parse_tolerance_assignment("max=20%"));
  const auto c = gate::compare_to_baseline(base, cur, o);
  EXPECT_EQ(c.regressions(), 1u);
  EXPECT_EQ(row_of(c, "W3 k", "max").verdict, Verdict::regression);
  EXPECT_EQ(row_of(c, "W3 k", "p99.99").verdict, Verdict::ok);
}

TEST(GateBaseline, JudgesTheMedianOfRepeatedRuns) {
  const auto base = parse(runs("W3", "k", {10000, 10000, 10000}));
  // One noisy run out of three does not fail the gate; two do.
  EXPECT_FALSE(gate::compare_to_baseline(base, parse(runs("W3", "k", {10000, 90000, 10100})), tolerance("p99=5%"))
                   .regression());
  EXPECT_TRUE(gate::compare_to_baseline(base, parse(runs("W3", "k", {10000, 90000, 90000})), tolerance("p99=5%"))
                  .regression());
  EXPECT_EQ(gate::median({3, 1, 2}), 2);
  EXPECT_EQ(gate::median({4, 1, 2, 3}), 2.5);
  EXPECT_EQ(gate::median({7}), 7);
}

TEST(GateBaseline, RefusesToJudgeFromTooFewRuns) {
  const auto base = parse(runs("W3", "k", {10000, 10000, 10000}));
  const auto cur = parse(runs("W3", "k", {10000, 10000}));
  EXPECT_THROW(gate::compare_to_baseline(base, cur, tolerance("p99=15%")), BadInput);
  EXPECT_THROW(gate::compare_to_baseline(cur, base, tolerance("p99=15%")), BadInput);
  gate::GateOptions o = tolerance("p99=15%");
  o.min_runs = 2;
  EXPECT_FALSE(gate::compare_to_baseline(base, cur, o).regression());
  EXPECT_NE(bad_input_message([&] { gate::compare_to_baseline(base, cur, tolerance("p99=15%")); }).find("--min-runs"),
            std::string::npos);
}

TEST(GateBaseline, AMeasurementMissingFromCurrentIsBadInput) {
  const auto base = parse(runs("W3", "k", {1, 1, 1}) + runs("W4", "k", {1, 1, 1}));
  const auto cur = parse(runs("W3", "k", {1, 1, 1}));
  EXPECT_THROW(gate::compare_to_baseline(base, cur, tolerance("p99=15%")), BadInput);
  gate::GateOptions o = tolerance("p99=15%");
  o.workloads = {"W3"};
  EXPECT_FALSE(gate::compare_to_baseline(base, cur, o).regression());
}

TEST(GateBaseline, ANewMeasurementIsNotedNotJudged) {
  const auto base = parse(runs("W3", "k", {1000, 1000, 1000}));
  const auto cur = parse(runs("W3", "k", {1000, 1000, 1000}) + runs("W3", "new-system", {99999}));
  const auto c = gate::compare_to_baseline(base, cur, tolerance("p99=15%"));
  EXPECT_FALSE(c.regression());
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("new-system"), std::string::npos);
}

TEST(GateBaseline, ConfigSplitsGroupsAndIgnoredKeysDoNot) {
  const auto base = parse(runs("W1", "k", {100, 100, 100}, R"({"producers":1})") +
                          runs("W1", "k", {400, 400, 400}, R"({"producers":2})"));
  const auto cur = parse(runs("W1", "k", {100, 100, 100}, R"({"producers":1})") +
                         runs("W1", "k", {400, 400, 400}, R"({"producers":2})"));
  const auto c = gate::compare_to_baseline(base, cur, tolerance("p99=1%"));
  EXPECT_FALSE(c.regression());  // 1 producer is not compared with 2
  EXPECT_EQ(row_of(c, "W1 k producers=2", "p99").current, 400);

  const auto cur_seeded = parse(runs("W3", "k", {100, 100, 100}, R"({"seed":7})"));
  const auto base_seeded = parse(runs("W3", "k", {100, 100, 100}, R"({"seed":8})"));
  EXPECT_THROW(gate::compare_to_baseline(base_seeded, cur_seeded, tolerance("p99=1%")), BadInput);
  gate::GateOptions o = tolerance("p99=1%");
  o.ignore_config = {"seed"};
  EXPECT_FALSE(gate::compare_to_baseline(base_seeded, cur_seeded, o).regression());
}

TEST(GateBaseline, SystemFilter) {
  const auto base = parse(runs("W3", "a", {100, 100, 100}) + runs("W3", "b", {100, 100, 100}));
  const auto cur = parse(runs("W3", "a", {100, 100, 100}) + runs("W3", "b", {900, 900, 900}));
  EXPECT_TRUE(gate::compare_to_baseline(base, cur, tolerance("p99=10%")).regression());
  gate::GateOptions o = tolerance("p99=10%");
  o.systems = {"a"};
  EXPECT_FALSE(gate::compare_to_baseline(base, cur, o).regression());
}

TEST(GateBaseline, RatesAreHigherIsBetter) {
  const std::string base_text = report("W6", "k", 1, "{}", R"(,"tasks_per_s":1000000)") +
                                report("W6", "k", 1, "{}", R"(,"tasks_per_s":1000000)") +
                                report("W6", "k", 1, "{}", R"(,"tasks_per_s":1000000)");
  std::string slower, faster;
  for (int i = 0; i < 3; ++i) {
    slower += report("W6", "k", 1, "{}", R"(,"tasks_per_s":800000)");
    faster += report("W6", "k", 1, "{}", R"(,"tasks_per_s":3000000)");
  }
  EXPECT_TRUE(gate::higher_is_better("tasks_per_s"));
  EXPECT_FALSE(gate::higher_is_better("p99"));
  EXPECT_TRUE(gate::compare_to_baseline(parse(base_text), parse(slower), tolerance("tasks_per_s=10%")).regression());
  EXPECT_FALSE(gate::compare_to_baseline(parse(base_text), parse(faster), tolerance("tasks_per_s=10%")).regression());
}

TEST(GateBaseline, AToleranceForAFigureNoRunHasIsBadInput) {
  const auto r = parse(runs("W3", "k", {100, 100, 100}));
  EXPECT_THROW(gate::compare_to_baseline(r, r, tolerance("p999=10%")), BadInput);  // a typo never passes
  EXPECT_THROW(gate::compare_to_baseline(r, r, gate::GateOptions{}), BadInput);   // no tolerance at all
  EXPECT_THROW(gate::compare_to_baseline(r, r, tolerance("early_fires=1%")), BadInput);
}

TEST(GateBaseline, AFigureOnOneSideOnlyIsBadInput) {
  const auto base = parse(report("W6", "k", 1, "{}", R"(,"tasks_per_s":5)") + report("W6", "k", 1, "{}", R"(,"tasks_per_s":5)") +
                          report("W6", "k", 1, "{}", R"(,"tasks_per_s":5)"));
  const auto cur = parse(runs("W6", "k", {1, 1, 1}, "{}"));
  EXPECT_THROW(gate::compare_to_baseline(base, cur, tolerance("tasks_per_s=10%")), BadInput);
  const auto mixed = parse(report("W6", "k", 1, "{}", R"(,"tasks_per_s":5)") + runs("W6", "k", {1, 1}, "{}"));
  EXPECT_THROW(gate::compare_to_baseline(base, mixed, tolerance("tasks_per_s=10%")), BadInput);
}

// -- early fires ------------------------------------------------------------------------------

TEST(GateEarlyFires, AnyEarlyFireIsARegressionUnlessAllowed) {
  const auto base = parse(runs("W3", "k", {100, 100, 100}));
  std::string early = runs("W3", "k", {100, 100});
  std::string third = report("W3", "k", 100);
  third.replace(third.find(R"("early_fires":0)"), 15, R"("early_fires":3)");
  early += third;
  const auto c = gate::compare_to_baseline(base, parse(early), tolerance("p99=50%"));
  EXPECT_TRUE(c.regression());
  EXPECT_EQ(row_of(c, "W3 k", "early_fires").current, 3);
  EXPECT_EQ(row_of(c, "W3 k", "early_fires").verdict, Verdict::regression);

  gate::GateOptions o = tolerance("p99=50%");
  o.allow_early_fires = true;
  EXPECT_FALSE(gate::compare_to_baseline(base, parse(early), o).regression());
}

// -- reference mode ---------------------------------------------------------------------------

gate::GateOptions ratio(const std::string& reference, const std::string& assignment) {
  gate::GateOptions o;
  o.reference = reference;
  o.max_ratios.insert(gate::parse_ratio_assignment(assignment));
  return o;
}

TEST(GateReference, BelowTheRatioIsNoRegression) {
  const auto cur = parse(runs("W3", "kairos-hybrid", {10000, 11000, 12000}) +
                         runs("W3", "naive-stpe", {40000, 50000, 60000}, R"({"threads":2})"));
  const auto c = gate::compare_to_reference(cur, ratio("naive-stpe", "p99=0.5"));
  EXPECT_FALSE(c.regression());
  const gate::Row& r = row_of(c, "W3 kairos-hybrid", "p99");
  EXPECT_EQ(r.baseline, 50000);
  EXPECT_EQ(r.current, 11000);
  EXPECT_EQ(r.change, "0.22x");
  EXPECT_EQ(r.verdict, Verdict::ok);
}

TEST(GateReference, AboveTheRatioIsARegression) {
  const auto cur = parse(runs("W3", "kairos-hybrid", {30000, 30000, 30000}) +
                         runs("W3", "naive-stpe", {50000, 50000, 50000}));
  const auto c = gate::compare_to_reference(cur, ratio("naive-stpe", "p99=0.5"));
  EXPECT_TRUE(c.regression());
  EXPECT_EQ(row_of(c, "W3 kairos-hybrid", "p99").verdict, Verdict::regression);
}

TEST(GateReference, EveryOtherSystemIsJudgedUnlessFiltered) {
  const auto cur = parse(runs("W3", "kairos-hybrid", {1000, 1000, 1000}) + runs("W3", "kairos-sleep", {90000, 90000, 90000}) +
                         runs("W3", "naive-stpe", {50000, 50000, 50000}));
  EXPECT_TRUE(gate::compare_to_reference(cur, ratio("naive-stpe", "p99=0.5")).regression());
  gate::GateOptions o = ratio("naive-stpe", "p99=0.5");
  o.systems = {"kairos-hybrid"};
  EXPECT_FALSE(gate::compare_to_reference(cur, o).regression());
}

TEST(GateReference, MissingReferenceIsBadInput) {
  const auto cur = parse(runs("W3", "kairos-hybrid", {1000, 1000, 1000}) + runs("W4", "naive-stpe", {5, 5, 5}));
  EXPECT_THROW(gate::compare_to_reference(cur, ratio("naive-stpe", "p99=0.5")), BadInput);
  const auto only_ref = parse(runs("W3", "naive-stpe", {5, 5, 5}));
  EXPECT_THROW(gate::compare_to_reference(only_ref, ratio("naive-stpe", "p99=0.5")), BadInput);
  EXPECT_THROW(gate::compare_to_reference(cur, gate::GateOptions{}), BadInput);
}

TEST(GateReference, RefusesToJudgeFromTooFewRuns) {
  const auto cur = parse(runs("W3", "kairos-hybrid", {1000, 1000, 1000}) + runs("W3", "naive-stpe", {50000}));
  EXPECT_THROW(gate::compare_to_reference(cur, ratio("naive-stpe", "p99=0.5")), BadInput);
  gate::GateOptions o = ratio("naive-stpe", "p99=0.5");
  o.min_runs = 1;
  EXPECT_FALSE(gate::compare_to_reference(cur, o).regression());
}

TEST(GateReference, AmbiguousReferenceGroupsNeedMatchKeys) {
  const auto cur = parse(runs("W1", "kairos-hybrid", {100, 100, 100}, R"({"producers":1,"wait":"hybrid"})") +
                         runs("W1", "kairos-hybrid", {300, 300, 300}, R"({"producers":2,"wait":"hybrid"})") +
                         runs("W1", "naive-stpe", {1000, 1000, 1000}, R"({"producers":1,"threads":1})") +
                         runs("W1", "naive-stpe", {500, 500, 500}, R"({"producers":2,"threads":1})"));
  EXPECT_THROW(gate::compare_to_reference(cur, ratio("naive-stpe", "p99=0.5")), BadInput);
  gate::GateOptions o = ratio("naive-stpe", "p99=0.5");
  o.match = {"producers"};
  const auto c = gate::compare_to_reference(cur, o);
  EXPECT_TRUE(c.regression());  // 2 producers: 300 vs 500 is 0.6x
  EXPECT_EQ(c.regressions(), 1u);
}

TEST(GateReference, MinRatioForRates) {
  std::string text;
  for (int i = 0; i < 3; ++i) {
    text += report("W1", "kairos-hybrid", 100, "{}", R"(,"submits_per_s":9000000)");
    text += report("W1", "naive-stpe", 100, "{}", R"(,"submits_per_s":3000000)");
  }
  gate::GateOptions o;
  o.reference = "naive-stpe";
  o.min_ratios.insert(gate::parse_ratio_assignment("submits_per_s=2"));
  EXPECT_FALSE(gate::compare_to_reference(parse(text), o).regression());
  o.min_ratios["submits_per_s"] = 4;
  EXPECT_TRUE(gate::compare_to_reference(parse(text), o).regression());
  gate::GateOptions wrong = ratio("naive-stpe", "submits_per_s=2");  // a rate under --max-ratio
  EXPECT_THROW(gate::compare_to_reference(parse(text), wrong), BadInput);
}

// -- bad input --------------------------------------------------------------------------------

TEST(GateInput, BadReportsAreBadInputNeverAPass) {
  const std::string good = report("W3", "k", 1000);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  ASSERT_NO_THROW(parse(good));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty input"},
      {"\n  \n\t\n", "blank lines only"},
      {"{", "malformed JSON"},
      {good.substr(0, good.size() - 3) + "\n", "truncated line"},
      {"not json\n", "malformed JSON"},
      {"[1,2]\n", "not an object"},
      {"42\n", "not an object"},
      {with(R"("workload":"W3",)", ""), "missing workload"},
      {with(R"("system":"k",)", ""), "missing system"},
      {with(R"("system":"k")", R"("system":"")"), "empty system"},
      {with(R"("system":"k")", R"("system":7)"), "system not a string"},
      {with(R"("workload":"W3")", R"("workload":"W8")"), "unknown workload W8"},
      {with(R"("workload":"W3")", R"("workload":"W0")"), "unknown workload W0"},
      {with(R"("workload":"W3")", R"("workload":"w3")"), "lower-case workload"},
      {with(R"("workload":"W3")", R"("workload":"W33")"), "unknown workload W33"},
      {with(R"("workload":"W3")", R"("workload":3)"), "workload not a string"},
      {with(R"("p99":1000)", R"("p99":null)"), "null figure"},
      {with(R"("p99":1000)", R"("p99":NaN)"), "NaN figure"},
      {with(R"("p99":1000)", R"("p99":"1000")"), "string figure"},
      {with(R"("early_fires":0)", R"("early_fires":-1)"), "negative count"},
      {good.substr(0, good.size() - 2) + R"(,"tasks_per_s":-3})" "\n", "negative rate"},
      {with(R"(,"early_fires":0)", ""), "W3 without early_fires"},
      {with(R"("p99":1000)", R"("p99":1000,"p99_ns":1000)"), "a figure under both its names"},
      {with(R"("config":{"threads":1})", R"("config":{"threads":1},"parameters":7)"), "parameters not an object"},
      {with(R"("p99":1000)", R"("p99":1e999)"), "infinite figure"},
      {with(R"("early_fires":0)", R"("early_fires":null)"), "null early_fires"},
      {with(R"("p99.9":2000,)", ""), "W3 without p99.9"},
      {with(R"("config":{"threads":1})", R"("config":[1])"), "config not an object"},
      {good + "{\n", "a good line then a malformed one"},
  };
  for (const auto& [text, what] : bad) EXPECT_THROW(parse(text), BadInput) << what;

  const std::string msg = bad_input_message([&] { parse(good + good + "oops\n"); });
  EXPECT_NE(msg.find("test.jsonl:3"), std::string::npos) << msg;  // names the line
  // A lateness percentile may be negative (early fires, judged on their own).
  EXPECT_NO_THROW(parse(with(R"("p50":100)", R"("p50":-20)")));
  // W2 reports no latency: no latency figure is required of it.
  EXPECT_NO_THROW(parse(R"({"workload":"W2","system":"k","pairs_per_s":1000,"pending_at_end":1024})"));
}

TEST(GateInput, Tolerances) {
  EXPECT_DOUBLE_EQ(gate::parse_tolerance("15%").value, 0.15);
  EXPECT_TRUE(gate::parse_tolerance("15%").relative);
  EXPECT_DOUBLE_EQ(gate::parse_tolerance("2.5us").value, 2500);
  EXPECT_FALSE(gate::parse_tolerance("2.5us").relative);
  EXPECT_DOUBLE_EQ(gate::parse_tolerance("300ns").value, 300);
  EXPECT_DOUBLE_EQ(gate::parse_tolerance("1ms").value, 1e6);
  EXPECT_DOUBLE_EQ(gate::parse_tolerance("0%").value, 0);
  for (const char* t : {"", "%", "abc", "15%%", "15 parsecs", "-5%", "nan%", "inf%"})
    EXPECT_THROW(gate::parse_tolerance(t), BadInput) << t;
  EXPECT_EQ(gate::parse_tolerance_assignment("p99.9=20%").first, "p99.9");
  for (const char* t : {"p99", "=15%", "p99=", "p99=x"}) EXPECT_THROW(gate::parse_tolerance_assignment(t), BadInput) << t;
  EXPECT_DOUBLE_EQ(gate::parse_ratio_assignment("p99=0.5").second, 0.5);
  for (const char* t : {"p99=0", "p99=-1", "p99=0.5x", "p99"}) EXPECT_THROW(gate::parse_ratio_assignment(t), BadInput) << t;
}

// -- kairos-lat's own records ------------------------------------------------------------------

// A record as kairos-lat writes it: figures named p50_ns ... max_ns, the workload's shape in
// "parameters", the system's configuration in "config".
std::string lat_record(const std::string& workload, const std::string& system, const std::string& parameters,
                       double p99, const std::string& wait = "hybrid") {
  const auto num = [](double v) { return gate::format_value(v); };
  return R"({"workload":")" + workload + R"(","name":"lateness","system":")" + system +
         R"(","config":{"threads":1,"shards":1,"threads_per_shard":1,"wait":")" + wait +
         R"(","pinned":false,"cpus":[],"producer_cpu":-1,"timer_slack_ns":1},"parameters":)" + parameters +
         R"(,"samples":200000,"p50_ns":)" + num(p99 / 10) + R"(,"p90_ns":)" + num(p99 / 2) + R"(,"p99_ns":)" +
         num(p99) + R"(,"p99_9_ns":)" + num(p99 * 2) + R"(,"p99_99_ns":)" + num(p99 * 3) + R"(,"max_ns":)" +
         num(p99 * 10) + R"(,"early_fires":0,"min_ns":-0,"missing":0,"submissions_per_s":19999.5})" "\n";
}

TEST(GateLatRecords, FiguresUnderTheirLatNames) {
  const std::string params = R"({"submissions":200000,"rate_per_s":20000,"seed":42})";
  std::string base, cur;
  for (int i = 0; i < 3; ++i) {
    base += lat_record("W3", "kairos-hybrid", params, 10000) + lat_record("W3", "naive-stpe", params, 60000);
    cur += lat_record("W3", "kairos-hybrid", params, 12000) + lat_record("W3", "naive-stpe", params, 60000);
  }
  const auto b = parse(base), c = parse(cur);
  EXPECT_EQ(b.at(0).figures.at("p99.9"), 20000);
  EXPECT_EQ(gate::figure_name("p99_99_ns"), "p99.99");
  const auto by_ns_name = gate::compare_to_baseline(b, c, tolerance("p99_ns=15%"));
  EXPECT_TRUE(by_ns_name.regression());
  EXPECT_EQ(row_of(by_ns_name, "W3 kairos-hybrid", "p99").verdict, Verdict::regression);
  EXPECT_FALSE(gate::compare_to_baseline(b, c, tolerance("p99=25%")).regression());
  EXPECT_FALSE(gate::compare_to_reference(c, ratio("naive-stpe", "p99_ns=0.5")).regression());
  EXPECT_TRUE(gate::compare_to_reference(c, ratio("naive-stpe", "p99.9=0.15")).regression());
}

TEST(GateLatRecords, ParametersSplitGroupsAndPairReferences) {
  std::string cur;
  for (int i = 0; i < 3; ++i) {
    cur += lat_record("W1", "kairos-hybrid", R"({"producers":1})", 100);
    cur += lat_record("W1", "kairos-hybrid", R"({"producers":2})", 300);
    cur += lat_record("W1", "naive-stpe", R"({"producers":1})", 1000, "sleep");
    cur += lat_record("W1", "naive-stpe", R"({"producers":2})", 500, "sleep");
  }
  const auto c = gate::compare_to_reference(parse(cur), ratio("naive-stpe", "p99=0.5"));
  EXPECT_EQ(c.regressions(), 1u);  // 2 producers: 300 vs 500 is 0.6x; 1 producer: 0.1x
  EXPECT_EQ(row_of(c, "W1 kairos-hybrid producers=2", "p99").verdict, Verdict::regression);
  EXPECT_EQ(row_of(c, "W1 kairos-hybrid producers=1", "p99").verdict, Verdict::ok);

  // A baseline taken with other parameters is another measurement, not this one.
  std::string base;
  for (int i = 0; i < 3; ++i) base += lat_record("W1", "kairos-hybrid", R"({"producers":4})", 100);
  gate::GateOptions o = tolerance("p99=10%");
  o.systems = {"kairos-hybrid"};
  EXPECT_THROW(gate::compare_to_baseline(parse(base), parse(cur), o), BadInput);
}

// -- histogram JSON input ---------------------------------------------------------------------

std::string histogram_line(std::int64_t scale, const std::string& labels, std::int64_t early = 0) {
  auto h = std::make_unique<kairos::LatencyHistogram>();
  for (std::int64_t i = 1; i <= 10000; ++i) h->record(i * scale);
  for (std::int64_t i = 0; i < early; ++i) h->record(-1);
  std::string s = h->to_json();
  if (!labels.empty()) s.insert(1, labels + ",");
  return s + "\n";
}

TEST(GateHistograms, HistogramLinesAreRuns) {
  const std::string labels = R"("workload":"W3","system":"kairos-hybrid")";
  const auto base = parse(histogram_line(10, labels) + histogram_line(10, labels) + histogram_line(10, labels));
  ASSERT_EQ(base.size(), 3u);
  EXPECT_NEAR(base[0].figures.at("p50"), 50000, 50000 * 0.004);
  EXPECT_EQ(base[0].figures.at("max"), 100000);
  EXPECT_EQ(base[0].figures.at("early_fires"), 0);
  const auto same = parse(histogram_line(10, labels) + histogram_line(10, labels) + histogram_line(10, labels));
  const auto slower = parse(histogram_line(13, labels) + histogram_line(13, labels) + histogram_line(13, labels));
  EXPECT_FALSE(gate::compare_to_baseline(base, same, tolerance("p99=10%")).regression());
  EXPECT_TRUE(gate::compare_to_baseline(base, slower, tolerance("p99=10%")).regression());
  const auto early = parse(histogram_line(10, labels, 2) + histogram_line(10, labels) + histogram_line(10, labels));
  EXPECT_TRUE(gate::compare_to_baseline(base, early, tolerance("p99=10%")).regression());
}

TEST(GateHistograms, LabelsComeFromTheLineOrTheOptions) {
  const std::string bare = histogram_line(10, "");
  EXPECT_THROW(parse(bare), BadInput);  // no workload, no system
  gate::ParseOptions o;
  o.histogram_workload = "W4";
  o.histogram_system = "kairos-spin";
  const auto r = gate::parse_runs(bare, "h.json", o);
  EXPECT_EQ(r.at(0).workload, "W4");
  EXPECT_EQ(r.at(0).system, "kairos-spin");
  o.histogram_workload = "W9";
  EXPECT_THROW(gate::parse_runs(bare, "h.json", o), BadInput);
}

TEST(GateHistograms, BadHistogramsAreBadInput) {
  const std::string labels = R"("workload":"W3","system":"k",)";
  kairos::LatencyHistogram empty;
  std::string e = empty.to_json();
  e.insert(1, labels);
  EXPECT_THROW(parse(e), BadInput);  // no samples
  std::string wrong_kind = histogram_line(1, R"("workload":"W3","system":"k")");
  wrong_kind.replace(wrong_kind.find("kairos.latency_histogram"), 24, "kairos.other_histogram_x");
  EXPECT_THROW(parse(wrong_kind), BadInput);
  std::string corrupt = histogram_line(1, R"("workload":"W3","system":"k")");
  corrupt.replace(corrupt.find(R"("count":10000)"), 13, R"("count":10001)");
  EXPECT_THROW(parse(corrupt), BadInput);
}

// -- output -----------------------------------------------------------------------------------

TEST(GateOutput, TableAndMarkdownShowEachFigureAndTheVerdict) {
  const auto base = parse(runs("W3", "kairos-hybrid", {10000, 10000, 10000}));
  const auto cur = parse(runs("W3", "kairos-hybrid", {20000, 20000, 20000}));
  const std::vector<gate::Comparison> cs = {gate::compare_to_baseline(base, cur, tolerance("p99=15%"), "base.jsonl")};
  const std::string table = gate::render_table(cs);
  for (const char* s : {"against baseline base.jsonl", "group", "figure", "baseline", "current", "change", "limit",
                        "verdict", "p99.99", "10000", "20000", "+100.0%", "<= +15.0%", "REGRESSION"})
    EXPECT_NE(table.find(s), std::string::npos) << s << "\n" << table;
  const std::string md = gate::render_markdown(cs);
  for (const char* s : {"| group | figure | baseline | current | change | limit | verdict |", "|---|",
                        "| W3 kairos-hybrid | p99 | 10000 | 20000 | +100.0% | <= +15.0% | **REGRESSION** |",
                        "REGRESSION: 1 of 2 judged figures"})
    EXPECT_NE(md.find(s), std::string::npos) << s << "\n" << md;
}

}  // namespace
