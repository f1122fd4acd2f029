// spectrum.hpp: the percentile-spectrum chart (as HdrHistogram's plotter and HistogramLogAnalyzer
// draw it) of latency distributions from any input kairos-lat reads: its own records (each run's
// "histogram"), kairos::LatencyHistogram JSON lines, HdrHistogram interval logs (.hlog) and
// percentile-distribution text (.hgrm).
// Chart: x is the percentile on a log scale of 1/(1 - p), so the tail gets the room (ticks 0%,
//   50%, 90%, 99%, 99.9%, 99.99%, ... as far as the largest sample count reaches, at most
//   99.9999%); y is the latency, linear from 0, in the unit of its largest value (ns, us, ms or
//   s), labelled "latency (<unit>)", or with log_y on decades from below the smallest value
//   ("latency (<unit>, log scale)"). One line per series, each line ends at its maximum (plotted
//   at p = 1 - 1/count). SVG 1.1, hand-written, no dependency.
// Labels never overlap: the legend (right of the plot) has one row per series, 18 px apart, and
//   the chart grows downwards when the rows need it; a label too long for the legend's width is
//   cut with "..." (the whole label is the row's and the line's <title>, shown on hover).
// Overlay: the charts of several inputs (kairos-lat --from A --from B) merged by chart name, each
//   series named "<input>: <label>"; the distributions (not records) of all inputs share one
//   chart, "spectrum".
// Series per input: records: one per row label (system and configuration) of each workload, the
//   histograms of its repeats merged, one chart per workload; histogram JSON: one per line (its
//   "workload"/"system" if present, else the file's name and the line); .hlog: one per tag, its
//   intervals merged; .hgrm: one, its Value column read as microseconds (the unit HdrHistogram's
//   outputPercentileDistribution and kairos's write_hgrm use for nanosecond recordings).
// Errors: std::invalid_argument naming the input and what is wrong (kairos-lat exits 2).
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <kairos/latency_histogram.hpp>

namespace kairos::lat {

struct SpectrumSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (log10(1 / (1 - p)), latency in ns), x ascending
};

struct SpectrumChart {
  std::string name;  // file stem: "w3_spectrum", "paced_spectrum"
  std::string title;
  std::string subtitle;
  std::vector<SpectrumSeries> series;
};

enum class InputKind { records, histogram_json, hlog, hgrm };
const char* input_kind_name(InputKind kind);
// From the text's first non-blank line; std::invalid_argument naming `name` and the line when it
// is none of the four.
InputKind detect_input_kind(std::string_view text, const std::string& name);

// The spectrum of one histogram (empty points for an empty histogram).
SpectrumSeries spectrum_of(const LatencyHistogram& h, std::string label);

// The charts of a text of any kind; `name` (a file name) names the input in errors and charts.
std::vector<SpectrumChart> spectrum_charts(std::string_view text, const std::string& name);
// The charts of kairos-lat records (already checked by records.hpp): one per workload whose
// records carry histograms.
std::vector<SpectrumChart> spectrum_charts(const std::vector<nlohmann::ordered_json>& records);

// One input of an overlay: its short name (input_names()), whether it held kairos-lat records
// (one chart per workload) or a distribution, and its charts.
struct OverlayInput {
  std::string name;
  bool records = false;
  std::vector<SpectrumChart> charts;
};
// Short names for the inputs' paths: each file's name without directory and extension, or the
// path as given where two of those would be the same.
std::vector<std::string> input_names(const std::vector<std::string>& paths);
std::vector<SpectrumChart> overlay_charts(const std::vector<OverlayInput>& inputs);

struct SpectrumStyle {
  bool log_y = false;  // y on a log scale (decades), for spectra that span several of them
};
std::string spectrum_svg(const SpectrumChart& chart, const SpectrumStyle& style = {});

}  // namespace kairos::lat
