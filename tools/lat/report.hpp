// report.hpp: turns JSON records (one per run) into readable tables: for each workload and each
// parameter set, one row per system configuration with the median of its repeats and, with more
// than one repeat, the [min-max] spread. Markdown adds, per workload, the ratio kairos/peer of the
// headline figures (medians).
#pragma once
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kairos::lat {

// The repeats of one (workload, parameters, system, config).
struct RunGroup {
  std::string workload;
  std::string params_key;  // the parameters object, dumped: groups with equal shape
  std::string params_label;  // e.g. "producers=2" for the parameters that vary between groups
  std::string system;
  std::string label;       // the row label: system plus the configuration that matters
  bool is_kairos = false;
  std::vector<nlohmann::ordered_json> runs;
  std::vector<double> values(const std::string& figure) const;  // present in each run
  double median(const std::string& figure) const;               // NaN if absent
};

// Groups records in first-seen order of workload, then parameters, then system.
std::vector<RunGroup> group_runs(const std::vector<nlohmann::ordered_json>& records);

// The row label of a record: "kairos-hybrid", "kairos-spin 2 shards pinned", "java-stpe-2",
// "kairos-hybrid warm" (config.warm: measured after a warm-up pass on another system), ...
std::string row_label(const nlohmann::ordered_json& record);

// Prints, per workload and parameter set, the table, the kairos/peer ratios (markdown) and a
// note for each run whose producer fell behind its schedule (producer_behind_note).
void print_tables(std::ostream& out, const std::vector<RunGroup>& groups, bool markdown);

// W3's producer submits one timer per parameters.interval_ns by the clock; pacing_lag_max_ns is
// how late its latest submission was against its slot. Behind by more than 20 intervals and
// 1 ms, it offered fewer timers per second than the workload says (the lateness figures stay
// right: each is measured from its own submission), so the run is flagged:
//   "producer_fell_behind": true in the record (flag_producer_behind, for W3 records with the
//   figure), and a note under the table naming the run and the lag.
bool producer_fell_behind(const nlohmann::ordered_json& record);
void flag_producer_behind(nlohmann::ordered_json& record);
std::string producer_behind_note(const nlohmann::ordered_json& record);  // "" when not behind

// For SVG plots: the label and the median of p50..p99.99 and max of each group of `workload`.
struct PercentileSeries {
  std::string label;
  std::vector<double> values;  // p50, p90, p99, p99.9, p99.99, max (ns)
};
std::vector<PercentileSeries> lateness_series(const std::vector<RunGroup>& groups,
                                              const std::string& workload);

}  // namespace kairos::lat
