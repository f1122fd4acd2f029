// gate_cli_test.cpp: the kairos-gate program: exit codes of the three verdicts (and of bad input),
// --inconclusive-exit, limits without a unit refused, the verdict kept when --markdown fails.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct Result {
  int code = -1;
  std::string out;
};

Result gate(const std::string& args) {
  Result r;
  const std::string cmd = std::string(KAIROS_GATE_EXE) + " " + args + " 2>&1";
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) r.out += buf;
    const int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return r;
}

std::string write(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("kairos-gate-cli-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path) << text;
  return path.string();
}

// Five paired repeats of order-send: mine at `ratio` times the peer's p99.
std::string runs(const double* ratio, int n = 5) {
  std::string s;
  for (int k = 0; k < n; ++k) {
    const double peer = 1000.0 * (k + 1);
    s += R"({"workload":"order-send","system":"mine","repeat":)" + std::to_string(k) + R"(,"p99_ns":)" +
         std::to_string(peer * ratio[k]) + "}\n";
    s += R"({"workload":"order-send","system":"peer","repeat":)" + std::to_string(k) + R"(,"p99_ns":)" +
         std::to_string(peer) + "}\n";
  }
  return s;
}

TEST(GateCli, ThreeVerdictsAndTheirExitCodes) {
  const double good[] = {0.4, 0.5, 0.45, 0.42, 0.48}, bad[] = {0.9, 0.95, 1.0, 0.92, 0.97},
               noisy[] = {0.3, 0.9, 0.95, 0.35, 0.99};
  const std::string g = write("good.jsonl", runs(good)), b = write("bad.jsonl", runs(bad)), n = write("noisy.jsonl", runs(noisy));
  const std::string limits = " --reference peer --max-ratio p99=0.6x";
  Result r = gate("-c " + g + limits);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("verdict: PASS"), std::string::npos) << r.out;
  r = gate("-c " + b + limits);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("verdict: REGRESSION"), std::string::npos) << r.out;
  r = gate("-c " + n + limits);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("verdict: INCONCLUSIVE"), std::string::npos) << r.out;
  EXPECT_EQ(gate("-c " + n + limits + " --inconclusive-exit 0").code, 0);
  EXPECT_EQ(gate("-c " + n + limits + " --inconclusive-exit 1").code, 1);
}

TEST(GateCli, BareNumbersAndBadInputExitTwo) {
  const double good[] = {0.4, 0.5, 0.45, 0.42, 0.48};
  const std::string g = write("good2.jsonl", runs(good));
  Result r = gate("-c " + g + " -b " + g + " -t p99=10");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("has no unit"), std::string::npos) << r.out;
  EXPECT_EQ(gate("-c " + g + " --reference peer --max-ratio p99=0.6").code, 2);
  EXPECT_EQ(gate("-c /nonexistent.jsonl --reference peer --max-ratio p99=0.6x").code, 2);
  EXPECT_EQ(gate("-c " + write("junk.jsonl", "{oops\n") + " --reference peer --max-ratio p99=0.6x").code, 2);
}

TEST(GateCli, VerdictSurvivesAnUnwritableMarkdownFile) {
  const double bad[] = {0.9, 0.95, 1.0, 0.92, 0.97};
  const Result r = gate("-c " + write("bad2.jsonl", runs(bad)) +
                        " --reference peer --max-ratio p99=0.6x --markdown /nonexistent-dir/summary.md");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("verdict: REGRESSION"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cannot be written"), std::string::npos) << r.out;
}

TEST(GateCli, GoogleBenchmarkBaselineForAUserWorkload) {
  auto bench = [](double scale) {
    std::string s = R"({"context":{"host_name":"h","num_cpus":2},"benchmarks":[)";
    for (int i = 0; i < 8; ++i)
      s += std::string(i ? "," : "") + R"({"name":"BM_order_send","run_type":"iteration","repetition_index":)" +
           std::to_string(i) + R"(,"real_time":)" + std::to_string(scale * (100 + i)) + R"(,"cpu_time":1,"time_unit":"us"})";
    return s + "]}";
  };
  const std::string base = write("base.json", bench(1.0)), same = write("same.json", bench(1.01)),
                    slow = write("slow.json", bench(1.2));
  EXPECT_EQ(gate("-b " + base + " -c " + same + " -t real_time=10%").code, 0);
  const Result r = gate("-b " + base + " -c " + slow + " -t real_time=10% --markdown " + write("md", ""));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("BM_order_send"), std::string::npos) << r.out;
}

}  // namespace
