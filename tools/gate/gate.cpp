// gate.cpp: parsing, grouping, statistics and verdicts of kairos-gate (see gate.hpp).
#include "gate.hpp"

#include <kairos/hdr_codec.hpp>
#include <kairos/latency_histogram.hpp>

#include <histogram_json.hpp>
#include <json_input.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <numeric>
#include <sstream>
#include <tuple>
#include <utility>

namespace kairos::gate {
namespace {

using nlohmann::json;

std::string describe(const json& j) {
  std::string s = j.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

void check_value(const std::string& where, const std::string& name, double v) {
  if (!std::isfinite(v)) throw BadInput(where + ": figure \"" + name + "\" is not a finite number");
  // A time may be negative (an early fire's lateness); a count or a rate may not.
  if (v < 0 && unit_of(name) != Unit::ns)
    throw BadInput(where + ": figure \"" + name + "\" is negative (" + format_value(v, unit_of(name)) + ")");
}

void add_histogram_figures(Run& r, const LatencyHistogram& h) {
  if (h.empty()) throw BadInput(r.where + ": the histogram holds no samples");
  r.figures["p50"] = static_cast<double>(h.value_at_percentile(50));
  r.figures["p90"] = static_cast<double>(h.value_at_percentile(90));
  r.figures["p99"] = static_cast<double>(h.value_at_percentile(99));
  r.figures["p99.9"] = static_cast<double>(h.value_at_percentile(99.9));
  r.figures["p99.99"] = static_cast<double>(h.value_at_percentile(99.99));
  r.figures["max"] = static_cast<double>(h.max());
  r.figures["mean"] = h.mean();
  r.figures["stddev"] = h.stddev();
  r.figures["count"] = static_cast<double>(h.count());
  r.figures[kEarlyFires] = static_cast<double>(h.below_zero());
}

std::string string_field(const json& j, const char* key, const std::string& where, const std::string& fallback) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_string()) throw BadInput(where + ": \"" + key + "\" must be a string, got " + describe(j[key]));
  return j[key].get<std::string>();
}

std::string machine_of(const json& m, const std::string& where) {
  if (m.is_string()) return m.get<std::string>();
  if (!m.is_object()) return {};
  std::string s = string_field(m, "cpu", where + ": machine", "unknown cpu");
  if (m.contains("nproc") && m["nproc"].is_number()) s += ", " + m["nproc"].dump() + " CPUs";
  return s;
}

void read_common(Run& r, const json& j) {
  for (const char* key : {"config", "parameters"})
    if (j.contains(key) && !j[key].is_object())
      throw BadInput(r.where + ": \"" + key + "\" must be an object, got " + describe(j[key]));
  if (j.contains("config")) r.config = j["config"];
  if (j.contains("parameters")) r.parameters = j["parameters"];
  if (j.contains("repeat")) {
    if (!j["repeat"].is_number_integer()) throw BadInput(r.where + ": \"repeat\" must be an integer");
    r.repeat = j["repeat"].get<std::int64_t>();
  }
  if (j.contains("machine")) r.machine = machine_of(j["machine"], r.where);
}

Run run_from_histogram(const json& j, const std::string& where, const ParseOptions& o, const std::string& stem) {
  auto h = std::make_unique<LatencyHistogram>();
  try {
    tools::histogram_from_json(j, *h);
  } catch (const std::invalid_argument& e) {
    throw BadInput(where + ": " + e.what());
  }
  Run r;
  r.where = where;
  r.workload = string_field(j, "workload", where, o.workload.empty() ? stem : o.workload);
  r.system = string_field(j, "system", where, o.system);
  read_common(r, j);
  add_histogram_figures(r, *h);
  return r;
}

Run run_from_record(const json& j, const std::string& where) {
  Run r;
  r.where = where;
  for (const char* key : {"workload", "system"})
    if (!j.contains(key)) throw BadInput(where + ": missing \"" + key + "\"");
  r.workload = string_field(j, "workload", where, "");
  r.system = string_field(j, "system", where, "");
  if (r.workload.empty() || r.system.empty()) throw BadInput(where + ": empty \"workload\" or \"system\"");
  read_common(r, j);
  for (const auto& [key, value] : j.items()) {
    if (key == "repeat" || key == "loadavg_1m") continue;  // bookkeeping, not a measurement
    const std::string name = figure_name(key);
    if (value.is_number()) {
      if (!r.figures.emplace(name, value.get<double>()).second)
        throw BadInput(where + ": figure \"" + name + "\" is given twice (\"" + key + "\" is another name for it)");
      check_value(where, name, r.figures[name]);
    } else if (value.is_null() && key.size() > 3 && key.compare(key.size() - 3, 3, "_ns") == 0) {
      throw BadInput(where + ": figure \"" + key + "\" is null");
    }
  }
  return r;
}

std::vector<Run> parse_json_lines(std::string_view text, const std::string& source, const ParseOptions& o,
                                  const std::string& stem) {
  std::vector<Run> runs;
  std::size_t line_no = 0, start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string line = trim(text.substr(start, end - start));
    ++line_no;
    start = end + 1;
    if (line.empty()) continue;
    const std::string where = source + ":" + std::to_string(line_no);
    json j;
    try {
      j = tools::parse_json_bounded(line);
    } catch (const std::invalid_argument& e) {
      throw BadInput(where + ": " + e.what());
    }
    if (!j.is_object()) throw BadInput(where + ": expected a JSON object");
    if (j.contains("kind")) {
      if (!tools::is_histogram_json(j))
        throw BadInput(where + ": unknown \"kind\" " + describe(j["kind"]) + " (expected \"" +
                       tools::kHistogramKind + "\")");
      runs.push_back(run_from_histogram(j, where, o, stem));
    } else {
      runs.push_back(run_from_record(j, where));
    }
  }
  return runs;
}

double time_unit_ns(const std::string& unit, const std::string& where) {
  if (unit == "ns") return 1;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  throw BadInput(where + ": unknown time_unit \"" + unit + "\"");
}

std::vector<Run> parse_benchmark_json(const json& doc, const std::string& source, const ParseOptions& o) {
  const json& list = doc["benchmarks"];
  if (!list.is_array()) throw BadInput(source + ": \"benchmarks\" must be an array");
  std::string machine;
  if (doc.contains("context") && doc["context"].is_object()) {
    const json& c = doc["context"];
    machine = string_field(c, "host_name", source + ": context", "unknown host");
    if (c.contains("num_cpus")) machine += ", " + c["num_cpus"].dump() + " CPUs";
  }
  static const std::set<std::string> kSkip = {"family_index", "per_family_instance_index", "repetitions",
                                              "repetition_index", "threads", "iterations"};
  std::vector<Run> runs;
  std::map<std::string, std::int64_t> seen;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const json& b = list[k];
    const std::string where = source + ": benchmarks[" + std::to_string(k) + "]";
    if (!b.is_object()) throw BadInput(where + ": expected an object");
    if (string_field(b, "run_type", where, "iteration") == "aggregate") continue;
    if (b.contains("error_occurred") && b["error_occurred"].is_boolean() && b["error_occurred"].get<bool>())
      throw BadInput(where + ": the benchmark reported an error: " + string_field(b, "error_message", where, "?"));
    Run r;
    r.where = where;
    r.workload = string_field(b, "run_name", where, string_field(b, "name", where, ""));
    if (r.workload.empty()) throw BadInput(where + ": no \"name\"");
    r.system = o.system;
    r.machine = machine;
    r.repeat = b.contains("repetition_index") && b["repetition_index"].is_number_integer()
                   ? b["repetition_index"].get<std::int64_t>()
                   : seen[r.workload]++;
    const double scale = time_unit_ns(string_field(b, "time_unit", where, "ns"), where);
    for (const auto& [key, value] : b.items()) {
      if (!value.is_number() || kSkip.count(key)) continue;
      std::string name = key;
      double v = value.get<double>();
      if (key == "real_time" || key == "cpu_time") v *= scale;
      if (key.size() > 11 && key.compare(key.size() - 11, 11, "_per_second") == 0)
        name = key.substr(0, key.size() - 11) + "_per_s";
      check_value(where, name, v);
      r.figures[name] = v;
    }
    if (!r.figures.count("real_time")) throw BadInput(where + ": no \"real_time\"");
    runs.push_back(std::move(r));
  }
  return runs;
}

std::vector<Run> parse_hlog(std::string_view text, const std::string& source, const ParseOptions& o,
                            const std::string& stem) {
  std::istringstream in{std::string(text)};
  hdr::Hlog log;
  try {
    log = hdr::read_hlog(in);
  } catch (const std::invalid_argument& e) {
    throw BadInput(source + ": " + e.what());
  }
  std::vector<Run> runs;
  std::map<std::string, std::int64_t> index;
  for (std::size_t k = 0; k < log.intervals.size(); ++k) {
    const hdr::HlogInterval& iv = log.intervals[k];
    Run r;
    r.where = source + ": interval " + std::to_string(k + 1);
    r.workload = !iv.tag.empty() ? iv.tag : (!o.workload.empty() ? o.workload : stem);
    r.system = o.system;
    r.repeat = index[r.workload]++;
    add_histogram_figures(r, iv.histogram);
    runs.push_back(std::move(r));
  }
  return runs;
}

// -- grouping -------------------------------------------------------------------------------

struct Group {
  std::string workload, system;
  json parameters, config;
  std::vector<const Run*> runs;
  std::string name;
};

json reduced_config(const Run& r, const std::set<std::string>& ignore) {
  json c = r.config;
  if (c.is_object())
    for (const std::string& k : ignore) c.erase(k);
  return c;
}

std::string key_of(const std::string& w, const std::string& s, const json& p, const json& c) {
  return w + '\x1f' + s + '\x1f' + p.dump() + '\x1f' + c.dump();
}

std::vector<Group> group_runs(const std::vector<const Run*>& runs, const std::set<std::string>& ignore) {
  std::vector<Group> groups;
  std::map<std::string, std::size_t> at;
  for (const Run* r : runs) {
    json c = reduced_config(*r, ignore);
    const std::string key = key_of(r->workload, r->system, r->parameters, c);
    auto it = at.find(key);
    if (it == at.end()) {
      it = at.emplace(key, groups.size()).first;
      groups.push_back(Group{r->workload, r->system, r->parameters, std::move(c), {}, {}});
    }
    groups[it->second].runs.push_back(r);
  }
  for (Group& g : groups) {
    g.name = g.system.empty() ? g.workload : g.workload + ' ' + g.system;
    for (const Group& h : groups) {
      if (&h == &g || h.workload != g.workload || h.system != g.system) continue;
      if (h.parameters != g.parameters) g.name += ' ' + g.parameters.dump();
      if (h.config != g.config) g.name += ' ' + g.config.dump();
      break;
    }
  }
  return groups;
}

bool selected(const Run& r, const GateOptions& o) {
  return o.workloads.empty() || o.workloads.count(r.workload);
}

// The values of a figure over runs; BadInput when only some runs have it.
std::vector<double> values_of(const std::vector<const Run*>& runs, const std::string& figure, const std::string& name) {
  std::vector<double> v;
  const Run* missing = nullptr;
  for (const Run* r : runs) {
    auto it = r->figures.find(figure);
    if (it == r->figures.end()) missing = r;
    else v.push_back(it->second);
  }
  if (missing && !v.empty())
    throw BadInput(missing->where + ": no \"" + figure + "\", which other runs of " + name + " have");
  return v;
}

std::string limit_text(const Limit& l, Unit unit, bool rate_min) {
  char buf[64];
  switch (l.kind) {
    case Limit::relative: std::snprintf(buf, sizeof buf, "<= +%g%%", l.value * 100); return buf;
    case Limit::absolute: return "<= +" + format_value(l.value, unit);
    case Limit::ratio: std::snprintf(buf, sizeof buf, "%s %gx", rate_min ? ">=" : "<=", l.value); return buf;
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

std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<double> resample(const std::vector<double>& v, std::uint64_t& rng) {
  std::vector<double> out(v.size());
  for (double& x : out) x = v[splitmix(rng) % v.size()];
  return out;
}

std::pair<double, double> percentile_interval(std::vector<double> stats) {
  std::sort(stats.begin(), stats.end());
  const auto at = [&](double q) {
    const std::size_t i = static_cast<std::size_t>(std::floor(q * static_cast<double>(stats.size() - 1) + 0.5));
    return stats[std::min(i, stats.size() - 1)];
  };
  return {at(0.025), at(0.975)};
}

double safe_ratio(double a, double b) {
  if (b == 0) return a == 0 ? 1.0 : std::numeric_limits<double>::infinity();
  return a / b;
}

}  // namespace

// ---- names and units ------------------------------------------------------------------------

std::string figure_name(std::string_view name) {
  std::string n(name);
  if (n.size() > 3 && n.compare(n.size() - 3, 3, "_ns") == 0) {
    const std::string stem = n.substr(0, n.size() - 3);
    if (stem == "max" || stem == "min" || stem == "mean") return stem;
    if (stem.size() >= 2 && stem[0] == 'p' && std::isdigit(static_cast<unsigned char>(stem[1]))) {
      std::string p = stem;
      std::replace(p.begin(), p.end(), '_', '.');
      return p;
    }
  }
  return n;
}

Unit unit_of(std::string_view f) {
  auto ends = [&](std::string_view s) { return f.size() >= s.size() && f.substr(f.size() - s.size()) == s; };
  if (ends("_per_s")) return Unit::per_s;
  if (f == "max" || f == "min" || f == "mean" || f == "stddev" || f == "real_time" || f == "cpu_time" || ends("_ns"))
    return Unit::ns;
  if (f.size() >= 2 && f[0] == 'p' && std::isdigit(static_cast<unsigned char>(f[1]))) return Unit::ns;
  return Unit::count;
}

bool higher_is_better(std::string_view figure) { return unit_of(figure) == Unit::per_s; }

// ---- input -----------------------------------------------------------------------------------

namespace {

std::vector<Run> parse_runs_unchecked(std::string_view text, const std::string& source, const ParseOptions& options) {
  std::string stem = source;
  if (auto slash = stem.find_last_of('/'); slash != std::string::npos) stem = stem.substr(slash + 1);
  if (auto dot = stem.find('.'); dot != std::string::npos && dot > 0) stem = stem.substr(0, dot);
  const std::string body = trim(text);
  std::vector<Run> runs;
  if (body.empty()) throw BadInput(source + ": no runs (empty input)");
  if (body[0] == '{') {
    json whole;
    bool one_value = true;
    try {
      whole = tools::parse_json_bounded(body, tools::kMaxJsonDepth, tools::kMaxInputBytes);
    } catch (const std::invalid_argument&) {
      one_value = false;  // JSON Lines, or bad input that parse_json_lines names by its line
    }
    if (one_value && whole.is_object() && whole.contains("benchmarks"))
      runs = parse_benchmark_json(whole, source, options);
    else
      runs = parse_json_lines(text, source, options, stem);
  } else if (body[0] == '#' || body.rfind("Tag=", 0) == 0 || body.rfind("\"StartTimestamp\"", 0) == 0 ||
             std::isdigit(static_cast<unsigned char>(body[0]))) {
    runs = parse_hlog(text, source, options, stem);
  } else {
    throw BadInput(source + ": not kairos-lat JSON Lines, histogram JSON, an HdrHistogram log or Google Benchmark JSON");
  }
  if (runs.empty()) throw BadInput(source + ": no runs");
  return runs;
}

}  // namespace

std::vector<Run> parse_runs(std::string_view text, const std::string& source, const ParseOptions& options) {
  if (text.size() > tools::kMaxInputBytes)
    throw BadInput(source + ": input of " + std::to_string(text.size()) + " bytes refused (the limit is " +
                   std::to_string(tools::kMaxInputBytes) + ")");
  // Every field is checked where it is read; a JSON type error or a histogram's own error that
  // still got past those checks is bad input too, never another kind of failure.
  try {
    return parse_runs_unchecked(text, source, options);
  } catch (const nlohmann::json::exception& e) {
    throw BadInput(source + ": a field of an unexpected type (" + e.what() + ")");
  } catch (const std::invalid_argument& e) {
    throw BadInput(source + ": " + e.what());
  }
}

std::vector<Run> read_runs(const std::string& path, const ParseOptions& options) {
  std::string text;
  try {
    if (path == "-") {
      text = tools::read_bounded(std::cin);
    } else {
      std::ifstream in(path, std::ios::binary);
      if (!in) throw BadInput(path + ": cannot be read");
      text = tools::read_bounded(in);
    }
  } catch (const std::invalid_argument& e) {
    throw BadInput((path == "-" ? std::string("stdin") : path) + ": " + e.what());
  }
  return parse_runs(text, path == "-" ? "stdin" : path, options);
}

Limit parse_limit(std::string_view text) {
  const std::string t = trim(text);
  std::size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.' || t[i] == '+' || t[i] == '-' ||
                          ((t[i] == 'e' || t[i] == 'E') && i > 0)))
    ++i;
  const std::string number = t.substr(0, i), unit = trim(t.substr(i));
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(v))
    throw BadInput("limit \"" + t + "\": expected a number with a unit: 15%, 10us, 0.5x");
  if (v < 0) throw BadInput("limit \"" + t + "\" is negative");
  if (unit.empty())
    throw BadInput("limit \"" + t + "\" has no unit: write " + t + "% (relative), " + t + "us (a time) or " + t +
                   "x (a ratio)");
  if (unit == "%") return {Limit::relative, v / 100};
  if (unit == "x") return {Limit::ratio, v};
  static const std::map<std::string, double> kTime = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  auto it = kTime.find(unit);
  if (it == kTime.end()) throw BadInput("limit \"" + t + "\": unknown unit \"" + unit + "\" (%, ns, us, ms, s, x)");
  return {Limit::absolute, v * it->second};
}

std::pair<std::string, Limit> parse_limit_assignment(std::string_view text) {
  const std::string t(text);
  const auto eq = t.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == t.size())
    throw BadInput("\"" + t + "\": expected FIGURE=LIMIT, e.g. p99=15%");
  return {figure_name(trim(t.substr(0, eq))), parse_limit(t.substr(eq + 1))};
}

// ---- statistics ------------------------------------------------------------------------------

double median(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("median of no values");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Spread spread_of(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  s.n = values.size();
  s.median = median(values);
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

double mann_whitney_p_greater(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = x.size(), m = y.size();
  if (n == 0 || m == 0) return 1.0;
  // U = pairs (xi, yj) with xi > yj, ties counting a half.
  double u = 0;
  for (double a : x)
    for (double b : y) u += a > b ? 1.0 : (a == b ? 0.5 : 0.0);
  // Ranks of the pooled sample, for the tie correction.
  std::vector<double> all(x);
  all.insert(all.end(), y.begin(), y.end());
  std::sort(all.begin(), all.end());
  double tie_term = 0;
  bool ties = false;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    const double t = static_cast<double>(j - i);
    if (t > 1) ties = true;
    tie_term += t * t * t - t;
    i = j;
  }
  if (!ties && n <= 10 && m <= 10) {
    // Exact: count the arrangements with U' >= u; ways[i][j][k]: i of x, j of y, U = k.
    const std::size_t max_u = n * m;
    std::vector<std::vector<std::vector<double>>> w(n + 1, std::vector<std::vector<double>>(m + 1, std::vector<double>(max_u + 1, 0)));
    for (std::size_t i = 0; i <= n; ++i)
      for (std::size_t j = 0; j <= m; ++j) {
        if (i == 0 || j == 0) {
          w[i][j][0] = 1;
          continue;
        }
        for (std::size_t k = 0; k <= i * j; ++k) {
          // the largest element is an x (it beats all j y's) or a y
          w[i][j][k] = (k >= j ? w[i - 1][j][k - j] : 0) + w[i][j - 1][k];
        }
      }
    double total = 0, tail = 0;
    for (std::size_t k = 0; k <= max_u; ++k) {
      total += w[n][m][k];
      if (static_cast<double>(k) >= u - 1e-9) tail += w[n][m][k];
    }
    return tail / total;
  }
  const double nn = static_cast<double>(n), mm = static_cast<double>(m), big = nn + mm;
  const double mean = nn * mm / 2;
  const double var = nn * mm / 12 * ((big + 1) - tie_term / (big * (big - 1)));
  if (var <= 0) return u > mean ? 0.0 : 1.0;
  const double z = (u - mean - 0.5) / std::sqrt(var);
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

std::pair<double, double> bootstrap_median_ci(const std::vector<double>& values, unsigned resamples, std::uint64_t seed) {
  if (values.empty()) throw std::invalid_argument("bootstrap of no values");
  std::vector<double> stats;
  stats.reserve(resamples);
  for (unsigned k = 0; k < std::max(resamples, 1u); ++k) stats.push_back(median(resample(values, seed)));
  return percentile_interval(std::move(stats));
}

std::pair<double, double> bootstrap_ratio_ci(const std::vector<double>& a, const std::vector<double>& b,
                                             unsigned resamples, std::uint64_t seed) {
  if (a.empty() || b.empty()) throw std::invalid_argument("bootstrap of no values");
  std::vector<double> stats;
  stats.reserve(resamples);
  for (unsigned k = 0; k < std::max(resamples, 1u); ++k)
    stats.push_back(safe_ratio(median(resample(a, seed)), median(resample(b, seed))));
  return percentile_interval(std::move(stats));
}

// ---- verdicts --------------------------------------------------------------------------------

const char* verdict_text(Verdict v) {
  switch (v) {
    case Verdict::pass: return "pass";
    case Verdict::regression: return "REGRESSION";
    case Verdict::inconclusive: return "inconclusive";
    case Verdict::info: return "-";
  }
  return "?";
}

std::size_t Comparison::count(Verdict v) const {
  return static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [v](const Row& r) { return r.verdict == v; }));
}

Verdict overall(const std::vector<Comparison>& cs) {
  std::size_t reg = 0, inc = 0;
  for (const Comparison& c : cs) reg += c.count(Verdict::regression), inc += c.count(Verdict::inconclusive);
  return reg ? Verdict::regression : inc ? Verdict::inconclusive : Verdict::pass;
}

Comparison compare_to_baseline(const std::vector<Run>& baseline, const std::vector<Run>& current,
                               const GateOptions& o, const std::string& baseline_name) {
  if (o.tolerances.empty()) throw BadInput("no --tolerance: nothing to judge against the baseline");
  for (const auto& [figure, limit] : o.tolerances) {
    if (limit.kind == Limit::ratio) throw BadInput("--tolerance " + figure + ": a ratio (x) belongs to --max-ratio");
    if (limit.kind == Limit::absolute && figure != "all" && unit_of(figure) != Unit::ns)
      throw BadInput("--tolerance " + figure + ": a time limit for a figure that is not a time; use %");
    if (figure == kEarlyFires) throw BadInput("--tolerance early_fires: early fires are never tolerated (--allow-early-fires)");
  }
  Comparison c;
  c.title = "against baseline " + baseline_name;
  c.base_column = "baseline";
  // Machines.
  std::set<std::string> base_machines, cur_machines;
  for (const Run& r : baseline) if (!r.machine.empty()) base_machines.insert(r.machine);
  for (const Run& r : current) if (!r.machine.empty()) cur_machines.insert(r.machine);
  if (!base_machines.empty() && !cur_machines.empty() && base_machines != cur_machines) {
    const std::string msg = "baseline measured on " + *base_machines.begin() + ", current on " + *cur_machines.begin();
    if (!o.allow_machine_mismatch)
      throw BadInput("machine mismatch: " + msg + " (--allow-machine-mismatch to compare anyway)");
    c.notes.push_back("machine mismatch (allowed): " + msg);
  }
  std::vector<const Run*> bsel, csel;
  for (const Run& r : baseline) if (selected(r, o) && (o.systems.empty() || o.systems.count(r.system))) bsel.push_back(&r);
  for (const Run& r : current) if (selected(r, o) && (o.systems.empty() || o.systems.count(r.system))) csel.push_back(&r);
  const std::vector<Group> bg = group_runs(bsel, o.ignore_config), cg = group_runs(csel, o.ignore_config);
  std::set<std::string> found;
  for (const Group& b : bg) {
    const Group* cur = nullptr;
    for (const Group& g : cg)
      if (key_of(g.workload, g.system, g.parameters, g.config) == key_of(b.workload, b.system, b.parameters, b.config)) cur = &g;
    if (!cur) throw BadInput(b.name + " is in the baseline but not in the current runs");
    std::vector<std::string> figures;
    for (const auto& [f, l] : o.tolerances) {
      if (f != "all") figures.push_back(f);
    }
    if (o.tolerances.count("all"))
      for (const auto& [f, v] : b.runs.front()->figures)
        if (unit_of(f) == Unit::ns && !o.tolerances.count(f) && cur->runs.front()->figures.count(f)) figures.push_back(f);
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
        row.statistic = (rate ? safe_ratio(row.base.median, row.current.median) : safe_ratio(row.current.median, row.base.median)) - 1;
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
        std::snprintf(buf, sizeof buf, "decided by the U test: p = %.3g < %.3g with the change beyond the limit%s",
                      row.p_value, o.alpha,
                      !std::isnan(row.ci_low) && row.ci_low <= 0 ? "; the interval spans 0: its size is uncertain" : "");
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
  for (const auto* limits : {&o.max_ratios, &o.min_ratios})
    for (const auto& [f, l] : *limits) {
      if (l.kind != Limit::ratio) throw BadInput("ratio limit for " + f + " must be a ratio with an x, e.g. 0.5x");
      if (f == kEarlyFires) throw BadInput("early fires have no ratio limit");
      if (limits == &o.max_ratios && higher_is_better(f))
        throw BadInput("--max-ratio " + f + ": a rate (higher is better) takes --min-ratio");
      if (limits == &o.min_ratios && !higher_is_better(f))
        throw BadInput("--min-ratio " + f + ": only a rate (a figure named *_per_s) takes --min-ratio");
    }
  Comparison c;
  c.title = "against reference " + o.reference + " (paired by repeat)";
  c.base_column = o.reference;
  c.paired = true;
  std::vector<const Run*> sel;
  for (const Run& r : current) if (selected(r, o)) sel.push_back(&r);
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
    std::vector<std::pair<const Run*, const Run*>> pairs;
    const bool by_repeat = std::all_of(g.runs.begin(), g.runs.end(), [](const Run* r) { return r->repeat.has_value(); }) &&
                           std::all_of(ref->runs.begin(), ref->runs.end(), [](const Run* r) { return r->repeat.has_value(); });
    if (by_repeat) {
      std::map<std::int64_t, const Run*> by;
      for (const Run* r : ref->runs)
        if (!by.emplace(*r->repeat, r).second) throw BadInput(r->where + ": repeat " + std::to_string(*r->repeat) + " of " + ref->name + " given twice");
      std::set<std::int64_t> mine;
      for (const Run* r : g.runs) {
        if (!mine.insert(*r->repeat).second) throw BadInput(r->where + ": repeat " + std::to_string(*r->repeat) + " of " + g.name + " given twice");
        auto it = by.find(*r->repeat);
        if (it != by.end()) pairs.emplace_back(r, it->second);
      }
    } else {
      for (std::size_t k = 0; k < std::min(g.runs.size(), ref->runs.size()); ++k) pairs.emplace_back(g.runs[k], ref->runs[k]);
    }
    for (const auto* limits : {&o.max_ratios, &o.min_ratios})
      for (const auto& [f, limit] : *limits) {
        const bool rate = limits == &o.min_ratios;
        std::vector<double> mine, theirs, ratios;
        for (const auto& [a, b] : pairs) {
          auto ia = a->figures.find(f), ib = b->figures.find(f);
          if (ia == a->figures.end() || ib == b->figures.end()) continue;
          mine.push_back(ia->second);
          theirs.push_back(ib->second);
          ratios.push_back(safe_ratio(ia->second, ib->second));
        }
        if (ratios.empty()) continue;
        found.insert(f);
        Row row;
        row.group = g.name;
        row.figure = f;
        row.unit = unit_of(f);
        row.base = spread_of(theirs);
        row.current = spread_of(mine);
        row.statistic = median(ratios);
        const auto [lo, hi] = bootstrap_median_ci(ratios, o.resamples);
        row.ci_low = lo;
        row.ci_high = hi;
        row.limit = limit_text(limit, row.unit, rate);
        const bool within = rate ? row.statistic >= limit.value : row.statistic <= limit.value;
        const bool surely_beyond = rate ? hi < limit.value : lo > limit.value;
        if (ratios.size() < o.min_runs) {
          row.verdict = Verdict::inconclusive;
          row.note = std::to_string(ratios.size()) + " pairs, fewer than --min-runs " + std::to_string(o.min_runs);
        } else if (within) {
          row.verdict = Verdict::pass;
        } else if (surely_beyond) {
          row.verdict = Verdict::regression;
        } else {
          row.verdict = Verdict::inconclusive;
          row.note = "median beyond the limit, 95% interval across it";
        }
        c.rows.push_back(std::move(row));
      }
    add_early_fire_rows(c, g, o);
  }
  if (!reference_seen) throw BadInput("the reference system \"" + o.reference + "\" has no runs in the current input");
  for (const auto* limits : {&o.max_ratios, &o.min_ratios})
    for (const auto& [f, l] : *limits)
      if (!found.count(f)) throw BadInput("no judged pair has the figure \"" + f + "\"");
  return c;
}

// ---- A/B ----------------------------------------------------------------------------------------

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
  struct AbLimit {
    std::string figure;
    double ratio;
    bool rate;
    std::string text;
  };
  std::vector<AbLimit> limits;
  for (const auto* ratios : {&o.max_ratios, &o.min_ratios})
    for (const auto& [f, l] : *ratios) {
      const bool rate = ratios == &o.min_ratios;
      if (l.kind != Limit::ratio) throw BadInput("ratio limit for " + f + " must be a ratio with an x, e.g. 1.1x");
      if (f == kEarlyFires) throw BadInput("early fires have no ratio limit");
      if (!rate && higher_is_better(f)) throw BadInput("--max-ratio " + f + ": a rate (higher is better) takes --min-ratio");
      if (rate && !higher_is_better(f))
        throw BadInput("--min-ratio " + f + ": only a rate (a figure named *_per_s) takes --min-ratio");
      limits.push_back({f, l.value, rate, ratio_limit_text(l.value, rate)});
    }
  for (const auto& [f, l] : o.tolerances) {
    if (f == "all") throw BadInput("--tolerance all: name each figure to judge (A/B mode judges the figures named)");
    if (f == kEarlyFires) throw BadInput("--tolerance early_fires: early fires are never tolerated (--allow-early-fires)");
    if (l.kind == Limit::ratio) throw BadInput("--tolerance " + f + ": a ratio (x) belongs to --max-ratio");
    if (l.kind == Limit::absolute)
      throw BadInput("--tolerance " + f + ": A/B mode judges paired ratios; give the limit in % (10%) or as --max-ratio");
    const bool rate = higher_is_better(f);
    const double ratio = rate ? 1 / (1 + l.value) : 1 + l.value;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%g%% (%s)", rate ? ">= -" : "<= +", l.value * 100, ratio_limit_text(ratio, rate).c_str());
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
      throw BadInput(r.where + ": no config \"" + kBuildKey + "\": not an A/B record (kairos-gate --record writes one)");
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
    std::map<std::int64_t, const Run*> by;
    for (const Run* r : ref->runs)
      if (!by.emplace(*r->repeat, r).second)
        throw BadInput(r->where + ": repeat " + std::to_string(*r->repeat) + " of " + ref->name + " (baseline) given twice");
    std::set<std::int64_t> mine;
    std::vector<std::pair<const Run*, const Run*>> pairs;
    for (const Run* r : g.runs) {
      if (!mine.insert(*r->repeat).second)
        throw BadInput(r->where + ": repeat " + std::to_string(*r->repeat) + " of " + g.name + " (candidate) given twice");
      auto it = by.find(*r->repeat);
      if (it != by.end()) pairs.emplace_back(r, it->second);
    }
    if (pairs.size() < std::max(g.runs.size(), ref->runs.size()))
      c.notes.push_back(g.name + ": " + std::to_string(std::max(g.runs.size(), ref->runs.size()) - pairs.size()) +
                        " run(s) without a partner of the same repeat, not judged");
    for (const AbLimit& limit : limits) {
      std::vector<double> mine_v, theirs, ratios;
      for (const auto& [a, b] : pairs) {
        auto ia = a->figures.find(limit.figure), ib = b->figures.find(limit.figure);
        if (ia == a->figures.end() || ib == b->figures.end()) continue;
        mine_v.push_back(ia->second);
        theirs.push_back(ib->second);
        ratios.push_back(safe_ratio(ia->second, ib->second));
      }
      if (ratios.empty()) continue;
      found.insert(limit.figure);
      Row row;
      row.group = g.name;
      row.figure = limit.figure;
      row.unit = unit_of(limit.figure);
      row.base = spread_of(theirs);
      row.current = spread_of(mine_v);
      row.statistic = median(ratios);
      std::tie(row.ci_low, row.ci_high) = bootstrap_median_ci(ratios, o.resamples);
      row.limit = limit.text;
      const bool surely_within = limit.rate ? row.ci_low >= limit.ratio : row.ci_high <= limit.ratio;
      const bool surely_beyond = limit.rate ? row.ci_high < limit.ratio : row.ci_low > limit.ratio;
      if (ratios.size() < o.min_runs) {
        row.verdict = Verdict::inconclusive;
        row.note = std::to_string(ratios.size()) + " pairs, fewer than --min-runs " + std::to_string(o.min_runs);
      } else if (surely_within) {
        row.verdict = Verdict::pass;
      } else if (surely_beyond) {
        row.verdict = Verdict::regression;
      } else {
        row.verdict = Verdict::inconclusive;
        row.note = "95% interval across the limit: too noisy to tell";
      }
      c.rows.push_back(std::move(row));
    }
    add_early_fire_rows(c, g, o);
  }
  for (const Group& h : bg)
    if (!matched.count(key_of(h.workload, h.system, h.parameters, h.config)))
      c.notes.push_back(h.name + ": baseline runs without candidate runs; not judged");
  for (const AbLimit& l : limits)
    if (!found.count(l.figure)) throw BadInput("no judged pair has the figure \"" + l.figure + "\"");
  return c;
}

// ---- output ------------------------------------------------------------------------------------

std::string format_value(double v, Unit unit) {
  char buf[64];
  const double a = std::fabs(v);
  switch (unit) {
    case Unit::ns:
      if (a < 1e3) std::snprintf(buf, sizeof buf, "%.0f ns", v);
      else if (a < 1e6) std::snprintf(buf, sizeof buf, "%.3g us", v / 1e3);
      else if (a < 1e9) std::snprintf(buf, sizeof buf, "%.3g ms", v / 1e6);
      else std::snprintf(buf, sizeof buf, "%.3g s", v / 1e9);
      return buf;
    case Unit::per_s:
      if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.3g M/s", v / 1e6);
      else if (a >= 1e3) std::snprintf(buf, sizeof buf, "%.3g k/s", v / 1e3);
      else std::snprintf(buf, sizeof buf, "%.3g /s", v);
      return buf;
    case Unit::count: std::snprintf(buf, sizeof buf, "%.6g", v); return buf;
  }
  return "?";
}

std::string format_percent(double f) {
  char buf[48];
  if (std::isinf(f)) return f > 0 ? "+inf" : "-inf";
  if (f > 9.0) std::snprintf(buf, sizeof buf, "%.3gx", 1 + f);  // beyond +900%: the ratio reads better
  else std::snprintf(buf, sizeof buf, "%+.1f%%", f * 100);
  return buf;
}

namespace {

constexpr std::size_t kTextWidth = 100;

std::string spread_text(const Spread& s, Unit u) {
  if (s.n == 0) return "-";
  return format_value(s.median, u) + " (" + format_value(s.min, u) + " .. " + format_value(s.max, u) + ", n=" +
         std::to_string(s.n) + ")";
}

std::string ratio_text(double r) {
  char buf[32];
  if (std::isinf(r)) return "inf";
  std::snprintf(buf, sizeof buf, "%.3gx", r);
  return buf;
}

std::vector<std::vector<std::string>> cells(const Comparison& c) {
  std::vector<std::vector<std::string>> out;
  out.push_back({"group", "figure", c.base_column + " median (min .. max, n)", c.current_column + " median (min .. max, n)",
                 c.paired ? "paired ratio [95% CI]" : "change [95% CI]", c.paired ? "" : "p (U test)", "limit", "verdict",
                 "note"});
  if (!c.paired) out.front()[5] = "p (U test)";
  for (const Row& r : c.rows) {
    std::string stat;
    if (r.figure == kEarlyFires) stat = "-";
    else if (c.paired) stat = ratio_text(r.statistic) + " [" + ratio_text(r.ci_low) + " .. " + ratio_text(r.ci_high) + "]";
    else if (std::isnan(r.ci_low)) stat = (r.statistic >= 0 ? "+" : "") + format_value(r.statistic, r.unit);
    else stat = format_percent(r.statistic) + " [" + format_percent(r.ci_low) + " .. " + format_percent(r.ci_high) + "]";
    char p[32] = "-";
    if (!std::isnan(r.p_value)) std::snprintf(p, sizeof p, "%.3g", r.p_value);
    out.push_back({r.group, r.figure, spread_text(r.base, r.unit), spread_text(r.current, r.unit), stat,
                   c.paired ? "" : p, r.limit, verdict_text(r.verdict), r.note});
  }
  return out;
}

std::string summary_line(const std::vector<Comparison>& cs) {
  std::size_t pass = 0, reg = 0, inc = 0;
  for (const Comparison& c : cs) pass += c.count(Verdict::pass), reg += c.count(Verdict::regression), inc += c.count(Verdict::inconclusive);
  const Verdict v = overall(cs);
  return std::string("verdict: ") + (v == Verdict::regression ? "REGRESSION" : v == Verdict::inconclusive ? "INCONCLUSIVE" : "PASS") +
         " (" + std::to_string(pass) + " pass, " + std::to_string(reg) + " regression, " + std::to_string(inc) + " inconclusive)";
}

}  // namespace

// Text: each group a heading, each of its figures two or three lines (verdict and statistic;
// both sides' spreads; the note), so a line stays within kTextWidth columns (a heading or note
// longer than that is wrapped at spaces) whatever the figures and groups are called.
std::string render_table(const std::vector<Comparison>& cs) {
  std::ostringstream out;
  auto wrapped = [&](const std::string& text, const std::string& indent) {
    if (indent.size() + text.size() <= kTextWidth) {
      out << indent << text << "\n";
      return;
    }
    std::string line = indent;
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find(' ', start);
      if (end == std::string::npos) end = text.size();
      const std::string word = text.substr(start, end - start);
      if (line.size() > indent.size() && line.size() + 1 + word.size() > kTextWidth) {
        out << line << "\n";
        line = indent + "  ";
      } else if (line.size() > indent.size()) {
        line += ' ';
      }
      line += word;
      start = end + 1;
    }
    out << line << "\n";
  };
  for (const Comparison& c : cs) {
    out << "kairos-gate " << c.title << "\n";
    const auto rows = cells(c);
    std::size_t figure_w = 6, verdict_w = 4;
    for (const Row& r : c.rows)
      figure_w = std::max(figure_w, r.figure.size()), verdict_w = std::max<std::size_t>(verdict_w, std::strlen(verdict_text(r.verdict)));
    const std::string stat_header = c.paired ? "paired ratio [95% CI]" : "change [95% CI]";
    std::string last_group;
    for (std::size_t k = 0; k < c.rows.size(); ++k) {
      const Row& r = c.rows[k];
      const std::vector<std::string>& cell = rows[k + 1];  // group, figure, base, current, stat, p, limit, verdict, note
      if (r.group != last_group) wrapped(r.group, ""), last_group = r.group;
      std::string line = "  " + r.figure + std::string(figure_w - r.figure.size(), ' ') + "  " + cell[7] +
                         std::string(verdict_w - cell[7].size(), ' ') + "  " + stat_header + " " + cell[4];
      if (!r.limit.empty()) line += ", limit " + r.limit;
      if (!c.paired && cell[5] != "-") line += ", p " + cell[5];
      wrapped(line, "");
      const std::string pad(2 + figure_w + 2, ' ');
      const std::size_t side_w = std::max(c.base_column.size(), c.current_column.size());
      wrapped(c.base_column + std::string(side_w - c.base_column.size(), ' ') + "  " + cell[2], pad);
      wrapped(c.current_column + std::string(side_w - c.current_column.size(), ' ') + "  " + cell[3], pad);
      if (!r.note.empty()) wrapped(r.note, pad);
    }
    for (const std::string& n : c.notes) wrapped("note: " + n, "");
    out << "\n";
  }
  out << summary_line(cs) << "\n";
  return out.str();
}

std::string render_markdown(const std::vector<Comparison>& cs) {
  std::ostringstream out;
  out << "### kairos-gate: " << summary_line(cs) << "\n\n";
  for (const Comparison& c : cs) {
    out << "**" << c.title << "**\n\n";
    const auto rows = cells(c);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      out << "|";
      for (const std::string& cell : rows[k]) out << " " << cell << " |";
      out << "\n";
      if (k == 0) {
        out << "|";
        for (std::size_t i = 0; i < rows[k].size(); ++i) out << (i < 2 ? "---|" : "---:|");
        out << "\n";
      }
    }
    for (const std::string& n : c.notes) out << "\n- " << n;
    out << "\n\n";
  }
  return out.str();
}

}  // namespace kairos::gate
