// lat_spectrum_test.cpp: tools/lat/spectrum.hpp, the percentile-spectrum chart, drawn by kairos-lat
// (--from X --svg DIR) from each kind of input it reads: its own records, latency histogram JSON,
// an .hlog and an .hgrm. Each chart must exist, parse as XML with an <svg> root, and carry its
// axes: "percentile" with the 50/90/99/99.9/99.99 ticks, "latency (<unit>)". Also the spectrum's
// points (the log axis, the maximum last), the refusals (exit 2), --from repeated (the runs
// overlaid), --log-y, and labels that never overlap nor leave the chart.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include <kairos/hdr_codec.hpp>

#include "scratch_dir.hpp"
#include "spectrum.hpp"

namespace {

namespace fs = std::filesystem;
namespace lat = kairos::lat;
using kairos::LatencyHistogram;

struct Result {
  int code = -1;
  std::string out;
};

Result run(const std::string& args) {
  Result r;
  const std::string cmd = std::string(KAIROS_LAT_EXE) + " " + args + " 2>&1";
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) r.out += buf;
    const int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return r;
}

fs::path scratch() {
  static const kairos_test::ScratchDir dir("kairos-lat-spectrum-");  // removed at exit
  return dir.path();
}

fs::path write(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p;
}

// 20,000 samples from 20 us to about 2 ms (the y axis in us): the chart reaches 99.99%.
const LatencyHistogram& sample() {
  static const LatencyHistogram h = [] {
    LatencyHistogram x;
    for (int i = 1; i <= 20'000; ++i) x.record(20'000 + static_cast<std::int64_t>(i) * i / 200);
    return x;
  }();
  return h;
}

// The chart at `path`: parses as XML, root <svg>, both axis labels and the percentile ticks.
void expect_chart(const fs::path& path, const std::string& unit) {
  ASSERT_TRUE(fs::exists(path)) << path;
  boost::property_tree::ptree tree;
  ASSERT_NO_THROW(boost::property_tree::read_xml(path.string(), tree)) << path;
  ASSERT_EQ(tree.count("svg"), 1u) << path;
  std::set<std::string> x_ticks;
  std::string x_label, y_label;
  std::size_t lines = 0;
  for (const auto& [tag, node] : tree.get_child("svg")) {
    if (tag == "polyline") ++lines;
    if (tag != "text") continue;
    const std::string cls = node.get("<xmlattr>.class", ""), id = node.get("<xmlattr>.id", "");
    if (cls == "x-tick") x_ticks.insert(node.data());
    if (id == "x-label") x_label = node.data();
    if (id == "y-label") y_label = node.data();
  }
  EXPECT_GE(lines, 1u) << path;
  EXPECT_NE(x_label.find("percentile"), std::string::npos) << path << ": " << x_label;
  EXPECT_EQ(y_label, "latency (" + unit + ")") << path;
  for (const char* tick : {"50%", "90%", "99%", "99.9%", "99.99%"}) EXPECT_TRUE(x_ticks.count(tick)) << path << " " << tick;
}

TEST(LatSpectrum, PointsOnTheLogAxisEndAtTheMaximum) {
  const lat::SpectrumSeries s = lat::spectrum_of(sample(), "x");
  ASSERT_GT(s.points.size(), 100u);
  EXPECT_DOUBLE_EQ(s.points.front().first, 0);
  EXPECT_NEAR(s.points.back().first, std::log10(20'000.0), 1e-9);
  EXPECT_EQ(s.points.back().second, static_cast<double>(sample().max()));
  for (std::size_t k = 1; k < s.points.size(); ++k) {
    EXPECT_GT(s.points[k].first, s.points[k - 1].first) << k;
    EXPECT_GE(s.points[k].second, s.points[k - 1].second) << k;
  }
  // x = 2 is p99: the value there is the histogram's p99.
  bool at_p99 = false;
  for (const auto& [x, v] : s.points) {
    if (std::fabs(x - 2) > 1e-9) continue;
    at_p99 = true;
    EXPECT_EQ(v, static_cast<double>(sample().value_at_percentile(99)));
  }
  EXPECT_TRUE(at_p99);
  EXPECT_TRUE(lat::spectrum_of(LatencyHistogram{}, "empty").points.empty());
}

TEST(LatSpectrum, ChartFromEachInputKind) {
  const fs::path dir = scratch() / "svg";
  // kairos-lat records: each run's histogram, base64 of the V2 compressed encoding.
  std::string records;
  for (int repeat = 1; repeat <= 2; ++repeat)
    records += R"({"workload":"W3","name":"lateness","system":"kairos-hybrid","config":{"shards":1},)"
               R"("parameters":{"count":20000},"repeat":)" + std::to_string(repeat) +
               R"(,"p50_ns":1,"histogram":")" + kairos::hdr::to_base64(sample()) + "\"}\n";
  Result r = run("--from " + write("runs.jsonl", records).string() + " --svg " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  expect_chart(dir / "w3_spectrum.svg", "us");

  r = run("--from " + write("hist.json", sample().to_json() + "\n").string() + " --svg " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  expect_chart(dir / "hist_spectrum.svg", "us");

  std::ostringstream log;
  kairos::hdr::HlogWriter writer(log, 1'700'000'000.0);
  writer.write(sample(), 0, 1, "paced");
  writer.write(sample(), 1, 1, "paced");
  r = run("--from " + write("paced.hlog", log.str()).string() + " --svg " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  expect_chart(dir / "paced_spectrum.svg", "us");

  std::ostringstream hgrm;
  kairos::hdr::write_hgrm(hgrm, sample());
  r = run("--from " + write("dist.hgrm", hgrm.str()).string() + " --svg " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  expect_chart(dir / "dist_spectrum.svg", "us");
}

TEST(LatSpectrum, DistributionsWithoutSvgOrUnreadableAreUsageErrors) {
  std::ostringstream hgrm;
  kairos::hdr::write_hgrm(hgrm, sample());
  const Result r = run("--from " + write("nosvg.hgrm", hgrm.str()).string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("give --svg DIR"), std::string::npos) << r.out;
  const fs::path dir = scratch() / "bad";
  EXPECT_EQ(run("--from " + write("bad.hgrm", "Value Percentile TotalCount\n1.0 banana 3\n").string() + " --svg " +
                dir.string()).code, 2);
  EXPECT_EQ(run("--from " + write("bad.hlog", "#[StartTime: soon]\n").string() + " --svg " + dir.string()).code, 2);
  // A TotalCount past 2^64 (found by lat_records_fuzz: converting it to a count was undefined).
  EXPECT_EQ(run("--from " + write("huge.hgrm", "Value Percentile TotalCount\n1.0 0.5 1e29\n").string() + " --svg " +
                dir.string()).code, 2);
  EXPECT_EQ(run("--from " + write("bad-record.jsonl", R"({"workload":"W3","system":"s","parameters":{},"histogram":"AAAA"})" "\n").string() +
                " --svg " + dir.string()).code, 2);
}

// The text elements of a chart, by class, with their content and position.
struct Text {
  std::string cls, anchor, content;
  double x = 0, y = 0;
};
struct Chart {
  double width = 0, height = 0;
  std::vector<Text> texts;
  std::vector<std::string> line_titles;  // each polyline's <title>
  std::string y_label;
};
Chart parse_chart(const std::string& xml) {
  boost::property_tree::ptree tree;
  std::istringstream in(xml);
  boost::property_tree::read_xml(in, tree);
  Chart c;
  const auto& svg = tree.get_child("svg");
  c.width = svg.get<double>("<xmlattr>.width");
  c.height = svg.get<double>("<xmlattr>.height");
  for (const auto& [tag, node] : svg) {
    if (tag == "polyline") c.line_titles.push_back(node.get("title", ""));
    if (tag != "text") continue;
    if (node.get("<xmlattr>.id", "") == "y-label") c.y_label = node.data();
    const std::string cls = node.get("<xmlattr>.class", "");
    if (cls.empty()) continue;
    c.texts.push_back({cls, node.get("<xmlattr>.text-anchor", "start"), node.data(), node.get<double>("<xmlattr>.x"),
                       node.get<double>("<xmlattr>.y")});
  }
  return c;
}
Chart parse_chart_file(const fs::path& path) {
  std::ifstream f(path);
  return parse_chart(std::string(std::istreambuf_iterator<char>(f), {}));
}

// No two labels (ticks, legend rows) overlap, and each lies inside the chart. A label's box: 13 px
// high above its baseline, 7.5 px per character wide (13 px sans-serif is narrower), placed by
// its text-anchor.
void expect_labels_apart(const Chart& c) {
  struct Box {
    double x0, y0, x1, y1;
    std::string what;
  };
  std::vector<Box> boxes;
  for (const Text& t : c.texts) {
    const double w = 7.5 * static_cast<double>(t.content.size());
    const double x0 = t.anchor == "middle" ? t.x - w / 2 : t.anchor == "end" ? t.x - w : t.x;
    boxes.push_back({x0, t.y - 13, x0 + w, t.y, t.cls + " '" + t.content + "'"});
  }
  for (const Box& b : boxes) {
    EXPECT_GE(b.x0, 0) << b.what;
    EXPECT_LE(b.x1, c.width) << b.what;
    EXPECT_GE(b.y0, 0) << b.what;
    EXPECT_LE(b.y1, c.height) << b.what;
  }
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      const Box &a = boxes[i], &b = boxes[j];
      const bool apart = a.x1 <= b.x0 || b.x1 <= a.x0 || a.y1 <= b.y0 || b.y1 <= a.y0;
      EXPECT_TRUE(apart) << a.what << " overlaps " << b.what;
    }
}

std::string w3_records(const LatencyHistogram& h, const std::string& system) {
  return R"({"workload":"W3","name":"lateness","system":")" + system + R"(","config":{"shards":1},)"
         R"("parameters":{"count":20000},"repeat":1,"p50_ns":1,"histogram":")" + kairos::hdr::to_base64(h) + "\"}\n";
}

// Two runs' records, --from twice: a table for each file, and one W3 spectrum with a line per
// run, each named after its file. Two .hlog files: one chart of both distributions.
TEST(LatSpectrum, RepeatedFromOverlaysTheRunsInOneChart) {
  LatencyHistogram slower;
  for (int i = 1; i <= 20'000; ++i) slower.record(40'000 + static_cast<std::int64_t>(i) * i / 100);
  const fs::path dir = scratch() / "overlay";
  const fs::path before = write("before.jsonl", w3_records(sample(), "kairos-hybrid"));
  const fs::path after = write("after.jsonl", w3_records(slower, "kairos-hybrid"));
  Result r = run("--from " + before.string() + " --from " + after.string() + " --svg " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("== " + before.string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("== " + after.string()), std::string::npos) << r.out;
  expect_chart(dir / "w3_spectrum.svg", "us");
  Chart c = parse_chart_file(dir / "w3_spectrum.svg");
  ASSERT_EQ(c.line_titles.size(), 2u);
  EXPECT_EQ(c.line_titles[0], "before: kairos-hybrid");
  EXPECT_EQ(c.line_titles[1], "after: kairos-hybrid");
  expect_labels_apart(c);
  // The W3 lateness chart (svg_plot.hpp) has a legend row per file too.
  const Chart lateness = parse_chart_file(dir / "w3_lateness.svg");
  std::vector<std::string> rows;
  for (const Text& t : lateness.texts)
    if (t.cls == "legend") rows.push_back(t.content);
  EXPECT_EQ(rows, (std::vector<std::string>{"before: kairos-hybrid", "after: kairos-hybrid"}));
  expect_labels_apart(lateness);

  std::ostringstream a, b;
  kairos::hdr::HlogWriter(a, 1.7e9).write(sample(), 0, 1);
  kairos::hdr::HlogWriter(b, 1.7e9).write(slower, 0, 1);
  r = run("--from " + write("quiet.hlog", a.str()).string() + " --from " + write("busy.hlog", b.str()).string() +
          " --svg " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  c = parse_chart_file(dir / "spectrum.svg");
  // An untagged log's line is named after its file already: the overlay keeps that name.
  EXPECT_EQ(c.line_titles, (std::vector<std::string>{"quiet", "busy"}));
  // Files of the same name in two directories are told apart by their paths.
  EXPECT_EQ(lat::input_names({"a/run.hlog", "b/run.hlog", "c/x.json"}),
            (std::vector<std::string>{"a/run.hlog", "b/run.hlog", "x"}));
}

// --log-y: decades on the y axis, labelled in the chart's unit, evenly spaced, and the axis says so.
TEST(LatSpectrum, LogYDrawsDecades) {
  const fs::path dir = scratch() / "log";
  const Result r = run("--from " + write("logy.json", sample().to_json() + "\n").string() + " --svg " +
                       dir.string() + " --log-y");
  ASSERT_EQ(r.code, 0) << r.out;
  const Chart c = parse_chart_file(dir / "logy_spectrum.svg");
  EXPECT_EQ(c.y_label, "latency (us, log scale)");
  std::vector<std::pair<std::string, double>> ticks;
  for (const Text& t : c.texts)
    if (t.cls == "y-tick") ticks.emplace_back(t.content, t.y);
  // 20 us to about 2 ms: the decades 10 us .. 10 ms.
  ASSERT_EQ(ticks.size(), 4u);
  const char* want[] = {"10", "100", "1000", "10000"};
  for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(ticks[k].first, want[k]);
  EXPECT_NEAR(ticks[0].second - ticks[1].second, ticks[2].second - ticks[3].second, 1e-6);
  EXPECT_GT(ticks[0].second, ticks[1].second);  // upwards
  expect_labels_apart(c);
}

// Many lines with long labels: the legend's rows stay apart (the chart grows downwards), each
// label is cut to the legend's width with "...", and the whole label stays the line's title.
TEST(LatSpectrum, LabelsDoNotOverlapWithManyLongOnes) {
  lat::SpectrumChart chart{"many", "Percentile spectrum: many", "", {}};
  for (int k = 0; k < 40; ++k)
    chart.series.push_back(lat::spectrum_of(
        sample(), "run-" + std::to_string(k) + ": kairos-spin 2 shards pinned warm no-lateness producers=2"));
  for (bool log_y : {false, true}) {
    const Chart c = parse_chart(lat::spectrum_svg(chart, lat::SpectrumStyle{log_y}));
    std::size_t legend = 0;
    for (const Text& t : c.texts)
      if (t.cls == "legend") {
        ++legend;
        EXPECT_EQ(t.content.substr(t.content.size() - 3), "...") << t.content;
      }
    EXPECT_EQ(legend, 40u);
    EXPECT_EQ(c.line_titles.size(), 40u);
    EXPECT_EQ(c.line_titles[7], "run-7: kairos-spin 2 shards pinned warm no-lateness producers=2");
    expect_labels_apart(c);
  }
}

}  // namespace
