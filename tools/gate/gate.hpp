// gate.hpp: the comparison logic of kairos-gate, the latency regression gate.
//
// Input:   JSON Lines. Each non-blank line is one run: a kairos-lat report
//          ({"workload":"W3","system":"kairos-hybrid","config":{...},"parameters":{...},
//          "p50_ns":..,"p99_ns":..,"early_fires":..,...}) or a kairos::LatencyHistogram JSON form
//          ({"kind":"kairos.latency_histogram",...}), which then also carries "workload" and
//          "system" or takes them from ParseOptions. Figures are the top-level numbers: the
//          latencies p50, p90, p99, p99.9, p99.99 and max in ns (kairos-lat writes them p50_ns,
//          p90_ns, p99_ns, p99_9_ns, p99_99_ns, max_ns; both spellings name the same figure),
//          early_fires, and any other numeric field a limit names. Anything else is BadInput,
//          never a pass: malformed JSON, no runs, a workload other than W1..W7, a missing
//          workload or system, a figure the workload must report (W1: p50, p99; W3, W4: all six
//          and early_fires) missing, a figure that is null, a string, not finite, or a negative
//          count or rate (only a lateness percentile may be negative: an early fire).
// Groups:  runs of the same workload, parameters, system and config (less the ignored config
//          keys) are repeats of one measurement; each figure of a group is the median of its
//          runs. A group judged from fewer than min_runs runs is BadInput: the gate refuses to
//          judge. A reference group pairs with the groups of the same workload and parameters.
// Verdicts:
//   baseline  each figure with a tolerance is compared with the same group in a stored
//             baseline: a cost (latency) regresses when current > baseline + t * |baseline|
//             for a relative tolerance, or > baseline + t for an absolute one; a rate (a name
//             ending in _per_s, or runs_per_task*) when current < baseline - t * |baseline|
//             or < baseline - t. A baseline group missing from current is BadInput.
//   reference each figure with a ratio limit is compared with a reference system measured in
//             the same input: a cost regresses when current > max_ratio * reference; a rate
//             when current < min_ratio * reference.
//   Early fires are a correctness bug: any judged run with early_fires > 0 regresses, unless
//   allowed.
// Threads: plain functions over values; no shared state.
#pragma once
#include <cstdint>
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

// The latency figures of a kairos-lat report, in the order the gate prints them.
inline constexpr const char* kLatencyFigures[] = {"p50", "p90", "p99", "p99.9", "p99.99", "max"};
inline constexpr const char* kEarlyFires = "early_fires";

// Figures a report of each workload must carry (WORKLOADS.md): W1 samples p50/p99 of the
// submit cost; W3 and W4 report the full lateness distribution. Others report no latency.
std::vector<std::string> required_figures(std::string_view workload);
bool is_valid_workload(std::string_view workload);  // W1..W7
bool higher_is_better(std::string_view figure);     // rates: *_per_s, runs_per_task*
std::string figure_name(std::string_view name);     // "p99_ns" -> "p99"; others unchanged

struct Run {
  std::string where;     // "file:line", for messages
  std::string workload;  // W1..W7
  std::string system;
  nlohmann::json config = nlohmann::json::object();      // the system's configuration
  nlohmann::json parameters = nlohmann::json::object();  // the workload's shape
  std::map<std::string, double> figures;  // every numeric top-level field, by figure_name()
};

struct ParseOptions {
  std::string histogram_workload;  // for histogram lines that carry no "workload"
  std::string histogram_system;    // for histogram lines that carry no "system"
};

// One run per non-blank line of text; source names the input in messages. Throws BadInput.
std::vector<Run> parse_runs(std::string_view text, const std::string& source, const ParseOptions& options = {});
// The same for a file; "-" reads standard input. Throws BadInput (also for an unreadable file).
std::vector<Run> read_runs(const std::string& path, const ParseOptions& options = {});

struct Tolerance {
  bool relative = true;  // value is a fraction (0.15 for 15%); else an absolute amount, in ns
  double value = 0;
};
// "15%" or "2.5%"; "500ns", "3us", "1.5ms", "1s"; a plain number for a rate figure.
// Throws BadInput naming the text.
Tolerance parse_tolerance(std::string_view text);
// "p99=15%" -> {"p99", 15%}. Throws BadInput.
std::pair<std::string, Tolerance> parse_tolerance_assignment(std::string_view text);
// "p99=0.5" -> {"p99", 0.5}. Throws BadInput.
std::pair<std::string, double> parse_ratio_assignment(std::string_view text);

struct GateOptions {
  // -- baseline mode: figure -> tolerance; the figure "all" applies to every latency figure
  //    that has no tolerance of its own.
  std::map<std::string, Tolerance> tolerances;
  // -- reference mode --
  std::string reference;                    // system measured in the same input
  std::map<std::string, double> max_ratios; // costs: current <= ratio * reference
  std::map<std::string, double> min_ratios; // rates: current >= ratio * reference
  std::vector<std::string> match;           // config keys that pair a group with its reference
  // -- both --
  unsigned min_runs = 3;
  std::set<std::string> systems;            // judge only these systems (empty: all)
  std::set<std::string> workloads;          // judge only these workloads (empty: all)
  std::set<std::string> ignore_config;      // config keys that do not split groups
  bool allow_early_fires = false;
};

enum class Verdict { ok, regression, info };

struct Row {
  std::string group;     // "W3 kairos-hybrid" (plus its config when that tells groups apart)
  std::string figure;
  double baseline = 0;   // the baseline median, or the reference system's median
  double current = 0;    // median of the current runs
  std::string change;    // "+12.3%" (baseline) or "0.42x" (reference)
  std::string limit;     // "<= +15%", "<= 0.5x"; empty when not judged
  Verdict verdict = Verdict::info;
  std::string note;      // why a row is only informative
};

struct Comparison {
  std::string title;             // "against baseline base.jsonl", "against reference naive-stpe"
  std::string baseline_column;   // "baseline" or "naive-stpe"
  std::vector<Row> rows;
  std::vector<std::string> notes;  // groups that were not judged, and why
  bool regression() const;
  std::size_t regressions() const;
  std::size_t judged() const;      // rows with a verdict (ok or regression)
};

// Throws BadInput for input that cannot be judged (see the top of this file).
Comparison compare_to_baseline(const std::vector<Run>& baseline, const std::vector<Run>& current,
                               const GateOptions& options, const std::string& baseline_name = "baseline");
Comparison compare_to_reference(const std::vector<Run>& current, const GateOptions& options);

double median(std::vector<double> values);  // of a non-empty list; the mean of the middle two
std::string format_value(double v);         // "12345", "2493766", "12.5", "0.0523"
std::string render_table(const std::vector<Comparison>& comparisons);     // fixed-width text
std::string render_markdown(const std::vector<Comparison>& comparisons);  // GitHub Markdown

}  // namespace kairos::gate
