// ab.cpp: kairos-gate's A/B mode (gate.hpp, A/B): the record of alternate runs of a baseline
// build and a candidate build, and its judge, the paired-ratio judge of judge.cpp over the two
// runs of each round.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "judge.hpp"

namespace kairos::gate {

using nlohmann::json;

bool baseline_first(unsigned round) { return round % 2 == 0; }

namespace {

// The run's side ("baseline", "candidate"), or empty when it carries none.
std::string side_of(const Run& r) {
  if (!r.config.is_object()) return {};
  auto it = r.config.find(kBuildKey);
  return it != r.config.end() && it->is_string() ? it->get<std::string>() : std::string("?");
}

bool has_side(const Run& r) { return r.config.is_object() && r.config.contains(kBuildKey); }

std::string ab_key(const Run& r) {
  json c = r.config;
  if (c.is_object()) c.erase(kBuildKey);
  return key_of(r.workload, r.system, r.parameters, c);
}

std::string ratio_limit_text(double ratio, bool rate) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s %.3gx", rate ? ">=" : "<=", ratio);
  return buf;
}

}  // namespace

void AbRecord::add_round(std::vector<Run> baseline, std::vector<Run> candidate) {
  const std::string round = "round " + std::to_string(rounds_ + 1);
  if (baseline.empty()) throw BadInput(round + ": the baseline printed no run");
  if (candidate.empty()) throw BadInput(round + ": the candidate printed no run");
  std::map<std::string, std::pair<std::size_t, std::size_t>> counts;
  std::map<std::string, std::string> names;
  for (auto* side : {&baseline, &candidate})
    for (Run& r : *side) {
      if (has_side(r)) throw BadInput(r.where + ": the run already carries config \"" + kBuildKey + "\"");
      if (!r.config.is_object()) {
        json c = json::object();
        if (!r.config.is_null()) c["config"] = r.config;
        r.config = std::move(c);
      }
      const std::string key = ab_key(r);
      names.emplace(key, r.workload + ' ' + r.system);
      auto& [b, c] = counts[key];
      ++(side == &baseline ? b : c);
    }
  for (const auto& [key, n] : counts)
    if (n.first != n.second)
      throw BadInput(round + ": the baseline printed " + std::to_string(n.first) + " run(s) of " + names[key] +
                     ", the candidate " + std::to_string(n.second) + ": the two commands must run the same workloads");
  std::map<std::string, std::int64_t> next_base = next_repeat_, next_cand = next_repeat_;
  auto tag = [&](std::vector<Run>& side, const char* name, std::map<std::string, std::int64_t>& next) {
    for (Run& r : side) {
      r.repeat = next[ab_key(r)]++;
      r.config[kBuildKey] = name;
      r.where = round + ' ' + name + ": " + r.where;
      runs_.push_back(std::move(r));
    }
  };
  tag(baseline, kBaselineSide, next_base);
  tag(candidate, kCandidateSide, next_cand);
  next_repeat_ = std::move(next_base);
  ++rounds_;
}

json run_to_json(const Run& r) {
  json j = json::object();
  j["workload"] = r.workload;
  j["system"] = r.system;
  j["config"] = r.config;
  j["parameters"] = r.parameters;
  if (r.repeat) j["repeat"] = *r.repeat;
  if (!r.machine.empty()) j["machine"] = r.machine;
  for (const auto& [name, value] : r.figures)
    if (!j.contains(name)) j[name] = value;
  return j;
}

Comparison compare_ab(const std::vector<Run>& runs, const GateOptions& o) {
  std::vector<PairedLimit> limits;
  for (const auto* ratios : {&o.max_ratios, &o.min_ratios})
    for (const auto& [f, l] : *ratios) {
      const bool rate = ratios == &o.min_ratios;
      if (l.kind != Limit::ratio) throw BadInput("ratio limit for " + f + " must be a ratio with an x, e.g. 1.1x");
      if (f == kEarlyFires) throw BadInput("early fires have no ratio limit");
      if (!rate && higher_is_better(f))
        throw BadInput("--max-ratio " + f + ": a rate (higher is better) takes --min-ratio");
      if (rate && !higher_is_better(f))
        throw BadInput("--min-ratio " + f + ": only a rate (a figure named *_per_s) takes --min-ratio");
      limits.push_back({f, l.value, rate, ratio_limit_text(l.value, rate)});
    }
  for (const auto& [f, l] : o.tolerances) {
    if (f == "all") throw BadInput("--tolerance all: name each figure to judge (A/B mode judges the figures named)");
    if (f == kEarlyFires)
      throw BadInput("--tolerance early_fires: early fires are never tolerated (--allow-early-fires)");
    if (l.kind == Limit::ratio) throw BadInput("--tolerance " + f + ": a ratio (x) belongs to --max-ratio");
    if (l.kind == Limit::absolute)
      throw BadInput("--tolerance " + f +
                     ": A/B mode judges paired ratios; give the limit in % (10%) or as --max-ratio");
    const bool rate = higher_is_better(f);
    const double ratio = rate ? 1 / (1 + l.value) : 1 + l.value;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%g%% (%s)", rate ? ">= -" : "<= +", l.value * 100,
                  ratio_limit_text(ratio, rate).c_str());
    limits.push_back({f, ratio, rate, buf});
  }
  if (limits.empty()) throw BadInput("no --tolerance, --max-ratio or --min-ratio: nothing to judge");

  Comparison c;
  c.title = "candidate against baseline, run alternately (ABBA), paired by round";
  c.base_column = kBaselineSide;
  c.current_column = kCandidateSide;
  c.paired = true;
  std::vector<const Run*> base, cand;
  for (const Run& r : runs) {
    if (!has_side(r))
      throw BadInput(r.where + ": no config \"" + kBuildKey +
                     "\": not an A/B record (kairos-gate --record writes one)");
    const std::string side = side_of(r);
    if (side != kBaselineSide && side != kCandidateSide)
      throw BadInput(r.where + ": config \"" + kBuildKey + "\" must be \"baseline\" or \"candidate\"");
    if (!r.repeat) throw BadInput(r.where + ": an A/B run needs its \"repeat\" (the pair it belongs to)");
    if (!selected(r, o) || (!o.systems.empty() && !o.systems.count(r.system))) continue;
    (side == kBaselineSide ? base : cand).push_back(&r);
  }
  std::set<std::string> ignore = o.ignore_config;
  ignore.insert(kBuildKey);
  const std::vector<Group> bg = group_runs(base, ignore), cg = group_runs(cand, ignore);
  std::set<std::string> found, matched;
  for (const Group& g : cg) {
    const std::string key = key_of(g.workload, g.system, g.parameters, g.config);
    const Group* ref = nullptr;
    for (const Group& h : bg)
      if (key_of(h.workload, h.system, h.parameters, h.config) == key) ref = &h;
    if (!ref) throw BadInput(g.name + ": candidate runs without baseline runs of the same workload, system and config");
    matched.insert(key);
    const Pairs pairs = pairs_by_repeat(g, g.name + " (candidate)", *ref, ref->name + " (baseline)");
    if (pairs.size() < std::max(g.runs.size(), ref->runs.size()))
      c.notes.push_back(g.name + ": " + std::to_string(std::max(g.runs.size(), ref->runs.size()) - pairs.size()) +
                        " run(s) without a partner of the same repeat, not judged");
    for (const PairedLimit& limit : limits)
      if (judge_paired(c, g.name, pairs, limit, o, PassWhen::interval_within,
                       "95% interval across the limit: too noisy to tell"))
        found.insert(limit.figure);
    add_early_fire_rows(c, g, o);
  }
  for (const Group& h : bg)
    if (!matched.count(key_of(h.workload, h.system, h.parameters, h.config)))
      c.notes.push_back(h.name + ": baseline runs without candidate runs; not judged");
  for (const PairedLimit& l : limits)
    if (!found.count(l.figure)) throw BadInput("no judged pair has the figure \"" + l.figure + "\"");
  return c;
}

}  // namespace kairos::gate
