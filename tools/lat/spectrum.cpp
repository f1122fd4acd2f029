// spectrum.cpp: the readers and the chart of spectrum.hpp.
#include "spectrum.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <kairos/hdr_codec.hpp>

#include <histogram_json.hpp>
#include <json_input.hpp>

#include "report.hpp"

namespace kairos::lat {
namespace {

using json = nlohmann::ordered_json;

constexpr double kXStep = 0.02;     // 50 points per decade of 1/(1-p)
constexpr double kXLimit = 6;       // 99.9999%
constexpr std::size_t kMaxSeries = 64;  // a chart with more lines is unreadable; refused

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1));
}

std::string stem_of(const std::string& name) {
  std::string s = name.substr(name.find_last_of('/') == std::string::npos ? 0 : name.find_last_of('/') + 1);
  if (auto dot = s.find('.'); dot != std::string::npos && dot > 0) s = s.substr(0, dot);
  return s.empty() ? "input" : s;
}

// The first non-blank line, trimmed, and its number (1-based; 0 when there is none).
std::pair<std::string, std::size_t> first_line(std::string_view text) {
  std::size_t start = 0, number = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    std::string line = trim(text.substr(start, end - start));
    if (!line.empty()) return {line, number};
    start = end + 1;
  }
  return {std::string(), 0};
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '&') o += "&amp;";
    else if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '"') o += "&quot;";
    else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x80) o += '?';  // XML-safe ASCII
    else o += c;
  }
  return o;
}

void add_series(SpectrumChart& chart, SpectrumSeries s, const std::string& name) {
  if (s.points.empty()) return;
  if (chart.series.size() == kMaxSeries)
    fail(name + ": more than " + std::to_string(kMaxSeries) + " distributions for one chart");
  chart.series.push_back(std::move(s));
}

// .hgrm: rows "Value Percentile TotalCount [1/(1-Percentile)]" after a header; '#' lines are the
// footer. Values in microseconds (see spectrum.hpp).
SpectrumChart chart_from_hgrm(std::string_view text, const std::string& name) {
  SpectrumChart chart{stem_of(name) + "_spectrum", "Percentile spectrum: " + stem_of(name), "", {}};
  SpectrumSeries s{stem_of(name), {}};
  std::istringstream in{std::string(text)};
  std::size_t line_no = 0;
  double last_x = -1, total = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#' || t.find("Percentile") != std::string::npos) continue;
    std::istringstream row(t);
    double value = 0, p = 0, count = 0;
    // TotalCount is a 64-bit count: at most 2^64 - 1 (a larger one would not convert to one).
    if (!(row >> value >> p >> count) || !std::isfinite(value) || value < 0 || !(p >= 0 && p <= 1) ||
        !(count >= 0 && count < 18446744073709551616.0))
      fail(name + ":" + std::to_string(line_no) + ": not an .hgrm row (Value Percentile TotalCount ...): " +
           t.substr(0, 60));
    total = std::max(total, count);
    double x = p < 1 ? -std::log10(1 - p) : std::log10(std::max(total, 1.0));
    x = std::clamp(x, last_x < 0 ? 0.0 : last_x, kXLimit);  // x ascending, within the chart
    last_x = x;
    s.points.emplace_back(x, value * 1000.0);
  }
  if (s.points.empty()) fail(name + ": no .hgrm rows");
  chart.subtitle = "from " + stem_of(name) + ".hgrm (values read as microseconds), " +
                   std::to_string(static_cast<unsigned long long>(total)) + " samples";
  add_series(chart, std::move(s), name);
  return chart;
}

SpectrumChart chart_from_hlog(std::string_view text, const std::string& name) {
  std::istringstream in{std::string(text)};
  hdr::Hlog log;
  try {
    log = hdr::read_hlog(in);  // names the line
  } catch (const std::invalid_argument& e) {
    fail(name + ": " + e.what());
  }
  std::map<std::string, std::unique_ptr<LatencyHistogram>> by_tag;  // 57 KiB each: on the heap
  std::vector<std::string> order;
  for (const hdr::HlogInterval& iv : log.intervals) {
    auto& h = by_tag[iv.tag];
    if (!h) {
      h = std::make_unique<LatencyHistogram>();
      order.push_back(iv.tag);
    }
    h->merge(iv.histogram);
  }
  SpectrumChart chart{stem_of(name) + "_spectrum", "Percentile spectrum: " + stem_of(name),
                      "from " + stem_of(name) + ".hlog, " + std::to_string(log.intervals.size()) +
                          " intervals merged per tag",
                      {}};
  for (const std::string& tag : order) add_series(chart, spectrum_of(*by_tag[tag], tag.empty() ? stem_of(name) : tag), name);
  if (chart.series.empty()) fail(name + ": no samples in the log");
  return chart;
}

SpectrumChart chart_from_histogram_json(std::string_view text, const std::string& name) {
  SpectrumChart chart{stem_of(name) + "_spectrum", "Percentile spectrum: " + stem_of(name),
                      "from kairos latency histogram JSON", {}};
  std::size_t start = 0, line_no = 0;
  auto h = std::make_unique<LatencyHistogram>();
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string line = trim(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty()) continue;
    const std::string where = name + ":" + std::to_string(line_no);
    nlohmann::json j;
    try {
      j = tools::parse_json_bounded(line);
      tools::histogram_from_json(j, *h);
    } catch (const std::invalid_argument& e) {
      fail(where + ": " + e.what());
    }
    std::string label;
    for (const char* key : {"workload", "system"})
      if (j.contains(key) && j[key].is_string()) label += (label.empty() ? "" : " ") + j[key].get<std::string>();
    add_series(chart, spectrum_of(*h, label.empty() ? stem_of(name) + " line " + std::to_string(line_no) : label),
               name);
  }
  if (chart.series.empty()) fail(name + ": no histogram holds samples");
  return chart;
}

// A linear axis from 0 to at least `top`: the step (1, 2 or 5 times a power of ten) that gives
// 4 to 10 ticks.
double nice_step(double top) {
  const double raw = top / 5;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * decade >= raw) return m * decade;
  return 10 * decade;
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                         "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8"};

}  // namespace

const char* input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::records: return "kairos-lat records";
    case InputKind::histogram_json: return "latency histogram JSON";
    case InputKind::hlog: return "HdrHistogram interval log (.hlog)";
    case InputKind::hgrm: return "HdrHistogram percentile distribution (.hgrm)";
  }
  return "?";
}

InputKind detect_input_kind(std::string_view text, const std::string& name) {
  const auto [line, number] = first_line(text);
  if (line.empty()) fail(name + ": empty input");
  if (line[0] == '{')
    return line.find("\"kind\"") != std::string::npos && line.find(tools::kHistogramKind) != std::string::npos
               ? InputKind::histogram_json
               : InputKind::records;
  if (line.rfind("#[", 0) == 0 || line.rfind("Tag=", 0) == 0 || line.rfind("\"StartTimestamp\"", 0) == 0 ||
      line.rfind("StartTimestamp", 0) == 0)
    return InputKind::hlog;
  if (line.find("Value") != std::string::npos && line.find("Percentile") != std::string::npos) return InputKind::hgrm;
  if (std::isdigit(static_cast<unsigned char>(line[0])))
    return line.find(',') != std::string::npos ? InputKind::hlog : InputKind::hgrm;
  fail(name + ":" + std::to_string(number) + ": neither kairos-lat records, latency histogram JSON, an .hlog nor an .hgrm (" +
       line.substr(0, 40) + ")");
}

SpectrumSeries spectrum_of(const LatencyHistogram& h, std::string label) {
  SpectrumSeries s{std::move(label), {}};
  const std::uint64_t n = h.count();
  if (n == 0) return s;
  // The last point is the maximum, at p = 1 - 1/n; the grid stops before it.
  const double x_max = std::min(kXLimit, std::log10(static_cast<double>(n)));
  std::size_t index = 0;
  std::uint64_t seen = h.count_at_index(0);
  for (int k = 0; k * kXStep < x_max; ++k) {
    const double x = k * kXStep;
    const double p = 100.0 * (1.0 - std::pow(10.0, -x));
    const std::uint64_t rank = LatencyHistogram::rank_at_percentile(std::clamp(p, 0.0, 100.0), n);
    while (seen < rank && index + 1 < LatencyHistogram::kBucketCount) seen += h.count_at_index(++index);
    const std::int64_t lo = LatencyHistogram::lowest_equivalent(index);
    const std::int64_t mid = lo + (LatencyHistogram::highest_equivalent(index) - lo) / 2;
    const std::int64_t v = rank <= 1 ? h.min() : std::clamp(mid, h.min(), h.max());
    s.points.emplace_back(x, static_cast<double>(v));
  }
  s.points.emplace_back(x_max, static_cast<double>(h.max()));
  return s;
}

std::vector<SpectrumChart> spectrum_charts(std::string_view text, const std::string& name) {
  switch (detect_input_kind(text, name)) {
    case InputKind::hgrm: return {chart_from_hgrm(text, name)};
    case InputKind::hlog: return {chart_from_hlog(text, name)};
    case InputKind::histogram_json: return {chart_from_histogram_json(text, name)};
    case InputKind::records: break;
  }
  fail(name + ": kairos-lat records: read them with records.hpp and chart them with spectrum_charts(records)");
}

std::vector<SpectrumChart> spectrum_charts(const std::vector<json>& records) {
  std::vector<SpectrumChart> charts;
  auto h = std::make_unique<LatencyHistogram>();
  auto one = std::make_unique<LatencyHistogram>();
  for (const RunGroup& g : group_runs(records)) {
    h->reset();
    std::size_t runs = 0;
    for (const json& rec : g.runs) {
      if (!rec.contains("histogram") || !rec["histogram"].is_string()) continue;
      try {
        hdr::from_base64(rec["histogram"].get<std::string>(), *one);
      } catch (const std::invalid_argument& e) {
        fail(g.workload + " on " + g.label + ": its \"histogram\" does not decode: " + e.what());
      }
      h->merge(*one);
      ++runs;
    }
    if (runs == 0 || h->empty()) continue;
    std::string stem = g.workload;
    std::transform(stem.begin(), stem.end(), stem.begin(), [](unsigned char c) {
      return std::isalnum(c) ? static_cast<char>(std::tolower(c)) : '_';
    });
    auto chart = std::find_if(charts.begin(), charts.end(),
                              [&](const SpectrumChart& c) { return c.name == stem + "_spectrum"; });
    if (chart == charts.end()) {
      const std::string what = g.runs.front().contains("name") ? g.runs.front()["name"].get<std::string>() : "";
      charts.push_back({stem + "_spectrum", "Percentile spectrum: " + g.workload + (what.empty() ? "" : " " + what),
                        "kairos-lat records; each line the histograms of its runs merged", {}});
      chart = charts.end() - 1;
    }
    add_series(*chart,
               spectrum_of(*h, g.label + (g.params_label.empty() ? "" : " " + g.params_label) +
                                   (runs > 1 ? " (" + std::to_string(runs) + " runs)" : "")),
               g.workload);
  }
  return charts;
}

std::vector<std::string> input_names(const std::vector<std::string>& paths) {
  std::vector<std::string> names;
  for (const std::string& p : paths) names.push_back(stem_of(p));
  std::vector<std::string> out = names;
  for (std::size_t k = 0; k < names.size(); ++k)
    if (std::count(names.begin(), names.end(), names[k]) > 1) out[k] = paths[k];
  return out;
}

std::vector<SpectrumChart> overlay_charts(const std::vector<OverlayInput>& inputs) {
  std::string all;
  for (const OverlayInput& in : inputs) all += (all.empty() ? "" : " vs ") + in.name;
  std::vector<SpectrumChart> out;
  for (const OverlayInput& in : inputs)
    for (const SpectrumChart& c : in.charts) {
      const std::string key = in.records ? c.name : "spectrum";
      auto chart = std::find_if(out.begin(), out.end(), [&](const SpectrumChart& o) { return o.name == key; });
      if (chart == out.end()) {
        out.push_back({key, in.records ? c.title : "Percentile spectrum", "overlay: " + all, {}});
        chart = out.end() - 1;
      }
      for (const SpectrumSeries& series : c.series)  // a line already named after its file keeps that name
        add_series(*chart, {series.label == in.name ? in.name : in.name + ": " + series.label, series.points}, in.name);
    }
  return out;
}

std::string spectrum_svg(const SpectrumChart& chart, const SpectrumStyle& style) {
  // Text is 13 px sans-serif; 7.5 px per character bounds its width (digits and capitals are
  // the widest) for the layout below.
  constexpr double kCharWidth = 7.5, kRow = 18;
  const double width = 980, left = 90, right = 340, top = 70, plot_h = 426, bottom = 64;
  const double plot_w = width - left - right;
  const double legend_x = left + plot_w + 20, legend_text_x = legend_x + 32;
  const auto legend_chars = static_cast<std::size_t>((width - 8 - legend_text_x) / kCharWidth);
  // The legend's rows start at the plot's top; the chart grows downwards when they need it.
  const double legend_h = 10 + kRow * static_cast<double>(chart.series.size());
  const double height = top + std::max(plot_h, legend_h) + bottom;

  double x_max = 2, y_max = 0, y_min = 0;
  for (const SpectrumSeries& s : chart.series)
    for (const auto& [x, y] : s.points) {
      x_max = std::max(x_max, x), y_max = std::max(y_max, y);
      if (y >= 1 && (y_min == 0 || y < y_min)) y_min = y;
    }
  x_max = std::min(kXLimit, std::ceil(x_max - 1e-9));
  struct Unit {
    double div;
    const char* name;
  };
  const Unit unit = y_max >= 1e10 ? Unit{1e9, "s"} : y_max >= 1e7 ? Unit{1e6, "ms"} : y_max >= 1e4 ? Unit{1e3, "us"}
                                                                                     : Unit{1, "ns"};
  // Linear: 0 to a round top. Log: whole decades (in ns) around the values, at least one.
  const double top_value = std::max(y_max / unit.div, 1e-9);
  const double step = nice_step(top_value);
  const double y_top = std::ceil(top_value / step - 1e-9) * step;
  const double e_lo = std::floor(std::log10(std::max(y_min, 1.0)));
  const double e_hi = std::max(e_lo + 1, std::ceil(std::log10(std::max(y_max, 1.0)) - 1e-12));
  auto x_of = [&](double x) { return left + plot_w * x / x_max; };
  auto y_of = [&](double ns) {
    if (style.log_y) return top + plot_h * (1 - (std::log10(std::max(ns, 1.0)) - e_lo) / (e_hi - e_lo));
    return top + plot_h * (1 - (ns / unit.div) / y_top);
  };

  std::ostringstream o;
  o.precision(6);
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"13\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << left << "\" y=\"28\" font-size=\"18\" font-weight=\"bold\">" << escape(chart.title)
    << "</text>\n";
  o << "<text x=\"" << left << "\" y=\"50\" fill=\"#555\">" << escape(chart.subtitle) << "</text>\n";
  char buf[64];
  auto y_tick = [&](double ns) {
    const double y = y_of(ns);
    std::snprintf(buf, sizeof buf, "%g", ns / unit.div);
    o << "<line x1=\"" << left << "\" y1=\"" << y << "\" x2=\"" << left + plot_w << "\" y2=\"" << y
      << "\" stroke=\"#ddd\"/>\n";
    o << "<text class=\"y-tick\" x=\"" << left - 8 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << buf
      << "</text>\n";
  };
  if (style.log_y) {
    // Every decade is a tick line; labels on every decade while they are 18 px apart, else on
    // every second or fifth.
    const double decades = e_hi - e_lo;
    const int every = decades * kRow <= plot_h ? 1 : decades * kRow <= 2 * plot_h ? 2 : 5;
    for (double e = e_lo; e <= e_hi + 1e-9; e += 1) {
      if (static_cast<long long>(e - e_lo) % every == 0) {
        y_tick(std::pow(10.0, e));
      } else {
        const double y = y_of(std::pow(10.0, e));
        o << "<line x1=\"" << left << "\" y1=\"" << y << "\" x2=\"" << left + plot_w << "\" y2=\"" << y
          << "\" stroke=\"#eee\"/>\n";
      }
    }
  } else {
    for (double v = 0; v <= y_top + step / 2; v += step) y_tick(v * unit.div);
  }
  static const char* kTicks[] = {"0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"};
  auto x_tick = [&](double x, const char* label) {
    o << "<line x1=\"" << x_of(x) << "\" y1=\"" << top << "\" x2=\"" << x_of(x) << "\" y2=\"" << top + plot_h
      << "\" stroke=\"#eee\"/>\n";
    o << "<text class=\"x-tick\" x=\"" << x_of(x) << "\" y=\"" << top + plot_h + 20 << "\" text-anchor=\"middle\">"
      << label << "</text>\n";
  };
  for (int k = 0; k <= static_cast<int>(x_max); ++k) x_tick(k, kTicks[k]);
  x_tick(std::log10(2.0), "50%");
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << plot_w << "\" height=\"" << plot_h
    << "\" fill=\"none\" stroke=\"#333\"/>\n";
  o << "<text id=\"x-label\" x=\"" << left + plot_w / 2 << "\" y=\"" << top + plot_h + 50
    << "\" text-anchor=\"middle\">percentile (log scale of 1/(1-p))</text>\n";
  o << "<text id=\"y-label\" transform=\"translate(24," << top + plot_h / 2
    << ") rotate(-90)\" text-anchor=\"middle\">latency (" << unit.name << (style.log_y ? ", log scale" : "")
    << ")</text>\n";
  for (std::size_t k = 0; k < chart.series.size(); ++k) {
    const SpectrumSeries& s = chart.series[k];
    const char* color = kColors[k % (sizeof kColors / sizeof kColors[0])];
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
    for (const auto& [x, y] : s.points) o << x_of(std::min(x, x_max)) << "," << y_of(y) << " ";
    o << "\"><title>" << escape(s.label) << "</title></polyline>\n";
    const double ly = top + 10 + kRow * static_cast<double>(k);
    const std::string shown =
        s.label.size() <= legend_chars ? s.label : s.label.substr(0, legend_chars - 3) + "...";
    o << "<line x1=\"" << legend_x << "\" y1=\"" << ly << "\" x2=\"" << legend_x + 24 << "\" y2=\"" << ly
      << "\" stroke=\"" << color << "\" stroke-width=\"3\"/>\n";
    o << "<text class=\"legend\" x=\"" << legend_text_x << "\" y=\"" << ly + 4 << "\">" << escape(shown)
      << "<title>" << escape(s.label) << "</title></text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace kairos::lat
