// gate.cpp: parsing, grouping and judging of latency reports for kairos-gate (see gate.hpp).
#include "gate.hpp"

#include <kairos/latency_histogram.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <utility>

namespace kairos::gate {
namespace {

using nlohmann::json;

bool is_latency_figure(std::string_view name) {
  return std::find(std::begin(kLatencyFigures), std::end(kLatencyFigures), name) != std::end(kLatencyFigures);
}
bool is_known_figure(std::string_view name) { return is_latency_figure(name) || name == kEarlyFires; }

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::string describe(const json& j) {
  std::string s = j.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// Lateness percentiles may be negative (an early fire); counts and rates may not.
void check_figure_value(const std::string& where, const std::string& name, double v) {
  if (!std::isfinite(v)) throw BadInput(where + ": figure \"" + name + "\" is not a finite number");
  if (v < 0 && !is_latency_figure(name))
    throw BadInput(where + ": figure \"" + name + "\" is negative (" + format_value(v) + ")");
}

Run run_from_histogram(const json& j, std::string_view line, const std::string& where, const ParseOptions& options) {
  if (!j["kind"].is_string() || j["kind"].get<std::string>() != "kairos.latency_histogram")
    throw BadInput(where + ": unknown \"kind\" " + describe(j["kind"]) + " (expected \"kairos.latency_histogram\")");
  auto h = std::make_unique<LatencyHistogram>();
  try {
    h->assign_from_json(line);
  } catch (const std::invalid_argument& e) {
    throw BadInput(where + ": " + e.what());
  }
  if (h->empty()) throw BadInput(where + ": the histogram holds no samples");
  Run r;
  r.where = where;
  auto label = [&](const char* key, const std::string& fallback, const char* flag) {
    if (j.contains(key)) {
      if (!j[key].is_string()) throw BadInput(where + ": \"" + key + "\" must be a string");
      return j[key].get<std::string>();
    }
    if (fallback.empty())
      throw BadInput(where + ": a histogram without \"" + key + "\" needs " + flag);
    return fallback;
  };
  r.workload = label("workload", options.histogram_workload, "--histogram-workload");
  r.system = label("system", options.histogram_system, "--histogram-system");
  if (j.contains("config")) r.config = j["config"];
  if (j.contains("parameters")) r.parameters = j["parameters"];
  r.figures["p50"] = static_cast<double>(h->value_at_percentile(50));
  r.figures["p90"] = static_cast<double>(h->value_at_percentile(90));
  r.figures["p99"] = static_cast<double>(h->value_at_percentile(99));
  r.figures["p99.9"] = static_cast<double>(h->value_at_percentile(99.9));
  r.figures["p99.99"] = static_cast<double>(h->value_at_percentile(99.99));
  r.figures["max"] = static_cast<double>(h->max());
  r.figures["mean"] = h->mean();
  r.figures["count"] = static_cast<double>(h->count());
  r.figures[kEarlyFires] = static_cast<double>(h->below_zero());
  return r;
}

Run run_from_report(const json& j, const std::string& where) {
  Run r;
  r.where = where;
  for (const char* key : {"workload", "system"}) {
    if (!j.contains(key)) throw BadInput(where + ": missing \"" + key + "\"");
    if (!j[key].is_string()) throw BadInput(where + ": \"" + key + "\" must be a string, got " + describe(j[key]));
  }
  r.workload = j["workload"].get<std::string>();
  r.system = j["system"].get<std::string>();
  if (j.contains("config")) r.config = j["config"];
  if (j.contains("parameters")) r.parameters = j["parameters"];
  for (const auto& [key, value] : j.items()) {
    const std::string name = figure_name(key);
    if (value.is_number()) {
      if (!r.figures.emplace(name, value.get<double>()).second)
        throw BadInput(where + ": figure \"" + name + "\" is given twice (\"" + key + "\" is another name for it)");
      if (is_known_figure(name) || higher_is_better(name)) check_figure_value(where, name, r.figures[name]);
    } else if (is_known_figure(name)) {
      throw BadInput(where + ": figure \"" + key + "\" must be a number, got " + describe(value));
    }
  }
  return r;
}

// -- grouping -------------------------------------------------------------------------------

struct Group {
  std::string workload, system;
  json parameters;        // the workload's shape
  json config;            // the system's configuration, less the ignored keys
  std::vector<const Run*> runs;
  std::string name;       // for rows and messages
};

std::string group_key(const std::string& workload, const std::string& system, const json& parameters,
                      const json& config) {
  return workload + '\x1f' + system + '\x1f' + parameters.dump() + '\x1f' + config.dump();
}
std::string group_key(const Group& g) { return group_key(g.workload, g.system, g.parameters, g.config); }

json reduced_config(const Run& r, const std::set<std::string>& ignore) {
  json c = r.config;
  if (c.is_object())
    for (const std::string& k : ignore) c.erase(k);
  return c;
}

bool selected(const Run& r, const GateOptions& o, bool judged_system) {
  if (!o.workloads.empty() && !o.workloads.count(r.workload)) return false;
  if (judged_system && !o.systems.empty() && !o.systems.count(r.system)) return false;
  return true;
}

// " key=value" for each key of `objects` whose value is not the same in all of them.
std::string varying(const json& mine, const std::vector<const json*>& objects) {
  std::set<std::string> keys;
  for (const json* o : objects)
    for (const auto& [k, v] : o->items()) keys.insert(k);
  std::string out;
  for (const std::string& k : keys) {
    const json first = objects.front()->contains(k) ? (*objects.front())[k] : json();
    bool differs = false;
    for (const json* o : objects) differs |= (o->contains(k) ? (*o)[k] : json()) != first;
    if (differs) out += ' ' + k + '=' + (mine.contains(k) ? mine[k].dump() : "-");
  }
  return out;
}

// Groups in first-seen order. A group's name is its workload and system, plus the parameters
// and config keys that tell it apart from the other groups of that workload.
std::vector<Group> group_runs(const std::vector<const Run*>& runs, const std::set<std::string>& ignore) {
  std::vector<Group> groups;
  std::map<std::string, std::size_t> at;
  for (const Run* r : runs) {
    json c = reduced_config(*r, ignore);
    const std::string key = group_key(r->workload, r->system, r->parameters, c);
    auto it = at.find(key);
    if (it == at.end()) {
      it = at.emplace(key, groups.size()).first;
      groups.push_back(Group{r->workload, r->system, r->parameters, std::move(c), {}, {}});
    }
    groups[it->second].runs.push_back(r);
  }
  for (Group& g : groups) {
    std::vector<const json*> params, configs;
    for (const Group& h : groups) {
      if (h.workload != g.workload) continue;
      params.push_back(&h.parameters);
      if (h.system == g.system && h.parameters == g.parameters) configs.push_back(&h.config);
    }
    g.name = g.workload + ' ' + g.system + varying(g.parameters, params) + varying(g.config, configs);
  }
  return groups;
}

void require_runs(const Group& g, const std::string& side, unsigned min_runs) {
  if (g.runs.size() < min_runs)
    throw BadInput(g.name + ": " + std::to_string(g.runs.size()) + " run" + (g.runs.size() == 1 ? "" : "s") +
                   " in " + side + ", fewer than --min-runs " + std::to_string(min_runs) + ": refusing to judge");
}

// The values of a figure over a group's runs: empty when no run has it; BadInput when only
// some runs have it, or a value fails check_figure_value.
std::vector<double> values_of(const Group& g, const std::string& figure, const std::string& side) {
  std::vector<double> values;
  const Run* missing = nullptr;
  for (const Run* r : g.runs) {
    auto it = r->figures.find(figure);
    if (it == r->figures.end()) {
      missing = r;
      continue;
    }
    check_figure_value(r->where, figure, it->second);
    values.push_back(it->second);
  }
  if (missing && !values.empty())
    throw BadInput(missing->where + ": no \"" + figure + "\", which other runs of " + g.name + " in " + side + " have");
  return values;
}

std::string format_percent(double fraction) {
  if (std::isinf(fraction)) return fraction > 0 ? "+inf%" : "-inf%";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", fraction * 100.0);
  return buf;
}
std::string format_ratio(double r) {
  if (std::isinf(r)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, r >= 0.01 ? "%.2fx" : "%.2gx", r);
  return buf;
}
std::string format_tolerance(const Tolerance& t, bool rate) {
  if (t.relative) return std::string(rate ? ">= " : "<= ") + format_percent(rate ? -t.value : t.value);
  return std::string(rate ? ">= -" : "<= +") + format_value(t.value) + (rate ? "" : " ns");
}

// Figures judged in order: the latency figures first, then the others by name.
std::vector<std::string> ordered(const std::set<std::string>& names) {
  std::vector<std::string> out;
  for (const char* f : kLatencyFigures)
    if (names.count(f)) out.emplace_back(f);
  for (const std::string& n : names)
    if (!is_latency_figure(n)) out.push_back(n);
  return out;
}

// An early fire in any run of a judged group is a regression: it is a correctness bug.
void add_early_fire_row(Comparison& c, const Group& g, const Group* other, const GateOptions& o) {
  std::vector<double> cur = values_of(g, kEarlyFires, "current");
  if (cur.empty()) return;
  Row row;
  row.group = g.name;
  row.figure = kEarlyFires;
  row.current = *std::max_element(cur.begin(), cur.end());
  if (other) {
    std::vector<double> base = values_of(*other, kEarlyFires, "baseline");
    if (!base.empty()) row.baseline = *std::max_element(base.begin(), base.end());
  }
  row.change = "-";
  row.note = "max of runs";
  if (o.allow_early_fires) {
    row.verdict = Verdict::info;
    row.note = "max of runs, allowed";
  } else {
    row.limit = "== 0";
    row.verdict = row.current > 0 ? Verdict::regression : Verdict::ok;
  }
  c.rows.push_back(std::move(row));
}

void reject_early_fire_limit(const std::set<std::string>& named) {
  if (named.count(kEarlyFires))
    throw BadInput("early_fires takes no limit: any early fire is a regression (see --allow-early-fires)");
}

void check_named_figures_found(const std::set<std::string>& named, const std::set<std::string>& found,
                               const char* flag) {
  for (const std::string& f : named)
    if (f != "all" && !found.count(f))
      throw BadInput(std::string(flag) + " names \"" + f + "\", which no judged run reports: nothing to judge");
}

}  // namespace

// -- public ---------------------------------------------------------------------------------

bool is_valid_workload(std::string_view w) {
  return w.size() == 2 && w[0] == 'W' && w[1] >= '1' && w[1] <= '7';
}

std::vector<std::string> required_figures(std::string_view workload) {
  if (workload == "W1") return {"p50", "p99"};
  if (workload == "W3" || workload == "W4") {
    std::vector<std::string> f(std::begin(kLatencyFigures), std::end(kLatencyFigures));
    f.emplace_back(kEarlyFires);
    return f;
  }
  return {};
}

std::string figure_name(std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> kAliases = {
      {"p50_ns", "p50"},       {"p90_ns", "p90"},         {"p99_ns", "p99"},
      {"p99_9_ns", "p99.9"},   {"p99_99_ns", "p99.99"},   {"max_ns", "max"}};
  auto it = kAliases.find(name);
  return it == kAliases.end() ? std::string(name) : it->second;
}

bool higher_is_better(std::string_view figure) {
  constexpr std::string_view kSuffix = "_per_s";
  if (figure.size() >= kSuffix.size() && figure.substr(figure.size() - kSuffix.size()) == kSuffix) return true;
  return figure == "runs_per_task" || figure == "runs_per_task_min" || figure == "runs_per_task_max";
}

std::vector<Run> parse_runs(std::string_view text, const std::string& source, const ParseOptions& options) {
  std::vector<Run> runs;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (trim(line).empty()) continue;
    const std::string where = source + ":" + std::to_string(line_no);
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
      throw BadInput(where + ": malformed JSON (" + e.what() + ")");
    }
    if (!j.is_object()) throw BadInput(where + ": a run must be a JSON object, got " + describe(j));
    Run r = j.contains("kind") ? run_from_histogram(j, line, where, options) : run_from_report(j, where);
    if (!is_valid_workload(r.workload))
      throw BadInput(where + ": unknown workload \"" + r.workload + "\" (W1..W7 are valid)");
    if (r.system.empty()) throw BadInput(where + ": \"system\" is empty");
    if (!r.config.is_object()) throw BadInput(where + ": \"config\" must be an object, got " + describe(r.config));
    if (!r.parameters.is_object())
      throw BadInput(where + ": \"parameters\" must be an object, got " + describe(r.parameters));
    for (const std::string& f : required_figures(r.workload))
      if (!r.figures.count(f)) throw BadInput(where + ": a " + r.workload + " report must have \"" + f + "\"");
    runs.push_back(std::move(r));
  }
  if (runs.empty()) throw BadInput(source + ": no runs (empty input)");
  return runs;
}

std::vector<Run> read_runs(const std::string& path, const ParseOptions& options) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return parse_runs(text, "<stdin>", options);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput(path + ": cannot be read");
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) throw BadInput(path + ": read error");
  return parse_runs(text, path, options);
}

Tolerance parse_tolerance(std::string_view text) {
  const std::string t = trim(text);
  double v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc{} || r.ptr == t.data()) throw BadInput("tolerance \"" + t + "\" is not a number with a unit");
  const std::string unit(r.ptr, t.data() + t.size());
  Tolerance tol;
  if (unit == "%") {
    tol.relative = true;
    tol.value = v / 100.0;
  } else if (unit == "ns" || unit.empty()) {
    tol.relative = false;
    tol.value = v;
  } else if (unit == "us") {
    tol = {false, v * 1e3};
  } else if (unit == "ms") {
    tol = {false, v * 1e6};
  } else if (unit == "s") {
    tol = {false, v * 1e9};
  } else {
    throw BadInput("tolerance \"" + t + "\": unknown unit \"" + unit + "\" (use %, ns, us, ms or s)");
  }
  if (!std::isfinite(tol.value) || tol.value < 0) throw BadInput("tolerance \"" + t + "\" must be >= 0");
  return tol;
}

namespace {
std::pair<std::string, std::string> split_assignment(std::string_view text, const char* what) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos)
    throw BadInput(std::string(what) + " \"" + std::string(text) + "\" must look like FIGURE=VALUE, e.g. p99=15%");
  std::string name = trim(text.substr(0, eq));
  if (name.empty()) throw BadInput(std::string(what) + " \"" + std::string(text) + "\" names no figure");
  return {figure_name(name), trim(text.substr(eq + 1))};
}
}  // namespace

std::pair<std::string, Tolerance> parse_tolerance_assignment(std::string_view text) {
  auto [name, value] = split_assignment(text, "--tolerance");
  return {name, parse_tolerance(value)};
}

std::pair<std::string, double> parse_ratio_assignment(std::string_view text) {
  auto [name, value] = split_assignment(text, "ratio");
  double v = 0;
  const auto r = std::from_chars(value.data(), value.data() + value.size(), v);
  if (r.ec != std::errc{} || r.ptr != value.data() + value.size() || !std::isfinite(v) || v <= 0)
    throw BadInput("ratio \"" + std::string(text) + "\" must be FIGURE=NUMBER with a number > 0, e.g. p99=0.5");
  return {name, v};
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

std::string format_value(double v) {
  char buf[48];
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) || std::fabs(v) >= 1000) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

bool Comparison::regression() const { return regressions() > 0; }
std::size_t Comparison::judged() const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.verdict != Verdict::info; }));
}
std::size_t Comparison::regressions() const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.verdict == Verdict::regression; }));
}

Comparison compare_to_baseline(const std::vector<Run>& baseline, const std::vector<Run>& current,
                               const GateOptions& o, const std::string& baseline_name) {
  if (o.tolerances.empty()) throw BadInput("no --tolerance given: nothing to judge against the baseline");
  Comparison c;
  c.title = "against baseline " + baseline_name;
  c.baseline_column = "baseline";

  std::vector<const Run*> base_runs, cur_runs;
  for (const Run& r : baseline)
    if (selected(r, o, true)) base_runs.push_back(&r);
  for (const Run& r : current)
    if (selected(r, o, true)) cur_runs.push_back(&r);
  if (cur_runs.empty()) throw BadInput("current: no run of the selected systems and workloads");
  if (base_runs.empty()) throw BadInput(baseline_name + ": no run of the selected systems and workloads");
  const std::vector<Group> base_groups = group_runs(base_runs, o.ignore_config);
  const std::vector<Group> cur_groups = group_runs(cur_runs, o.ignore_config);

  std::map<std::string, const Group*> base_by_key;
  for (const Group& g : base_groups) base_by_key[group_key(g)] = &g;
  std::set<std::string> cur_keys;
  for (const Group& g : cur_groups) cur_keys.insert(group_key(g));
  for (const Group& g : base_groups)
    if (!cur_keys.count(group_key(g)))
      throw BadInput(g.name + " (parameters " + g.parameters.dump() + ", config " + g.config.dump() + ") is in " +
                     baseline_name + " but has no run in current: refusing to pass a missing measurement "
                     "(select with --system/--workload, or --ignore-config a key that changed)");

  std::set<std::string> named, found;
  for (const auto& [f, t] : o.tolerances) named.insert(f);
  reject_early_fire_limit(named);
  const auto all = o.tolerances.find("all");

  for (const Group& g : cur_groups) {
    auto b = base_by_key.find(group_key(g));
    if (b == base_by_key.end()) {
      c.notes.push_back(g.name + ": no baseline, not judged");
      add_early_fire_row(c, g, nullptr, o);
      continue;
    }
    const Group& base = *b->second;
    std::set<std::string> figures;
    for (const Group* side : {&g, &base})
      for (const Run* r : side->runs)
        for (const auto& [f, v] : r->figures)
          if (is_latency_figure(f) || named.count(f)) figures.insert(f);
    bool judged_any = false;
    std::vector<Row> rows;
    for (const std::string& f : ordered(figures)) {
      if (f == kEarlyFires) continue;
      const std::vector<double> cur = values_of(g, f, "current");
      const std::vector<double> old = values_of(base, f, baseline_name);
      if (cur.empty() && old.empty()) continue;
      if (cur.empty() || old.empty())
        throw BadInput(g.name + ": \"" + f + "\" is in " + (cur.empty() ? baseline_name : std::string("current")) +
                       " but not in " + (cur.empty() ? std::string("current") : baseline_name));
      Row row;
      row.group = g.name;
      row.figure = f;
      row.baseline = median(old);
      row.current = median(cur);
      const bool rate = higher_is_better(f);
      const double change = row.baseline != 0 ? (row.current - row.baseline) / std::fabs(row.baseline)
                            : row.current == 0 ? 0.0
                                               : (rate ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
      row.change = format_percent(change);
      const Tolerance* t = nullptr;
      if (auto it = o.tolerances.find(f); it != o.tolerances.end()) t = &it->second;
      else if (all != o.tolerances.end() && is_latency_figure(f)) t = &all->second;
      if (t) {
        judged_any = true;
        found.insert(f);
        row.limit = format_tolerance(*t, rate);
        bool bad;
        // Relative slack is a share of the baseline's magnitude (a lateness may be negative).
        const double slack = t->relative ? t->value * std::fabs(row.baseline) : t->value;
        bad = rate ? row.current < row.baseline - slack : row.current > row.baseline + slack;
        row.verdict = bad ? Verdict::regression : Verdict::ok;
      } else {
        row.note = "no tolerance";
      }
      rows.push_back(std::move(row));
    }
    if (judged_any) {
      require_runs(g, "current", o.min_runs);
      require_runs(base, baseline_name, o.min_runs);
      c.rows.insert(c.rows.end(), rows.begin(), rows.end());
    } else {
      c.notes.push_back(g.name + ": reports none of the figures with a tolerance, not judged");
    }
    add_early_fire_row(c, g, &base, o);
  }
  check_named_figures_found(named, found, "--tolerance");
  return c;
}

Comparison compare_to_reference(const std::vector<Run>& current, const GateOptions& o) {
  if (o.reference.empty()) throw BadInput("no --reference system given");
  if (o.max_ratios.empty() && o.min_ratios.empty())
    throw BadInput("no --max-ratio or --min-ratio given: nothing to judge against " + o.reference);
  for (const auto& [f, r] : o.max_ratios)
    if (higher_is_better(f)) throw BadInput("--max-ratio " + f + ": a rate is judged with --min-ratio");
  for (const auto& [f, r] : o.min_ratios)
    if (!higher_is_better(f)) throw BadInput("--min-ratio " + f + ": a cost (latency) is judged with --max-ratio");
  Comparison c;
  c.title = "against reference " + o.reference;
  c.baseline_column = o.reference;

  std::vector<const Run*> cand_runs, ref_runs;
  for (const Run& r : current) {
    if (r.system == o.reference) {
      if (selected(r, o, false)) ref_runs.push_back(&r);
    } else if (selected(r, o, true)) {
      cand_runs.push_back(&r);
    }
  }
  if (cand_runs.empty()) throw BadInput("current: no run of a system other than the reference " + o.reference);
  const std::vector<Group> cand_groups = group_runs(cand_runs, o.ignore_config);
  const std::vector<Group> ref_groups = group_runs(ref_runs, o.ignore_config);

  auto matched = [&](const Group& cand, const Group& ref) {
    if (cand.workload != ref.workload || cand.parameters != ref.parameters) return false;
    for (const std::string& k : o.match) {
      const json a = cand.config.contains(k) ? cand.config[k] : json();
      const json b = ref.config.contains(k) ? ref.config[k] : json();
      if (a != b) return false;
    }
    return true;
  };

  std::set<std::string> named, found;
  for (const auto& [f, r] : o.max_ratios) named.insert(f);
  for (const auto& [f, r] : o.min_ratios) named.insert(f);
  reject_early_fire_limit(named);

  for (const Group& g : cand_groups) {
    std::vector<const Group*> refs;
    for (const Group& r : ref_groups)
      if (matched(g, r)) refs.push_back(&r);
    std::set<std::string> figures;
    for (const Run* r : g.runs)
      for (const auto& [f, v] : r->figures)
        if (named.count(f)) figures.insert(f);
    if (figures.empty()) {
      c.notes.push_back(g.name + ": reports none of the figures with a ratio limit, not judged");
      add_early_fire_row(c, g, nullptr, o);
      continue;
    }
    if (refs.empty())
      throw BadInput(g.name + ": no run of the reference " + o.reference + " for " + g.workload +
                     " with the same parameters" + (o.match.empty() ? "" : " and --match keys") +
                     ": refusing to judge");
    if (refs.size() > 1)
      throw BadInput(g.name + ": " + std::to_string(refs.size()) + " groups of " + o.reference + " runs for " +
                     g.workload + " differ in config (" + refs[0]->config.dump() + " vs " + refs[1]->config.dump() +
                     "): name the keys that pair runs with --match, or --ignore-config the others");
    const Group& ref = *refs.front();
    require_runs(g, "current", o.min_runs);
    require_runs(ref, "current (reference " + o.reference + ")", o.min_runs);
    for (const std::string& f : ordered(figures)) {
      const std::vector<double> cur = values_of(g, f, "current");
      const std::vector<double> base = values_of(ref, f, "current");
      if (base.empty())
        throw BadInput(g.name + ": the reference " + o.reference + " reports no \"" + f + "\" for " + g.workload);
      found.insert(f);
      Row row;
      row.group = g.name;
      row.figure = f;
      row.baseline = median(base);
      row.current = median(cur);
      const double ratio = row.baseline != 0 ? row.current / row.baseline
                           : row.current == 0 ? 1.0
                                              : std::numeric_limits<double>::infinity();
      row.change = format_ratio(ratio);
      if (auto it = o.max_ratios.find(f); it != o.max_ratios.end()) {
        row.limit = "<= " + format_ratio(it->second);
        row.verdict = row.current > it->second * row.baseline ? Verdict::regression : Verdict::ok;
      } else {
        const double min_ratio = o.min_ratios.at(f);
        row.limit = ">= " + format_ratio(min_ratio);
        row.verdict = row.current < min_ratio * row.baseline ? Verdict::regression : Verdict::ok;
      }
      c.rows.push_back(std::move(row));
    }
    add_early_fire_row(c, g, nullptr, o);
  }
  check_named_figures_found(named, found, "--max-ratio/--min-ratio");
  return c;
}

namespace {

const char* verdict_text(Verdict v) {
  switch (v) {
    case Verdict::ok: return "ok";
    case Verdict::regression: return "REGRESSION";
    default: return "-";
  }
}

std::vector<std::vector<std::string>> cells_of(const Comparison& c) {
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"group", "figure", c.baseline_column, "current", "change", "limit", "verdict"});
  for (const Row& r : c.rows) {
    std::string verdict = verdict_text(r.verdict);
    if (!r.note.empty()) verdict += " (" + r.note + ")";
    cells.push_back({r.group, r.figure, format_value(r.baseline), format_value(r.current), r.change,
                     r.limit.empty() ? "-" : r.limit, verdict});
  }
  return cells;
}

std::string summary(const std::vector<Comparison>& comparisons) {
  std::size_t judged = 0, bad = 0;
  for (const Comparison& c : comparisons) {
    bad += c.regressions();
    judged += c.judged();
  }
  if (bad) return "kairos-gate: REGRESSION: " + std::to_string(bad) + " of " + std::to_string(judged) + " judged figures";
  return "kairos-gate: no regression (" + std::to_string(judged) + " judged figures)";
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else out += ch;
  }
  return out;
}

}  // namespace

std::string render_table(const std::vector<Comparison>& comparisons) {
  std::ostringstream out;
  for (const Comparison& c : comparisons) {
    out << "kairos-gate " << c.title << '\n';
    const auto cells = cells_of(c);
    std::vector<std::size_t> width(cells.front().size(), 0);
    for (const auto& row : cells)
      for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    for (std::size_t n = 0; n < cells.size(); ++n) {
      const auto& row = cells[n];
      for (std::size_t i = 0; i < row.size(); ++i) {
        const bool numeric = i >= 2 && i <= 4;  // right-align the numbers
        const std::string pad(width[i] - row[i].size(), ' ');
        out << (i ? "  " : "") << (numeric ? pad + row[i] : (i + 1 < row.size() ? row[i] + pad : row[i]));
      }
      out << '\n';
      if (n == 0) {
        for (std::size_t i = 0; i < row.size(); ++i) out << (i ? "  " : "") << std::string(width[i], '-');
        out << '\n';
      }
    }
    for (const std::string& note : c.notes) out << "note: " << note << '\n';
    out << '\n';
  }
  out << summary(comparisons) << '\n';
  return out.str();
}

std::string render_markdown(const std::vector<Comparison>& comparisons) {
  std::ostringstream out;
  out << "### " << summary(comparisons) << "\n\n";
  for (const Comparison& c : comparisons) {
    out << "#### " << md_escape(c.title) << "\n\n";
    const auto cells = cells_of(c);
    for (std::size_t n = 0; n < cells.size(); ++n) {
      out << '|';
      for (std::size_t i = 0; i < cells[n].size(); ++i) {
        std::string cell = md_escape(cells[n][i]);
        if (n > 0 && i == 6 && cell == "REGRESSION") cell = "**REGRESSION**";
        out << ' ' << cell << " |";
      }
      out << '\n';
      if (n == 0) out << "|---|---|---:|---:|---:|---|---|\n";
    }
    if (!c.notes.empty()) {
      out << '\n';
      for (const std::string& note : c.notes) out << "- " << md_escape(note) << '\n';
    }
    out << '\n';
  }
  return out.str();
}

}  // namespace kairos::gate
