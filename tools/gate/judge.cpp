// judge.cpp: kairos-gate's verdicts (gate.hpp, Verdicts): against a baseline (the change of the
// medians, a one-sided U test), against a reference system (paired by repeat), and the one
// paired-ratio judge that the reference mode and the A/B mode (ab.cpp) share.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "judge.hpp"

namespace kairos::gate {

using nlohmann::json;

std::string limit_text(const Limit& l, Unit unit, bool rate_min) {
  char buf[64];
  switch (l.kind) {
    case Limit::relative:
      std::snprintf(buf, sizeof buf, "<= +%g%%", l.value * 100);
      return buf;
    case Limit::absolute:
      return "<= +" + format_value(l.value, unit);
    case Limit::ratio:
      std::snprintf(buf, sizeof buf, "%s %gx", rate_min ? ">=" : "<=", l.value);
      return buf;
  }
  return {};
}

void add_early_fire_rows(Comparison& c, const Group& g, const GateOptions& o) {
  double total = 0;
  for (const Run* r : g.runs) {
    auto it = r->figures.find(kEarlyFires);
    if (it != r->figures.end()) total += it->second;
  }
  if (total <= 0) return;
  Row row;
  row.group = g.name;
  row.figure = kEarlyFires;
  row.unit = Unit::count;
  std::vector<double> v;
  for (const Run* r : g.runs) v.push_back(r->figures.count(kEarlyFires) ? r->figures.at(kEarlyFires) : 0.0);
  row.current = spread_of(v);
  row.limit = "0";
  row.verdict = o.allow_early_fires ? Verdict::info : Verdict::regression;
  row.note = o.allow_early_fires ? "early fires allowed (--allow-early-fires)" : "a task started before its deadline";
  c.rows.push_back(std::move(row));
}

Pairs pairs_by_repeat(const Group& g, const std::string& g_label, const Group& ref, const std::string& ref_label) {
  std::map<std::int64_t, const Run*> by;
  for (const Run* r : ref.runs)
    if (!by.emplace(*r->repeat, r).second)
      throw BadInput(r->where + ": repeat " + std::to_string(*r->repeat) + " of " + ref_label + " given twice");
  std::set<std::int64_t> mine;
  Pairs pairs;
  for (const Run* r : g.runs) {
    if (!mine.insert(*r->repeat).second)
      throw BadInput(r->where + ": repeat " + std::to_string(*r->repeat) + " of " + g_label + " given twice");
    auto it = by.find(*r->repeat);
    if (it != by.end()) pairs.emplace_back(r, it->second);
  }
  return pairs;
}

bool judge_paired(Comparison& c, const std::string& group, const Pairs& pairs, const PairedLimit& limit,
                  const GateOptions& o, PassWhen when, const char* undecided) {
  std::vector<double> mine, theirs, ratios;
  for (const auto& [a, b] : pairs) {
    auto ia = a->figures.find(limit.figure), ib = b->figures.find(limit.figure);
    if (ia == a->figures.end() || ib == b->figures.end()) continue;
    mine.push_back(ia->second);
    theirs.push_back(ib->second);
    ratios.push_back(safe_ratio(ia->second, ib->second));
  }
  if (ratios.empty()) return false;
  Row row;
  row.group = group;
  row.figure = limit.figure;
  row.unit = unit_of(limit.figure);
  row.base = spread_of(theirs);
  row.current = spread_of(mine);
  row.statistic = median(ratios);
  std::tie(row.ci_low, row.ci_high) = bootstrap_median_ci(ratios, o.resamples);
  row.limit = limit.text;
  // Within / beyond the limit: at or below it for a cost, at or above it for a rate.
  const auto within = [&](double x) { return limit.rate ? x >= limit.ratio : x <= limit.ratio; };
  const bool passes =
      when == PassWhen::median_within ? within(row.statistic) : within(limit.rate ? row.ci_low : row.ci_high);
  const bool surely_beyond = limit.rate ? row.ci_high < limit.ratio : row.ci_low > limit.ratio;
  if (ratios.size() < o.min_runs) {
    row.verdict = Verdict::inconclusive;
    row.note = std::to_string(ratios.size()) + " pairs, fewer than --min-runs " + std::to_string(o.min_runs);
  } else if (passes) {
    row.verdict = Verdict::pass;
  } else if (surely_beyond) {
    row.verdict = Verdict::regression;
  } else {
    row.verdict = Verdict::inconclusive;
    row.note = undecided;
  }
  c.rows.push_back(std::move(row));
  return true;
}

const char* verdict_text(Verdict v) {
  switch (v) {
    case Verdict::pass:
      return "pass";
    case Verdict::regression:
      return "REGRESSION";
    case Verdict::inconclusive:
      return "inconclusive";
    case Verdict::info:
      return "-";
  }
  return "?";
}

std::size_t Comparison::count(Verdict v) const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [v](const Row& r) { return r.verdict == v; }));
}

Verdict overall(const std::vector<Comparison>& cs) {
  std::size_t reg = 0, inc = 0;
  for (const Comparison& c : cs) reg += c.count(Verdict::regression), inc += c.count(Verdict::inconclusive);
  return reg ? Verdict::regression : inc ? Verdict::inconclusive : Verdict::pass;
}

Comparison compare_to_baseline(const std::vector<Run>& baseline, const std::vector<Run>& current, const GateOptions& o,
                               const std::string& baseline_name) {
  if (o.tolerances.empty()) throw BadInput("no --tolerance: nothing to judge against the baseline");
  for (const auto& [figure, limit] : o.tolerances) {
    if (limit.kind == Limit::ratio) throw BadInput("--tolerance " + figure + ": a ratio (x) belongs to --max-ratio");
    if (limit.kind == Limit::absolute && figure != "all" && unit_of(figure) != Unit::ns)
      throw BadInput("--tolerance " + figure + ": a time limit for a figure that is not a time; use %");
    if (figure == kEarlyFires)
      throw BadInput("--tolerance early_fires: early fires are never tolerated (--allow-early-fires)");
  }
  Comparison c;
  c.title = "against baseline " + baseline_name;
  c.base_column = "baseline";
  // Machines.
  std::set<std::string> base_machines, cur_machines;
  for (const Run& r : baseline)
    if (!r.machine.empty()) base_machines.insert(r.machine);
  for (const Run& r : current)
    if (!r.machine.empty()) cur_machines.insert(r.machine);
  if (!base_machines.empty() && !cur_machines.empty() && base_machines != cur_machines) {
    const std::string msg = "baseline measured on " + *base_machines.begin() + ", current on " + *cur_machines.begin();
    if (!o.allow_machine_mismatch)
      throw BadInput("machine mismatch: " + msg + " (--allow-machine-mismatch to compare anyway)");
    c.notes.push_back("machine mismatch (allowed): " + msg);
  }
  std::vector<const Run*> bsel, csel;
  for (const Run& r : baseline)
    if (selected(r, o) && (o.systems.empty() || o.systems.count(r.system))) bsel.push_back(&r);
  for (const Run& r : current)
    if (selected(r, o) && (o.systems.empty() || o.systems.count(r.system))) csel.push_back(&r);
  const std::vector<Group> bg = group_runs(bsel, o.ignore_config), cg = group_runs(csel, o.ignore_config);
  std::set<std::string> found;
  for (const Group& b : bg) {
    const Group* cur = nullptr;
    for (const Group& g : cg)
      if (key_of(g.workload, g.system, g.parameters, g.config) == key_of(b.workload, b.system, b.parameters, b.config))
        cur = &g;
    if (!cur) throw BadInput(b.name + " is in the baseline but not in the current runs");
    std::vector<std::string> figures;
    for (const auto& [f, l] : o.tolerances) {
      if (f != "all") figures.push_back(f);
    }
    if (o.tolerances.count("all"))
      for (const auto& [f, v] : b.runs.front()->figures)
        if (unit_of(f) == Unit::ns && !o.tolerances.count(f) && cur->runs.front()->figures.count(f))
          figures.push_back(f);
    for (const std::string& f : figures) {
      const Limit& limit = o.tolerances.count(f) ? o.tolerances.at(f) : o.tolerances.at("all");
      const std::vector<double> bv = values_of(b.runs, f, b.name + " (baseline)");
      const std::vector<double> cv = values_of(cur->runs, f, cur->name);
      if (bv.empty() || cv.empty()) continue;
      found.insert(f);
      Row row;
      row.group = b.name;
      row.figure = f;
      row.unit = unit_of(f);
      row.base = spread_of(bv);
      row.current = spread_of(cv);
      const bool rate = higher_is_better(f);
      row.limit = limit_text(limit, row.unit, false);
      // change: how much worse current is (positive: worse).
      double worse_by = 0;
      if (limit.kind == Limit::absolute) {
        worse_by = rate ? row.base.median - row.current.median : row.current.median - row.base.median;
        row.statistic = worse_by;
      } else {
        row.statistic =
            (rate ? safe_ratio(row.base.median, row.current.median) : safe_ratio(row.current.median, row.base.median)) -
            1;
        worse_by = row.statistic;
        const auto [lo, hi] = rate ? bootstrap_ratio_ci(bv, cv, o.resamples) : bootstrap_ratio_ci(cv, bv, o.resamples);
        row.ci_low = lo - 1;
        row.ci_high = hi - 1;
      }
      row.p_value = rate ? mann_whitney_p_greater(bv, cv) : mann_whitney_p_greater(cv, bv);
      if (bv.size() < o.min_runs || cv.size() < o.min_runs) {
        row.verdict = Verdict::inconclusive;
        row.note = "fewer than --min-runs " + std::to_string(o.min_runs) + " runs";
      } else if (worse_by <= limit.value) {
        row.verdict = Verdict::pass;
      } else if (row.p_value < o.alpha) {
        row.verdict = Verdict::regression;
        // The verdict is the U test's (ranks of all runs); the interval is of the medians' ratio,
        // which can span 0 when a few runs scatter: say which decided, and what the interval means.
        char buf[160];
        std::snprintf(
            buf, sizeof buf, "decided by the U test: p = %.3g < %.3g with the change beyond the limit%s", row.p_value,
            o.alpha, !std::isnan(row.ci_low) && row.ci_low <= 0 ? "; the interval spans 0: its size is uncertain" : "");
        row.note = buf;
      } else {
        row.verdict = Verdict::inconclusive;
        char buf[96];
        std::snprintf(buf, sizeof buf, "beyond the limit but not significant (p = %.3f >= %.3g)", row.p_value, o.alpha);
        row.note = buf;
      }
      c.rows.push_back(std::move(row));
    }
    add_early_fire_rows(c, *cur, o);
  }
  for (const auto& [f, l] : o.tolerances)
    if (f != "all" && !found.count(f)) throw BadInput("no judged group has the figure \"" + f + "\" on both sides");
  if (c.count(Verdict::pass) + c.count(Verdict::regression) + c.count(Verdict::inconclusive) == 0)
    throw BadInput("no figure was judged: check --tolerance, --workload and --system");
  char rule[240];
  std::snprintf(rule, sizeof rule,
                "a figure is a regression when its median change is beyond the limit and a one-sided "
                "Mann-Whitney U test says current is worse (p < %.3g); the 95%% interval shows the change's "
                "size and does not decide",
                o.alpha);
  c.notes.push_back(rule);
  return c;
}

Comparison compare_to_reference(const std::vector<Run>& current, const GateOptions& o) {
  if (o.max_ratios.empty() && o.min_ratios.empty()) throw BadInput("no --max-ratio or --min-ratio: nothing to judge");
  std::vector<PairedLimit> limits;
  for (const auto* ratios : {&o.max_ratios, &o.min_ratios})
    for (const auto& [f, l] : *ratios) {
      if (l.kind != Limit::ratio) throw BadInput("ratio limit for " + f + " must be a ratio with an x, e.g. 0.5x");
      if (f == kEarlyFires) throw BadInput("early fires have no ratio limit");
      if (ratios == &o.max_ratios && higher_is_better(f))
        throw BadInput("--max-ratio " + f + ": a rate (higher is better) takes --min-ratio");
      if (ratios == &o.min_ratios && !higher_is_better(f))
        throw BadInput("--min-ratio " + f + ": only a rate (a figure named *_per_s) takes --min-ratio");
      const bool rate = ratios == &o.min_ratios;
      limits.push_back({f, l.value, rate, limit_text(l, unit_of(f), rate)});
    }
  Comparison c;
  c.title = "against reference " + o.reference + " (paired by repeat)";
  c.base_column = o.reference;
  c.paired = true;
  std::vector<const Run*> sel;
  for (const Run& r : current)
    if (selected(r, o)) sel.push_back(&r);
  const std::vector<Group> groups = group_runs(sel, o.ignore_config);
  bool reference_seen = false;
  std::set<std::string> found;
  for (const Group& g : groups) {
    if (g.system == o.reference) {
      reference_seen = true;
      continue;
    }
    if (!o.systems.empty() && !o.systems.count(g.system)) continue;
    const Group* ref = nullptr;
    for (const Group& h : groups) {
      if (h.system != o.reference || h.workload != g.workload || h.parameters != g.parameters) continue;
      bool same = true;
      for (const std::string& k : o.match) same &= g.config.value(k, json()) == h.config.value(k, json());
      if (same) {
        ref = &h;
        break;
      }
    }
    if (!ref) {
      c.notes.push_back(g.name + ": no " + o.reference + " runs of the same workload and parameters; not judged");
      continue;
    }
    // Pairs: by repeat when every run carries one, else by position.
    const auto has_repeat = [](const Run* r) { return r->repeat.has_value(); };
    Pairs pairs;
    if (std::all_of(g.runs.begin(), g.runs.end(), has_repeat) &&
        std::all_of(ref->runs.begin(), ref->runs.end(), has_repeat)) {
      pairs = pairs_by_repeat(g, g.name, *ref, ref->name);
    } else {
      for (std::size_t k = 0; k < std::min(g.runs.size(), ref->runs.size()); ++k)
        pairs.emplace_back(g.runs[k], ref->runs[k]);
    }
    for (const PairedLimit& limit : limits)
      if (judge_paired(c, g.name, pairs, limit, o, PassWhen::median_within,
                       "median beyond the limit, 95% interval across it"))
        found.insert(limit.figure);
    add_early_fire_rows(c, g, o);
  }
  if (!reference_seen) throw BadInput("the reference system \"" + o.reference + "\" has no runs in the current input");
  for (const PairedLimit& l : limits)
    if (!found.count(l.figure)) throw BadInput("no judged pair has the figure \"" + l.figure + "\"");
  return c;
}

}  // namespace kairos::gate
