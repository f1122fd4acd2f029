// lat_spectrum_test.cpp: tools/lat/spectrum.hpp, the percentile-spectrum chart, drawn by kairos-lat
// (--from X --svg DIR) from each kind of input it reads: its own records, latency histogram JSON,
// an .hlog and an .hgrm. Each chart must exist, parse as XML with an <svg> root, and carry its
// axes: "percentile" with the 50/90/99/99.9/99.99 ticks, "latency (<unit>)". Also the spectrum's
// points (the log axis, the maximum last) and the refusals (exit 2).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include <kairos/hdr_codec.hpp>

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
  static const fs::path dir = fs::temp_directory_path() / ("kairos-lat-spectrum-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
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

}  // namespace
