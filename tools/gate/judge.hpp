// judge.hpp: what kairos-gate's files share inside the tool (not part of gate.hpp's interface):
// the groups of runs (groups.cpp), and the judges' common parts (judge.cpp): the early-fire rows
// and the one paired-ratio judge that both --reference and --ab use.
// Threads: plain functions over values; no shared state.
#pragma once
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gate.hpp"

namespace kairos::gate {

// ---- groups: the repeats of one measurement --------------------------------------------------

struct Group {
  std::string workload, system;
  nlohmann::json parameters, config;  // config less the ignored keys
  std::vector<const Run*> runs;
  std::string name;  // workload and system, plus what tells it from a group of the same two
};

// The group a run belongs to: workload, system, parameters and config (less `ignore`).
nlohmann::json reduced_config(const Run& r, const std::set<std::string>& ignore);
std::string key_of(const std::string& workload, const std::string& system, const nlohmann::json& parameters,
                   const nlohmann::json& config);
inline std::string key_of(const Group& g) { return key_of(g.workload, g.system, g.parameters, g.config); }
// The groups of `runs`, in order of first appearance.
std::vector<Group> group_runs(const std::vector<const Run*>& runs, const std::set<std::string>& ignore);
// --workload: whether the run is judged at all.
bool selected(const Run& r, const GateOptions& o);
// The values of a figure over runs; BadInput when only some runs have it.
std::vector<double> values_of(const std::vector<const Run*>& runs, const std::string& figure, const std::string& name);

// ---- judging ----------------------------------------------------------------------------------

// a / b, with 0 / 0 = 1 and x / 0 = inf.
inline double safe_ratio(double a, double b) {
  if (b == 0) return a == 0 ? 1.0 : std::numeric_limits<double>::infinity();
  return a / b;
}

// "<= +15%", "<= +10 us", "<= 0.5x" / ">= 0.9x" (rate_min).
std::string limit_text(const Limit& l, Unit unit, bool rate_min);

// A regression row when any run of g fired early (an info row when allowed).
void add_early_fire_rows(Comparison& c, const Group& g, const GateOptions& o);

// Runs of `g` paired with those of `ref` by their repeat; a repeat given twice on either side is
// BadInput, naming the side by its label (the group's name, plus " (candidate)" and the like).
using Pairs = std::vector<std::pair<const Run*, const Run*>>;
Pairs pairs_by_repeat(const Group& g, const std::string& g_label, const Group& ref, const std::string& ref_label);

// One limit of the paired-ratio judge: the figure's run / reference ratio must stay at or below
// `ratio` (a cost), or at or above it (a rate).
struct PairedLimit {
  std::string figure;
  double ratio = 1;
  bool rate = false;
  std::string text;  // the limit as the row shows it
};
// What makes a pass: the median ratio within the limit (--reference), or its whole 95% interval
// (--ab: a verdict only with confidence).
enum class PassWhen { median_within, interval_within };

// The paired-ratio judge: the statistic is the median of the pairs' ratios run / reference of
// the limit's figure, with its 95% bootstrap interval. Fewer than --min-runs pairs: inconclusive;
// a pass as `when` says; the whole interval beyond the limit: a regression; otherwise
// inconclusive, with `undecided` as the note. Appends the row to c; false when no pair has the
// figure on both sides (no row).
bool judge_paired(Comparison& c, const std::string& group, const Pairs& pairs, const PairedLimit& limit,
                  const GateOptions& o, PassWhen when, const char* undecided);

}  // namespace kairos::gate
