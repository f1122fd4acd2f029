// svg_plot.cpp: the chart of svg_plot.hpp. Its legend, as the spectrum's (spectrum.hpp): one row
// per series 18 px apart, the chart growing downwards when the rows need it, and a label too long
// for the legend's width cut with "..." (the whole label is the row's <title>), so no two labels
// overlap however many runs are overlaid (kairos-lat --from A --from B).
#include "svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace kairos::lat {
namespace {

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '&') o += "&amp;";
    else if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

std::string tick_label(double ns) {
  if (ns < 1e3) return std::to_string(static_cast<long long>(ns)) + " ns";
  if (ns < 1e6) return std::to_string(static_cast<long long>(ns / 1e3)) + " us";
  if (ns < 1e9) return std::to_string(static_cast<long long>(ns / 1e6)) + " ms";
  return std::to_string(static_cast<long long>(ns / 1e9)) + " s";
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                         "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8"};

}  // namespace

bool write_lateness_svg(const std::string& path, const std::string& title, const std::string& subtitle,
                        const std::vector<PercentileSeries>& series) {
  static const char* kX[] = {"p50", "p90", "p99", "p99.9", "p99.99", "max"};
  constexpr double kCharWidth = 7.5, kRow = 18;  // 13 px sans-serif: a bound on a character's width
  const double width = 980, left = 90, right = 340, top = 70, bottom = 60, plot_h = 430;
  const double plot_w = width - left - right;
  const double legend_x = left + plot_w + 20, legend_text_x = legend_x + 32;
  const auto legend_chars = static_cast<std::size_t>((width - 8 - legend_text_x) / kCharWidth);
  const double height = top + std::max(plot_h, 10 + kRow * static_cast<double>(series.size())) + bottom;

  double lo = 1e18, hi = 1;
  for (const auto& s : series)
    for (double v : s.values)
      if (!std::isnan(v)) {
        lo = std::min(lo, std::max(v, 1.0));
        hi = std::max(hi, std::max(v, 1.0));
      }
  if (lo > hi) lo = 1;
  double e_lo = std::floor(std::log10(lo)), e_hi = std::ceil(std::log10(hi));
  if (e_hi <= e_lo) e_hi = e_lo + 1;
  auto y_of = [&](double v) {
    double e = std::log10(std::max(v, 1.0));
    return top + plot_h * (1 - (e - e_lo) / (e_hi - e_lo));
  };
  auto x_of = [&](std::size_t i) { return left + plot_w * (static_cast<double>(i) + 0.5) / 6.0; };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"13\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << left << "\" y=\"28\" font-size=\"18\" font-weight=\"bold\">" << escape(title) << "</text>\n";
  o << "<text x=\"" << left << "\" y=\"50\" fill=\"#555\">" << escape(subtitle) << "</text>\n";
  for (double e = e_lo; e <= e_hi; e += 1) {  // decades
    double y = y_of(std::pow(10.0, e));
    o << "<line x1=\"" << left << "\" y1=\"" << y << "\" x2=\"" << left + plot_w << "\" y2=\"" << y
      << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << left - 8 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
      << tick_label(std::pow(10.0, e)) << "</text>\n";
  }
  for (std::size_t i = 0; i < 6; ++i) {
    double x = x_of(i);
    o << "<line x1=\"" << x << "\" y1=\"" << top << "\" x2=\"" << x << "\" y2=\"" << top + plot_h
      << "\" stroke=\"#eee\"/>\n";
    o << "<text x=\"" << x << "\" y=\"" << top + plot_h + 22 << "\" text-anchor=\"middle\">" << kX[i] << "</text>\n";
  }
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << plot_w << "\" height=\"" << plot_h
    << "\" fill=\"none\" stroke=\"#333\"/>\n";
  o << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << top + plot_h + 48
    << "\" text-anchor=\"middle\">percentile of lateness (start - deadline)</text>\n";
  o << "<text transform=\"translate(20," << top + plot_h / 2
    << ") rotate(-90)\" text-anchor=\"middle\">lateness (log scale)</text>\n";

  for (std::size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const char* color = kColors[k % (sizeof kColors / sizeof kColors[0])];
    std::ostringstream pts;
    for (std::size_t i = 0; i < s.values.size() && i < 6; ++i)
      if (!std::isnan(s.values[i])) pts << x_of(i) << "," << y_of(s.values[i]) << " ";
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"" << pts.str() << "\"/>\n";
    for (std::size_t i = 0; i < s.values.size() && i < 6; ++i)
      if (!std::isnan(s.values[i]))
        o << "<circle cx=\"" << x_of(i) << "\" cy=\"" << y_of(s.values[i]) << "\" r=\"3.5\" fill=\"" << color
          << "\"><title>" << escape(s.label) << " " << kX[i] << ": " << static_cast<long long>(s.values[i])
          << " ns</title></circle>\n";
    const double ly = top + 10 + kRow * static_cast<double>(k);
    const std::string shown = s.label.size() <= legend_chars ? s.label : s.label.substr(0, legend_chars - 3) + "...";
    o << "<line x1=\"" << legend_x << "\" y1=\"" << ly << "\" x2=\"" << legend_x + 24 << "\" y2=\"" << ly
      << "\" stroke=\"" << color << "\" stroke-width=\"3\"/>\n";
    o << "<text class=\"legend\" x=\"" << legend_text_x << "\" y=\"" << ly + 4 << "\">" << escape(shown) << "<title>"
      << escape(s.label) << "</title></text>\n";
  }
  o << "</svg>\n";

  std::ofstream f(path);
  if (!f) return false;
  f << o.str();
  return static_cast<bool>(f);
}

}  // namespace kairos::lat
