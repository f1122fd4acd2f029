// report.cpp: grouping, medians and the table layouts of report.hpp.
#include "report.hpp"

#include <record_model.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kairos::lat {
namespace {

using json = nlohmann::ordered_json;

enum class Unit { ns, rate, bytes, count, real };
enum class Better { lower, higher, none };

struct Column {
  const char* figure;
  const char* header;
  Unit unit;
  Better better;
  bool headline;  // part of the kairos/peer ratio table
};

// W2 and W2b report the same figures (one loop: perf/workloads/w2_timeout_churn.hpp).
const std::vector<Column> kChurnColumns = {{"pairs_per_s", "pairs/s", Unit::rate, Better::higher, true},
                                           {"ns_per_pair", "ns/pair", Unit::real, Better::lower, false},
                                           {"p50_ns", "pair p50", Unit::ns, Better::lower, true},
                                           {"p99_ns", "pair p99", Unit::ns, Better::lower, false},
                                           {"pending_at_end", "pending", Unit::count, Better::none, false}};

const std::vector<Column>& columns(const std::string& w) {
  static const std::map<std::string, std::vector<Column>> k = {
      {"W1",
       {{"submits_per_s", "submits/s", Unit::rate, Better::higher, true},
        {"ns_per_submit", "ns/submit", Unit::real, Better::lower, false},
        {"p50_ns", "call p50", Unit::ns, Better::lower, true},
        {"p99_ns", "call p99", Unit::ns, Better::lower, false},
        {"pending_at_end", "pending", Unit::count, Better::none, false}}},
      {"W2", kChurnColumns},
      {"W2b", kChurnColumns},
      {"W3",
       {{"p50_ns", "p50", Unit::ns, Better::lower, true},
        {"p90_ns", "p90", Unit::ns, Better::lower, false},
        {"p99_ns", "p99", Unit::ns, Better::lower, true},
        {"p99_9_ns", "p99.9", Unit::ns, Better::lower, false},
        {"p99_99_ns", "p99.99", Unit::ns, Better::lower, false},
        {"max_ns", "max", Unit::ns, Better::lower, false},
        {"early_fires", "early", Unit::count, Better::lower, false},
        {"missing", "missing", Unit::count, Better::lower, false}}},
      {"W4",
       {{"p50_ns", "p50", Unit::ns, Better::lower, true},
        {"p90_ns", "p90", Unit::ns, Better::lower, false},
        {"p99_ns", "p99", Unit::ns, Better::lower, true},
        {"p99_9_ns", "p99.9", Unit::ns, Better::lower, false},
        {"p99_99_ns", "p99.99", Unit::ns, Better::lower, false},
        {"max_ns", "max", Unit::ns, Better::lower, false},
        {"early_fires", "early", Unit::count, Better::lower, false},
        {"runs_per_task_min", "runs/task min", Unit::count, Better::higher, false}}},
      {"W5",
       {{"inserts_per_s", "inserts/s", Unit::rate, Better::higher, true},
        {"cancels_per_s", "cancels/s", Unit::rate, Better::higher, true},
        {"bytes_per_timer", "bytes/timer", Unit::real, Better::lower, true},
        {"inserts_applied_per_s", "applied ins/s", Unit::rate, Better::higher, false},
        {"cancels_applied_per_s", "applied can/s", Unit::rate, Better::higher, false},
        {"pending_after_inserts", "pending", Unit::count, Better::none, false},
        {"pending_at_end", "after cancel", Unit::count, Better::none, false}}},
      {"W6",
       {{"tasks_per_s", "tasks/s", Unit::rate, Better::higher, true},
        {"schedule0_tasks_per_s", "schedule(f,0)/s", Unit::rate, Better::higher, true},
        {"submit_tasks_per_s", "submit(f)/s", Unit::rate, Better::higher, false},
        {"submits_per_s", "submits/s", Unit::rate, Better::higher, false},
        {"missing", "missing", Unit::count, Better::lower, false}}},
      {"W7",
       {{"absolute_deadlines", "abs. deadline", Unit::count, Better::none, false},
        {"inversions", "inversions", Unit::count, Better::lower, false},
        {"out_of_order_tasks", "out of order", Unit::count, Better::lower, false},
        {"deadline_to_last_start_ns", "deadline->last start", Unit::ns, Better::lower, true},
        {"submit_ns", "submit time", Unit::ns, Better::lower, false},
        {"early_fires", "early", Unit::count, Better::lower, false}}},
      {"W8",
       {{"mode", "mode", Unit::count, Better::none, false},
        {"rearms_per_s", "re-arms/s", Unit::rate, Better::higher, false},
        {"rearm_p50_ns", "re-arm p50", Unit::ns, Better::lower, true},
        {"rearm_p99_ns", "re-arm p99", Unit::ns, Better::lower, true},
        {"quiet_sessions", "quiet", Unit::count, Better::none, false},
        {"wrong_fires", "wrong fires", Unit::count, Better::lower, false},
        {"missed", "missed", Unit::count, Better::lower, false},
        {"lateness_p50_ns", "late p50", Unit::ns, Better::lower, false},
        {"lateness_p99_ns", "late p99", Unit::ns, Better::lower, false},
        {"rss_growth_bytes", "RSS growth", Unit::count, Better::lower, false}}},
      {"W9",
       {{"p50_ns", "p50", Unit::ns, Better::lower, true},
        {"p90_ns", "p90", Unit::ns, Better::lower, false},
        {"p99_ns", "p99", Unit::ns, Better::lower, true},
        {"max_ns", "max", Unit::ns, Better::lower, false},
        {"early_fires", "early", Unit::count, Better::lower, false},
        {"missing", "missing", Unit::count, Better::lower, false},
        {"earlier_than_pending", "earlier", Unit::count, Better::none, false},
        {"wakes", "wakes", Unit::count, Better::none, false},
        {"iterations_per_wake", "it/wake", Unit::real, Better::lower, false}}},
  };
  static const std::vector<Column> none;
  auto it = k.find(w);
  return it == k.end() ? none : it->second;
}

// Scale and suffix chosen from the median, so min and max share its unit.
struct Scale {
  double div;
  const char* suffix;
  int decimals;
};

Scale scale_for(Unit u, double v) {
  double a = std::fabs(v);
  switch (u) {
    case Unit::ns:
      if (a < 10'000) return {1, " ns", 0};
      if (a < 10'000'000) return {1e3, " us", 1};
      return {1e6, " ms", 2};
    case Unit::rate:
      if (a >= 1e6) return {1e6, " M/s", 2};
      return {1e3, " k/s", 1};
    case Unit::bytes: return {1, " B", 1};
    case Unit::count: return {1, "", 0};
    case Unit::real: return {1, "", 1};
  }
  return {1, "", 0};
}

std::string num(double v, const Scale& s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", s.decimals, v / s.div);
  return buf;
}

std::string cell(const RunGroup& g, const Column& c) {
  // A text figure (W8's mode): the first run's.
  for (const auto& rec : g.runs)
    if (rec.contains(c.figure) && rec[c.figure].is_string()) return rec[c.figure].get<std::string>();
  std::vector<double> v = g.values(c.figure);
  if (v.empty()) return "-";
  std::sort(v.begin(), v.end());
  double med = g.median(c.figure);
  Scale s = scale_for(c.unit, med);
  std::string out = num(med, s) + s.suffix;
  if (v.size() > 1 && v.front() != v.back()) out += " (" + num(v.front(), s) + "-" + num(v.back(), s) + ")";
  return out;
}

void print_grid(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows, bool markdown) {
  if (markdown) {
    auto line = [&](const std::vector<std::string>& r) {
      out << "|";
      for (const auto& c : r) out << " " << c << " |";
      out << "\n";
    };
    line(header);
    out << "|";
    for (std::size_t i = 0; i < header.size(); ++i) out << (i == 0 ? "---|" : "---:|");
    out << "\n";
    for (const auto& r : rows) line(r);
    out << "\n";
    return;
  }
  std::vector<std::size_t> w(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  auto line = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      std::string c = r[i];
      std::string pad(w[i] - c.size(), ' ');
      out << (i == 0 ? c + pad : pad + c) << (i + 1 < r.size() ? "  " : "\n");
    }
  };
  line(header);
  std::size_t total = 0;
  for (auto x : w) total += x + 2;
  out << std::string(total - 2, '-') << "\n";
  for (const auto& r : rows) line(r);
  out << "\n";
}

std::string params_label(const json& rec) {
  const json& p = rec["parameters"];
  std::string w = rec.value("workload", "");
  if (w == "W1" && p.contains("producers")) return "producers=" + p["producers"].dump();
  if (w == "W5" && p.contains("timers")) return "timers=" + p["timers"].dump();
  return "";
}

std::string params_summary(const json& p) {
  std::string s;
  for (auto it = p.begin(); it != p.end(); ++it) {
    if (!s.empty()) s += ", ";
    s += it.key() + "=" + it.value().dump();
  }
  return s;
}

}  // namespace

std::vector<double> RunGroup::values(const std::string& figure) const {
  std::vector<double> v;
  for (const auto& r : runs)
    if (r.contains(figure) && r[figure].is_number()) v.push_back(r[figure].get<double>());
  return v;
}

double RunGroup::median(const std::string& figure) const {
  std::vector<double> v = values(figure);
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  return records::median(std::move(v));
}

// A row is one way of running one system: its configuration, its warm state and, where a
// workload runs a system in more than one way (W8: re-arm or cancel + schedule), that mode.
std::string row_label(const json& rec) {
  std::string label = rec.value("system", "?");
  const json& c = rec.contains("config") ? rec["config"] : json::object();
  if (label.rfind("kairos-", 0) == 0) {
    unsigned shards = c.value("shards", 1u), tps = c.value("threads_per_shard", 1u);
    if (shards > 1) label += " " + std::to_string(shards) + " shards";
    if (tps > 1) label += " " + std::to_string(tps) + " thr/shard";
    if (c.contains("percentile") && c["percentile"].is_number() && c["percentile"].get<double>() != 0.99) {
      char pct[32];
      std::snprintf(pct, sizeof pct, " p%g", c["percentile"].get<double>());
      label += pct;
    }
  }
  if (!c.value("record_lateness", true)) label += " no-lateness";
  if (c.contains("far_timer_slack_ns") && c["far_timer_slack_ns"].is_number()) {
    char far[48];
    std::snprintf(far, sizeof far, " far=%gus", c["far_timer_slack_ns"].get<double>() / 1000.0);
    label += far;
  }
  if (c.value("pinned", false)) label += " pinned";
  if (c.value("warm", false)) label += " warm";
  if (rec.contains("mode") && rec["mode"].is_string()) label += " (" + rec["mode"].get<std::string>() + ")";
  return label;
}

std::vector<RunGroup> group_runs(const std::vector<json>& records) {
  std::vector<RunGroup> groups;
  records::GroupIndex index;  // the record model kairos-gate shares: one key, first-seen order
  for (const auto& rec : records) {
    std::string w = rec.value("workload", "");
    std::string pk = rec.contains("parameters") ? rec["parameters"].dump() : "{}";
    std::string label = row_label(rec);  // the system and the configuration that matters
    std::string ck = rec.contains("config") ? rec["config"].dump() : "{}";
    const auto [at, added] = index.find_or_add(records::group_key(w, label, pk, ck));
    if (added) {
      RunGroup g;
      g.workload = w;
      g.params_key = pk;
      g.params_label = params_label(rec);
      g.system = rec.value("system", "?");
      g.label = label;
      g.is_kairos = g.system.rfind("kairos-", 0) == 0;
      groups.push_back(std::move(g));
    }
    groups[at].runs.push_back(rec);
  }
  // Stable order: by workload id, then parameter set in first-seen order.
  std::stable_sort(groups.begin(), groups.end(),
                   [](const RunGroup& a, const RunGroup& b) { return a.workload < b.workload; });
  return groups;
}

void print_tables(std::ostream& out, const std::vector<RunGroup>& groups, bool markdown) {
  std::vector<std::string> seen;  // workload + params_key, in order
  for (const auto& g : groups) {
    std::string key = g.workload + "\n" + g.params_key;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    std::vector<const RunGroup*> rows;
    for (const auto& h : groups)
      if (h.workload == g.workload && h.params_key == g.params_key) rows.push_back(&h);

    const json& rec = g.runs.front();
    std::string title = g.workload + " " + rec.value("name", "") +
                        (g.params_label.empty() ? "" : " (" + g.params_label + ")");
    std::size_t reps = 0;
    for (auto* r : rows) reps = std::max(reps, r->runs.size());
    std::string note = reps > 1 ? "median of " + std::to_string(reps) + " runs (min-max)" : "one run";
    if (markdown) {
      out << "#### " << title << "\n\n";
      out << "Parameters: `" << params_summary(rec["parameters"]) << "`; " << note << ".\n\n";
    } else {
      out << "== " << title << " -- " << note << "\n   " << params_summary(rec["parameters"]) << "\n";
    }
    std::vector<std::string> header{"system"};
    for (const auto& c : columns(g.workload)) header.push_back(c.header);
    std::vector<std::vector<std::string>> body;
    for (auto* r : rows) {
      std::vector<std::string> line{r->label};
      for (const auto& c : columns(g.workload)) line.push_back(cell(*r, c));
      body.push_back(std::move(line));
    }
    print_grid(out, header, body, markdown);
    for (auto* r : rows)
      for (const auto& run : r->runs)
        if (std::string behind = producer_behind_note(run); !behind.empty())
          out << (markdown ? "Note: " : "note: ") << behind << "\n" << (markdown ? "\n" : "");

    // kairos / peer ratios of the headline figures.
    std::vector<const RunGroup*> kairos, peers;
    for (auto* r : rows) (r->is_kairos ? kairos : peers).push_back(r);
    if (kairos.empty() || peers.empty()) continue;
    for (const auto& c : columns(g.workload)) {
      if (!c.headline) continue;
      std::vector<std::string> rh{std::string("kairos/peer ") + c.header +
                                  (c.better == Better::higher ? " (>1: kairos better)" : " (<1: kairos better)")};
      for (auto* p : peers) rh.push_back(p->label);
      std::vector<std::vector<std::string>> rb;
      for (auto* k : kairos) {
        std::vector<std::string> line{k->label};
        for (auto* p : peers) {
          double a = k->median(c.figure), b = p->median(c.figure);
          char buf[32];
          if (std::isnan(a) || std::isnan(b) || b == 0) std::snprintf(buf, sizeof buf, "-");
          else std::snprintf(buf, sizeof buf, "%.3g", a / b);
          line.push_back(buf);
        }
        rb.push_back(std::move(line));
      }
      print_grid(out, rh, rb, markdown);
    }
  }
}

namespace {

double number_or(const json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

std::string duration_text(double ns) {
  char buf[48];
  if (ns < 1e3) std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (ns < 1e6) std::snprintf(buf, sizeof buf, "%.3g us", ns / 1e3);
  else if (ns < 1e9) std::snprintf(buf, sizeof buf, "%.3g ms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3g s", ns / 1e9);
  return buf;
}

}  // namespace

bool producer_fell_behind(const json& rec) {
  if (!rec.contains("workload") || rec["workload"] != "W3" || !rec.contains("pacing_lag_max_ns")) return false;
  const json& p = rec.contains("parameters") && rec["parameters"].is_object() ? rec["parameters"] : json::object();
  const double interval = std::max(0.0, number_or(p, "interval_ns", 50'000));
  return number_or(rec, "pacing_lag_max_ns", 0) > std::max(1e6, 20 * interval);
}

void flag_producer_behind(json& rec) {
  if (rec.contains("workload") && rec["workload"] == "W3" && rec.contains("pacing_lag_max_ns"))
    rec["producer_fell_behind"] = producer_fell_behind(rec);
}

std::string producer_behind_note(const json& rec) {
  if (!producer_fell_behind(rec)) return "";
  const json& p = rec["parameters"];
  std::string who = row_label(rec);
  if (rec.contains("repeat") && rec["repeat"].is_number_integer()) who += " (repeat " + rec["repeat"].dump() + ")";
  return who + ": the producer fell " + duration_text(number_or(rec, "pacing_lag_max_ns", 0)) + " behind its " +
         duration_text(number_or(p, "interval_ns", 50'000)) +
         " schedule, so fewer timers per second were offered than W3 intends (the machine was busy?)";
}

std::vector<PercentileSeries> lateness_series(const std::vector<RunGroup>& groups,
                                              const std::string& workload) {
  static const char* kFigures[] = {"p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "p99_99_ns", "max_ns"};
  std::vector<PercentileSeries> out;
  for (const auto& g : groups) {
    if (g.workload != workload) continue;
    PercentileSeries s{g.label + (g.params_label.empty() ? "" : " " + g.params_label), {}};
    for (const char* f : kFigures) s.values.push_back(g.median(f));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kairos::lat
