// gate_cli_test.cpp: the kairos-gate program: exit codes of the three verdicts (and of bad input),
// --inconclusive-exit, limits without a unit refused, the verdict kept when --markdown fails; A/B
// mode with shell commands that print synthetic runs (no timing): ABBA order, the three verdicts,
// a failing command, --record then --ab.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scratch_dir.hpp"

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
  static const kairos_test::ScratchDir dir("kairos-gate-cli-");  // removed at exit
  const auto path = dir / name;
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

// Google Benchmark console output given for JSON: exit 2, and the message says how to get JSON.
TEST(GateCli, GoogleBenchmarkConsoleOutputIsBadInputThatNamesTheFlag) {
  const std::string console = write("console.txt",
                                    "2026-11-27T14:00:00+00:00\nRunning ./my_bench\nRun on (2 X 2400 MHz CPU s)\n"
                                    "Benchmark        Time             CPU   Iterations\n"
                                    "BM_Send       12.3 ns         12.3 ns     56789012\n");
  const Result r = gate("-b " + console + " -c " + console + " -t cpu_time=10%");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("run the benchmark with --benchmark_format=json"), std::string::npos) << r.out;
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

TEST(GateCli, VersionPrintsTheKairosVersion) {
  const Result r = gate("--version");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, std::string("kairos-gate ") + KAIROS_GATE_VERSION + "\n");
}

// The table of a baseline comparison of Google Benchmark runs (a long benchmark name, no system):
// every line within 100 columns (they were 190+), no group labelled "current", and a regression
// says what decided it (the U test) and that the interval only shows the size.
TEST(GateCli, TableIsNarrowNamesGroupsByWorkloadAndSaysWhatDecided) {
  auto bench = [](double scale, double outlier) {
    std::string s = R"({"context":{"host_name":"h","num_cpus":2},"benchmarks":[)";
    for (int i = 0; i < 8; ++i)
      s += std::string(i ? "," : "") +
           R"({"name":"BM_order_send_with_a_long_descriptive_name/1024/real_time","run_type":"iteration",)"
           R"("repetition_index":)" + std::to_string(i) + R"(,"real_time":)" +
           std::to_string(i == 7 ? outlier : scale * (100 + i)) + R"(,"cpu_time":1,"time_unit":"us"})";
    return s + "]}";
  };
  // Slower in every repetition but one, whose baseline was far slower still: the U test is
  // significant while the medians' ratio interval reaches below 0.
  const std::string base = write("wide-base.json", bench(1.0, 400)), slow = write("wide-slow.json", bench(1.2, 90));
  const Result r = gate("-b " + base + " -c " + slow + " -t real_time=10%");
  EXPECT_EQ(r.code, 1) << r.out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
  EXPECT_EQ(r.out.find("current\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("real_time current"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decided by the U test: p = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("does not decide"), std::string::npos) << r.out;
}

// A command for A/B mode: appends "<side><round>" to `log`, then prints one W3 run whose p50 is
// the round's entry of `p50s` (round 1 the first).
std::string ab_cmd(const std::string& log, const std::vector<int>& p50s) {
  std::string list;
  for (int v : p50s) list += std::to_string(v) + " ";
  return "'echo $KAIROS_GATE_SIDE$KAIROS_GATE_ROUND >> " + log + "; set -- " + list +
         "; shift $((KAIROS_GATE_ROUND - 1)); echo {\\\"workload\\\":\\\"W3\\\",\\\"system\\\":\\\"mine\\\",\\\"p50_ns\\\":$1}'";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::string s, line;
  while (std::getline(in, line)) s += line + " ";
  return s;
}

TEST(GateCliAb, RunsBothCommandsAlternatelyAbbaAndJudgesThePairs) {
  const std::string log = write("ab-order.log", "");
  // The machine's state moves both sides alike from round to round; the candidate is 30% slower.
  const std::vector<int> base = {400, 800, 410, 1200, 390, 820}, slow = {520, 1040, 533, 1560, 507, 1066};
  Result r = gate("--baseline-cmd " + ab_cmd(log, base) + " --candidate-cmd " + ab_cmd(log, slow) +
                  " --rounds 6 -t p50=10%");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("verdict: REGRESSION"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("round 2 of 6 (candidate first"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(log), "baseline1 candidate1 candidate2 baseline2 baseline3 candidate3 "
                        "candidate4 baseline4 baseline5 candidate5 candidate6 baseline6 ");
  // The same build on both sides: a pass, though the state moved 3x.
  r = gate("--baseline-cmd " + ab_cmd(log, base) + " --candidate-cmd " + ab_cmd(log, base) + " --rounds 6 -t p50=10%");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("verdict: PASS"), std::string::npos) << r.out;
}

TEST(GateCliAb, TooNoisyIsInconclusiveWithItsOwnExitCode) {
  const std::string log = write("ab-noisy.log", "");
  const std::vector<int> base = {400, 400, 400, 400, 400, 400}, noisy = {360, 520, 410, 500, 380, 470};
  const std::string cmds = "--baseline-cmd " + ab_cmd(log, base) + " --candidate-cmd " + ab_cmd(log, noisy) +
                           " --rounds 6 -t p50=10%";
  Result r = gate(cmds);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("verdict: INCONCLUSIVE"), std::string::npos) << r.out;
  EXPECT_EQ(gate(cmds + " --inconclusive-exit 0").code, 0);
}

TEST(GateCliAb, RecordIsJudgedAgainWithAb) {
  const std::string log = write("ab-record.log", ""), rec = write("ab-record.jsonl", "");
  const std::vector<int> base = {400, 800, 410, 1200, 390, 820}, slow = {520, 1040, 533, 1560, 507, 1066};
  Result r = gate("--baseline-cmd " + ab_cmd(log, base) + " --candidate-cmd " + ab_cmd(log, slow) +
                  " --rounds 6 -t p50=10% --record " + rec);
  EXPECT_EQ(r.code, 1) << r.out;
  r = gate("--ab " + rec + " -t p50=10%");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("1.3x [1.3x .. 1.3x]"), std::string::npos) << r.out;
  EXPECT_EQ(gate("--ab " + rec + " --max-ratio p50=1.5x").code, 0);
  // A plain kairos-lat file is not an A/B record.
  const double good[] = {0.4, 0.5, 0.45, 0.42, 0.48};
  EXPECT_EQ(gate("--ab " + write("plain.jsonl", runs(good)) + " -t p99=10%").code, 2);
}

TEST(GateCliAb, AFailingCommandIsBadInputWithItsStderr) {
  const std::string log = write("ab-fail.log", "");
  const std::vector<int> base = {400, 400, 400, 400, 400};
  Result r = gate("--baseline-cmd " + ab_cmd(log, base) +
                  " --candidate-cmd 'echo the candidate crashed >&2; exit 7' --rounds 5 -t p50=10%");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("candidate command failed in round 1 (exit 7)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the candidate crashed"), std::string::npos) << r.out;
  // Usage errors: one command only, no limit, A/B mixed with --current.
  EXPECT_EQ(gate("--baseline-cmd true -t p50=10%").code, 2);
  EXPECT_EQ(gate("--baseline-cmd true --candidate-cmd true").code, 2);
  EXPECT_EQ(gate("--baseline-cmd true --candidate-cmd true -t p50=10% -c x.jsonl").code, 2);
}

}  // namespace
