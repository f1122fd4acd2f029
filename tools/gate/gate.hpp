// gate.hpp: the comparison logic of kairos-gate, the latency regression gate.
//
// Inputs (the format is found from the text, per file):
//   - JSON Lines of kairos-lat: each line one run, {"workload":..,"system":..,"config":{..},
//     "parameters":{..},"repeat":k,"machine":{..},"p50_ns":..,...}. Figures are the numeric
//     top-level fields; p50_ns, p99_9_ns, max_ns, ... are read as p50, p99.9, max.
//   - kairos::LatencyHistogram JSON lines ({"kind":"kairos.latency_histogram",...}): figures
//     p50, p90, p99, p99.9, p99.99, max, mean, stddev, count and early_fires (below_zero).
//   - HdrHistogram interval logs (.hlog): each interval is one run (repeat = its position), its
//     tag (or --workload) the workload; the same figures as a histogram.
//   - Google Benchmark JSON (--benchmark_format=json, with --benchmark_repetitions): each
//     repetition of each benchmark is one run (aggregates are skipped); the workload is the
//     benchmark's name, repeat its repetition_index, figures real_time and cpu_time (in ns,
//     whatever time_unit says), items_per_second and bytes_per_second (as *_per_s), and its
//     numeric counters.
//   Any workload and system name is judged. Lines or files that are none of these, figures that
//   are not finite numbers, negative counts or rates: BadInput (exit 2), never a pass.
// Units: a figure named p<N>, max, min, mean, stddev, *_ns, real_time or cpu_time is a time in
//   ns; *_per_s a rate (higher is better); anything else a count. Every value printed carries its
//   unit. A limit is a percentage (15%), a time with its unit (10us; only for a time figure) or a
//   ratio with an x (0.5x); a bare number is BadInput.
// Groups: runs of the same workload, parameters, system and config (less ignored keys) are the
//   repeats of one measurement.
// Verdicts, per judged figure; the whole gate is a regression if any figure is, else
//   inconclusive if any figure is, else a pass:
//   reference (--reference SYSTEM, the same input): each run is paired with the reference's run
//     of the same repeat (the k-th with the k-th when runs carry no repeat). The statistic is the
//     median of the paired ratios run / reference, with a 95% bootstrap confidence interval.
//     pass: median within the limit; regression: the whole interval beyond it; inconclusive:
//     median beyond, interval across the limit, or fewer than --min-runs pairs.
//   baseline (--baseline FILE): the current runs against the stored runs of the same group.
//     change = median(current) / median(baseline) - 1 (a time, a count), or its inverse for a rate;
//     a one-sided Mann-Whitney U test asks whether current is worse. pass: change within the
//     limit; regression: change beyond it and p < alpha; inconclusive: beyond it but not
//     significant, or fewer than --min-runs runs on a side.
//   Early fires are a correctness bug: any judged run with early_fires > 0 is a regression,
//   unless allowed.
// Machine: baseline and current runs that name different machines (kairos-lat's cpu model and
//   CPU count; Google Benchmark's host and CPU count) are BadInput unless allowed; then a note.
// Threads: plain functions over values; no shared state.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kairos::gate {

// Input the gate cannot judge; kairos-gate exits 2 with its message.
struct BadInput : std::runtime_error {
  using runtime_error::runtime_error;
};

inline constexpr const char* kEarlyFires = "early_fires";

enum class Unit { ns, per_s, count };
Unit unit_of(std::string_view figure);
bool higher_is_better(std::string_view figure);  // rates
std::string figure_name(std::string_view name);  // "p99_ns" -> "p99", "p99_9_ns" -> "p99.9"; others unchanged

struct Run {
  std::string where;     // "file:line", for messages
  std::string workload;
  std::string system;
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json parameters = nlohmann::json::object();
  std::optional<std::int64_t> repeat;  // which repeat of the measurement; pairs runs
  std::string machine;                 // empty when the input does not say
  std::map<std::string, double> figures;
};

struct ParseOptions {
  std::string workload;  // for histograms, logs without tags: default the file's stem
  std::string system;    // for histograms, logs and benchmarks: default "current"
};

// Runs of one input text (any format above); source names it in messages. Throws BadInput.
std::vector<Run> parse_runs(std::string_view text, const std::string& source, const ParseOptions& options = {});
// The same for a file; "-" reads standard input. Throws BadInput (also for an unreadable file).
std::vector<Run> read_runs(const std::string& path, const ParseOptions& options = {});

struct Limit {
  enum Kind { relative, absolute, ratio } kind = relative;
  double value = 0;  // a fraction (0.15), ns, or a ratio
};
// "15%", "2.5%"; "500ns", "3us", "1.5ms", "1s"; "0.5x". A bare number, another unit, a
// negative or non-finite value: BadInput naming the text.
Limit parse_limit(std::string_view text);
// "p99=15%" -> {"p99", 15%}; "p99=0.5x" -> {"p99", 0.5x}. Throws BadInput.
std::pair<std::string, Limit> parse_limit_assignment(std::string_view text);

struct GateOptions {
  std::map<std::string, Limit> tolerances;  // baseline mode; "all" for every time figure
  std::string reference;                    // reference mode
  std::map<std::string, Limit> max_ratios;  // costs: run <= ratio x reference
  std::map<std::string, Limit> min_ratios;  // rates: run >= ratio x reference
  std::vector<std::string> match;           // config keys that pair a group with its reference
  unsigned min_runs = 5;
  double alpha = 0.05;                      // significance level of the Mann-Whitney U test
  unsigned resamples = 2000;                // bootstrap resamples (seeded: the verdict is repeatable)
  std::set<std::string> systems, workloads, ignore_config;
  bool allow_early_fires = false;
  bool allow_machine_mismatch = false;
};

enum class Verdict { pass, regression, inconclusive, info };
const char* verdict_text(Verdict v);

// A median with its spread: the smallest and largest run, and the run count.
struct Spread {
  double median = 0, min = 0, max = 0;
  std::size_t n = 0;
};
Spread spread_of(std::vector<double> values);

struct Row {
  std::string group;
  std::string figure;
  Unit unit = Unit::ns;
  Spread base;           // baseline runs, or the reference's runs
  Spread current;
  double statistic = 0;  // reference: median paired ratio; baseline: change (a fraction)
  double ci_low = std::numeric_limits<double>::quiet_NaN();   // 95% bootstrap interval of it
  double ci_high = std::numeric_limits<double>::quiet_NaN();
  double p_value = std::numeric_limits<double>::quiet_NaN();  // baseline: Mann-Whitney U
  std::string limit;     // "<= +15%", "<= 0.5x"
  Verdict verdict = Verdict::info;
  std::string note;
};

struct Comparison {
  std::string title;
  std::string base_column;  // "baseline" or the reference's name
  std::string current_column = "current";
  bool paired = false;      // reference mode: statistic is a ratio
  std::vector<Row> rows;
  std::vector<std::string> notes;
  std::size_t count(Verdict v) const;
};

Comparison compare_to_baseline(const std::vector<Run>& baseline, const std::vector<Run>& current,
                               const GateOptions& options, const std::string& baseline_name = "baseline");
Comparison compare_to_reference(const std::vector<Run>& current, const GateOptions& options);
// regression if any row is one, else inconclusive if any, else pass (info rows do not count).
Verdict overall(const std::vector<Comparison>& comparisons);

// ---- A/B: a baseline build and a candidate build measured alternately ----------------------
// One invocation runs the baseline's command and the candidate's command (the same workload and
// flags, built from two trees) once each per round, for N rounds, and judges the candidate by
// the ratios candidate / baseline of the two runs of each round. Runs minutes apart on a shared
// VM are not comparable (its state can move a median by 2x within a minute); the two runs of one
// round are seconds apart and see the same state, so the ratio cancels it.
// Order: ABBA blocks (baseline first in even rounds, candidate first in odd rounds), so a
// steady drift of the machine during an invocation, or an effect of running second, favours
// neither side.
// Records: every run carries config "build" = "baseline" or "candidate" and repeat = its index
// within its group over all rounds (the two runs of a pair share it), so a record written with
// --record is judged again, unchanged, with --ab FILE.
inline constexpr const char* kBuildKey = "build";
inline constexpr const char* kBaselineSide = "baseline";
inline constexpr const char* kCandidateSide = "candidate";

// Whether the baseline runs first in round `round` (0-based): ABBA.
bool baseline_first(unsigned round);

// Collects the runs of each round, tagged as above.
class AbRecord {
 public:
  // The runs each command printed in one round. BadInput (naming the round) when either printed
  // no run, a run already carries config "build", or the two sides' groups (workload, system,
  // parameters, config) or run counts per group differ: such runs cannot be paired.
  void add_round(std::vector<Run> baseline, std::vector<Run> candidate);
  const std::vector<Run>& runs() const { return runs_; }
  unsigned rounds() const { return rounds_; }

 private:
  std::vector<Run> runs_;
  std::map<std::string, std::int64_t> next_repeat_;  // per group key
  unsigned rounds_ = 0;
};

// A run as a kairos-lat-style JSON line (workload, system, config, parameters, repeat, machine,
// its figures by name): parse_runs reads it back to the same run.
nlohmann::json run_to_json(const Run& run);

// Judges an A/B record: each candidate group against the baseline group of the same workload,
// system, parameters and config, paired by repeat. The statistic is the median of the paired
// ratios candidate / baseline, with its 95% bootstrap interval. Limits: --max-ratio FIGURE=1.1x
// (a cost), --min-ratio FIGURE=0.9x (a rate), or --tolerance FIGURE=10% (a cost: ratio 1.10x; a
// rate: ratio 1/1.10). Verdicts, each decided only with confidence:
//   pass:         the whole interval within the limit;
//   regression:   the whole interval beyond it;
//   inconclusive: the interval across the limit (too noisy to tell), or fewer than --min-runs
//                 pairs. Never reported as a pass or a regression.
// Early fires in a candidate run are a regression unless allowed. BadInput: runs without a
// side, a candidate group without a baseline group, no limit, a limit in ns.
Comparison compare_ab(const std::vector<Run>& runs, const GateOptions& options);

// ---- statistics ---------------------------------------------------------------------------
double median(std::vector<double> values);  // of a non-empty list; the mean of the middle two
// One-sided Mann-Whitney U: the probability of a rank sum of `worse` at least this large if both
// samples came from one distribution (ties get mid-ranks; normal approximation with tie and
// continuity correction; exact enumeration when both samples have at most 10 values).
double mann_whitney_p_greater(const std::vector<double>& worse, const std::vector<double>& better);
// 95% percentile bootstrap interval of the median of `values` (seeded).
std::pair<double, double> bootstrap_median_ci(const std::vector<double>& values, unsigned resamples,
                                              std::uint64_t seed = 1);
// 95% bootstrap interval of median(a) / median(b), resampling each side (seeded).
std::pair<double, double> bootstrap_ratio_ci(const std::vector<double>& a, const std::vector<double>& b,
                                             unsigned resamples, std::uint64_t seed = 1);

// ---- output -------------------------------------------------------------------------------
std::string format_value(double v, Unit unit);  // "812 ns", "12.5 us", "3.20 ms", "1.25 M/s", "17"
std::string format_percent(double fraction);    // "+12.3%", "-4.0%", "+2.5e+06%" never: >1000% prints "x11.0"
std::string render_table(const std::vector<Comparison>& comparisons);
std::string render_markdown(const std::vector<Comparison>& comparisons);

}  // namespace kairos::gate
