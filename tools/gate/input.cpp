// input.cpp: kairos-gate's input (gate.hpp, Inputs and Units): each format read into runs, the
// names and units of figures, and the limits of the command line.
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
#include <sstream>
#include <utility>

#include "gate.hpp"

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
        throw BadInput(where + ": unknown \"kind\" " + describe(j["kind"]) + " (expected \"" + tools::kHistogramKind +
                       "\")");
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
  static const std::set<std::string> kSkip = {
      "family_index", "per_family_instance_index", "repetitions", "repetition_index", "threads", "iterations"};
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

// Google Benchmark's other output formats, told apart from an .hlog (whose lines may also start
// with a digit: console output opens with the date) so that the error says what to do. Console:
// the column header "Benchmark  Time  CPU  Iterations" (after the context lines "Running ...",
// "Run on (...)"), possibly coloured with ANSI escapes; CSV: the header "name,iterations,...".
const char* benchmark_format_of(std::string_view body) {
  std::size_t start = 0;
  for (int line_no = 0; line_no < 200 && start < body.size(); ++line_no) {
    std::size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    std::string line;
    for (std::size_t k = start; k < end; ++k) {  // without ANSI colour sequences (ESC [ ... m)
      if (body[k] == '\x1b') {
        while (k < end && body[k] != 'm') ++k;
        continue;
      }
      line += body[k];
    }
    start = end + 1;
    const std::string l = trim(line);
    if (line_no == 0 && l.rfind("name,iterations,", 0) == 0) return "CSV";
    if (l.rfind("Running ", 0) == 0 || l.rfind("Run on (", 0) == 0) return "console";
    if (l.rfind("Benchmark ", 0) == 0 && l.find(" Time ") != std::string::npos &&
        l.find(" CPU ") != std::string::npos && l.find("Iterations") != std::string::npos)
      return "console";
  }
  return nullptr;
}

std::vector<Run> parse_runs_unchecked(std::string_view text, const std::string& source, const ParseOptions& options) {
  std::string stem = source;
  if (auto slash = stem.find_last_of('/'); slash != std::string::npos) stem = stem.substr(slash + 1);
  if (auto dot = stem.find('.'); dot != std::string::npos && dot > 0) stem = stem.substr(0, dot);
  const std::string body = trim(text);
  std::vector<Run> runs;
  if (body.empty()) throw BadInput(source + ": no runs (empty input)");
  if (body[0] != '{')
    if (const char* format = benchmark_format_of(body))
      throw BadInput(source + ": Google Benchmark " + format +
                     " output, which kairos-gate does not read: run the benchmark with --benchmark_format=json "
                     "(or --benchmark_out=FILE --benchmark_out_format=json) and give that");
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
    throw BadInput(source +
                   ": not kairos-lat JSON Lines, histogram JSON, an HdrHistogram log or Google Benchmark JSON");
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

}  // namespace kairos::gate
