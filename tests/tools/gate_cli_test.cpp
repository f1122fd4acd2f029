// gate_cli_test.cpp: the kairos-gate program's exit status (0 pass, 1 regression, 2 bad input),
// its flags, and its Markdown output, on small JSON Lines fixtures written here.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#ifndef KAIROS_GATE_EXE
#error "KAIROS_GATE_EXE must name the kairos-gate executable"
#endif

namespace {

class GateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kairos-gate-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Runs kairos-gate with args; returns its exit status, stdout+stderr in output_.
  int gate(const std::string& args) {
    const std::string out = dir_ + "/output.txt";
    const int status = std::system((std::string(KAIROS_GATE_EXE) + " " + args + " > '" + out + "' 2>&1").c_str());
    output_ = read(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  static std::string line(const std::string& system, int p99, int early_fires = 0) {
    return R"({"workload":"W3","system":")" + system + R"(","config":{"threads":1},"p50":)" +
           std::to_string(p99 / 10) + R"(,"p90":)" + std::to_string(p99 / 2) + R"(,"p99":)" + std::to_string(p99) +
           R"(,"p99.9":)" + std::to_string(p99 * 2) + R"(,"p99.99":)" + std::to_string(p99 * 3) + R"(,"max":)" +
           std::to_string(p99 * 10) + R"(,"early_fires":)" + std::to_string(early_fires) + "}\n";
  }
  static std::string three(const std::string& system, int p99) {
    return line(system, p99) + line(system, p99) + line(system, p99);
  }

  std::string dir_;
  std::string output_;
};

TEST_F(GateCli, BaselineVerdicts) {
  const std::string base = write("base.jsonl", three("kairos-hybrid", 10000));
  const std::string same = write("same.jsonl", three("kairos-hybrid", 10500));
  const std::string worse = write("worse.jsonl", three("kairos-hybrid", 12000));
  EXPECT_EQ(gate("--baseline " + base + " --current " + same + " --tolerance p99=15%"), 0) << output_;
  EXPECT_NE(output_.find("no regression"), std::string::npos) << output_;
  EXPECT_EQ(gate("--baseline " + base + " --current " + worse + " --tolerance p99=15%"), 1) << output_;
  EXPECT_NE(output_.find("REGRESSION"), std::string::npos) << output_;
  EXPECT_EQ(gate("--baseline " + base + " --current " + worse + " --tolerance p99=25% --tolerance p99.9=15%"), 1)
      << output_;
  EXPECT_EQ(gate("-b " + base + " -c " + worse + " -t all=25%"), 0) << output_;
}

TEST_F(GateCli, ReferenceVerdicts) {
  const std::string cur = write("cur.jsonl", three("kairos-hybrid", 10000) + three("naive-stpe", 40000));
  EXPECT_EQ(gate("--current " + cur + " --reference naive-stpe --max-ratio p99=0.5"), 0) << output_;
  EXPECT_EQ(gate("--current " + cur + " --reference naive-stpe --max-ratio p99=0.2"), 1) << output_;
  EXPECT_EQ(gate("--current " + cur + " --reference naive-stpe --max-ratio p99=0.5 --max-ratio p50=0.2"), 1)
      << output_;
  EXPECT_EQ(gate("--current " + cur + " --reference netty --max-ratio p99=0.5"), 2) << output_;
}

TEST_F(GateCli, BothModesAtOnceAndMarkdown) {
  const std::string base = write("base.jsonl", three("kairos-hybrid", 10000) + three("naive-stpe", 40000));
  const std::string cur = write("cur.jsonl", three("kairos-hybrid", 10000) + three("naive-stpe", 40000));
  const std::string md = dir_ + "/summary.md";
  EXPECT_EQ(gate("--baseline " + base + " --current " + cur +
                 " --tolerance p99=10% --reference naive-stpe --max-ratio p99=0.5 --markdown " + md),
            0)
      << output_;
  const std::string text = read(md);
  EXPECT_NE(text.find("| group | figure |"), std::string::npos) << text;
  EXPECT_NE(text.find("against reference naive-stpe"), std::string::npos) << text;
  EXPECT_NE(text.find("against baseline"), std::string::npos) << text;
}

TEST_F(GateCli, MarkdownSaysWhatFailed) {
  const std::string base = write("base.jsonl", three("kairos-hybrid", 10000));
  const std::string worse = write("worse.jsonl", three("kairos-hybrid", 20000));
  const std::string md = dir_ + "/summary.md";
  EXPECT_EQ(gate("--baseline " + base + " --current " + worse + " --tolerance p99=15% --markdown " + md), 1);
  EXPECT_NE(read(md).find("**REGRESSION**"), std::string::npos) << read(md);
  const std::string bad = write("bad.jsonl", "{\"workload\":\"W9\"}\n");
  EXPECT_EQ(gate("--baseline " + base + " --current " + bad + " --tolerance p99=15% --markdown " + md), 2);
  EXPECT_NE(read(md).find("kairos-gate: bad input:"), std::string::npos) << read(md);
  EXPECT_EQ(read(md).find("REGRESSION"), std::string::npos) << read(md);  // replaced, not appended
}

TEST_F(GateCli, EarlyFires) {
  const std::string base = write("base.jsonl", three("k", 10000));
  const std::string cur = write("cur.jsonl", line("k", 10000) + line("k", 10000) + line("k", 10000, 1));
  EXPECT_EQ(gate("--baseline " + base + " --current " + cur + " --tolerance p99=15%"), 1) << output_;
  EXPECT_EQ(gate("--baseline " + base + " --current " + cur + " --tolerance p99=15% --allow-early-fires"), 0)
      << output_;
}

TEST_F(GateCli, MinRuns) {
  const std::string base = write("base.jsonl", three("k", 10000));
  const std::string two = write("two.jsonl", line("k", 10000) + line("k", 10000));
  EXPECT_EQ(gate("--baseline " + base + " --current " + two + " --tolerance p99=15%"), 2) << output_;
  EXPECT_NE(output_.find("--min-runs"), std::string::npos) << output_;
  EXPECT_EQ(gate("--baseline " + base + " --current " + two + " --tolerance p99=15% --min-runs 2"), 0) << output_;
}

TEST_F(GateCli, BadInputExitsTwoWithAMessage) {
  const std::string base = write("base.jsonl", three("k", 10000));
  const std::string good = write("good.jsonl", three("k", 10000));
  struct Case {
    const char* what;
    std::string current;
  } cases[] = {
      {"empty", ""},
      {"malformed", "{\"workload\":\n"},
      {"unknown workload", three("k", 1).replace(13, 2, "W9")},
      {"null figure", R"({"workload":"W3","system":"k","p50":1,"p90":1,"p99":null,"p99.9":1,"p99.99":1,"max":1})" "\n"},
      {"missing figure", R"({"workload":"W3","system":"k","p50":1,"p90":1,"p99.9":1,"p99.99":1,"max":1})" "\n"},
      {"missing system", R"({"workload":"W3","p50":1,"p90":1,"p99":1,"p99.9":1,"p99.99":1,"max":1})" "\n"},
  };
  for (const Case& c : cases) {
    const std::string cur = write("cur.jsonl", c.current);
    EXPECT_EQ(gate("--baseline " + base + " --current " + cur + " --tolerance p99=15%"), 2) << c.what << "\n" << output_;
    EXPECT_NE(output_.find("kairos-gate: bad input:"), std::string::npos) << c.what << "\n" << output_;
  }
  EXPECT_EQ(gate("--baseline " + base + " --current " + dir_ + "/does-not-exist.jsonl --tolerance p99=15%"), 2);
  EXPECT_EQ(gate("--current " + good), 2) << output_;                                   // no mode
  EXPECT_EQ(gate("--baseline " + base + " --current " + good), 2) << output_;            // no tolerance
  EXPECT_EQ(gate("--baseline " + base + " --current " + good + " --tolerance p99"), 2);  // no value
  EXPECT_EQ(gate("--baseline " + base + " --current " + good + " --tolerance p99=15%% "), 2);
  EXPECT_EQ(gate("--baseline " + base + " --current " + good + " --tolerance p99=15% --workload W8"), 2);
  EXPECT_EQ(gate("--current " + good + " --max-ratio p99=0.5"), 2);  // ratio without reference
  EXPECT_EQ(gate("--no-such-flag"), 2);
  EXPECT_EQ(gate(""), 2);  // --current is required
  EXPECT_EQ(gate("--help"), 0);
  EXPECT_NE(output_.find("--tolerance"), std::string::npos);
}

TEST_F(GateCli, StandardInput) {
  const std::string base = write("base.jsonl", three("k", 10000));
  const std::string cur = write("cur.jsonl", three("k", 10000));
  EXPECT_EQ(gate("--baseline " + base + " --current - --tolerance p99=15% < " + cur), 0) << output_;
}

}  // namespace
