// kairos-gate: compares latency reports and fails on a regression.
// Exit status: 0 pass, 1 regression, 2 bad input or usage (the message says which), and for an
// inconclusive verdict the code given by --inconclusive-exit (default 3).
// A/B mode (--baseline-cmd, --candidate-cmd): runs the two commands alternately, ABBA, for
// --rounds rounds, each through /bin/sh with stdout read as runs (any input format) and stderr
// kept aside (shown when the command fails); then judges the pairs with compare_ab (gate.hpp).
#include "gate.hpp"

#include <kairos/version.hpp>

#include <CLI/CLI.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kPass = 0;
constexpr int kRegression = 1;
constexpr int kBadInput = 2;

constexpr const char* kDescription =
    "kairos-gate: judges latency reports: kairos-lat JSON Lines, kairos.latency_histogram JSON lines,\n"
    "HdrHistogram interval logs (.hlog) or Google Benchmark JSON (--benchmark_repetitions=N).\n"
    "Verdicts: pass (exit 0), regression (exit 1), inconclusive (exit --inconclusive-exit, default 3);\n"
    "bad input or usage: exit 2. Every limit needs its unit: 15% (relative), 10us (a time), 0.5x (a ratio).\n"
    "  against a baseline:  kairos-gate -b base.json -c now.json -t real_time=10%\n"
    "  against a reference: kairos-gate -c w3.jsonl --reference naive-stpe --max-ratio p99=5x\n"
    "  two builds, A/B:     kairos-gate --baseline-cmd 'old/kairos-lat -w W3 -s kairos-hybrid --quick'\n"
    "                         --candidate-cmd 'new/kairos-lat -w W3 -s kairos-hybrid --quick' --rounds 10 -t p50=10%\n"
    "                       (run alternately, ABBA; each round's two runs form one paired ratio)\n";

// Says why nothing was judged, on stderr and in the Markdown summary if one was asked for.
int bad_input(const std::string& message, const std::string& markdown_path) {
  std::cerr << "kairos-gate: " << message << '\n';
  if (!markdown_path.empty()) {
    std::ofstream md(markdown_path, std::ios::trunc);
    md << "### kairos-gate: " << message << "\n";
    if (!md) std::cerr << "kairos-gate: " << markdown_path << ": cannot be written\n";
  }
  return kBadInput;
}

// Runs `command` through /bin/sh for one side of one round and returns its standard output.
// The command sees KAIROS_GATE_SIDE (baseline, candidate) and KAIROS_GATE_ROUND (1-based). Its
// standard error goes to a temporary file, shown (its end) when the command fails: BadInput.
std::string run_side(const std::string& command, const char* side, unsigned round) {
  namespace gate = kairos::gate;
  ::setenv("KAIROS_GATE_SIDE", side, 1);
  ::setenv("KAIROS_GATE_ROUND", std::to_string(round).c_str(), 1);
  char err_path[] = "/tmp/kairos-gate-stderr-XXXXXX";
  const int fd = ::mkstemp(err_path);
  if (fd < 0) throw gate::BadInput("cannot create a temporary file for the command's stderr");
  ::close(fd);
  const std::string shell = "(\n" + command + "\n) 2> " + err_path;
  std::string out;
  int status = -1;
  if (FILE* p = ::popen(shell.c_str(), "r")) {
    char buf[65536];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    status = ::pclose(p);
  }
  std::ifstream err_file(err_path);
  std::ostringstream err;
  err << err_file.rdbuf();
  ::unlink(err_path);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string tail = err.str();
    if (tail.size() > 2000) tail = "..." + tail.substr(tail.size() - 2000);
    const std::string how = status != -1 && WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                                              : std::string("killed or not started");
    throw gate::BadInput(std::string(side) + " command failed in round " + std::to_string(round) + " (" + how +
                         "): " + command + (tail.empty() ? std::string() : "\n" + tail));
  }
  return out;
}

// The value of each judged figure in this round's first run of each side, for the progress line.
std::string round_summary(const std::vector<kairos::gate::Run>& b, const std::vector<kairos::gate::Run>& c,
                          const std::vector<std::string>& figures) {
  namespace gate = kairos::gate;
  std::string s;
  for (const std::string& f : figures) {
    auto ib = b.front().figures.find(f), ic = c.front().figures.find(f);
    if (ib == b.front().figures.end() || ic == c.front().figures.end()) continue;
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.3gx", ib->second != 0 ? ic->second / ib->second : 0.0);
    s += ", " + f + " " + gate::format_value(ib->second, gate::unit_of(f)) + " -> " +
         gate::format_value(ic->second, gate::unit_of(f)) + " (" + ratio + ")";
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "kairos-gate"};
  std::string current_path, baseline_path, markdown_path;
  std::string baseline_cmd, candidate_cmd, record_path, ab_path;
  unsigned rounds = 10;
  std::vector<std::string> tolerances, max_ratios, min_ratios, systems, workloads, ignore_config, match;
  kairos::gate::GateOptions options;
  kairos::gate::ParseOptions parse;
  int inconclusive_exit = 3;

  app.add_option("--current,-c", current_path, "Runs of this build ('-': standard input)");
  app.add_option("--baseline,-b", baseline_path, "Stored runs to compare with (same formats)");
  app.add_option("--tolerance,-t", tolerances,
                 "FIGURE=LIMIT, repeatable: how much worse than the baseline a figure may get: 15% or a time "
                 "(10us; ns, us, ms, s). FIGURE 'all' covers every time figure without its own limit");
  app.add_option("--reference,-r", options.reference, "A system measured in the same input, paired run by run");
  app.add_option("--max-ratio", max_ratios, "FIGURE=Rx, repeatable: the paired ratio of a time must stay <= R");
  app.add_option("--min-ratio", min_ratios, "FIGURE=Rx, repeatable: the paired ratio of a rate (*_per_s) must stay >= R");
  app.add_option("--min-runs", options.min_runs, "Fewest runs (baseline: per side; reference: pairs); fewer: inconclusive")
      ->default_val(5)
      ->check(CLI::Range(2u, 1000000u));
  app.add_option("--alpha", options.alpha, "Significance level of the Mann-Whitney U test (baseline mode)")
      ->default_val(0.05)
      ->check(CLI::Range(1e-6, 0.5));
  app.add_option("--inconclusive-exit", inconclusive_exit,
                 "Exit code of an inconclusive verdict (0 to let it pass, 1 to fail on it)")
      ->default_val(3)
      ->check(CLI::Range(0, 125));
  app.add_option("--system", systems, "Judge only this system (repeatable; default: all but the reference)");
  app.add_option("--workload", workloads, "Judge only this workload, any name (repeatable; default: all)");
  app.add_option("--ignore-config", ignore_config, "A config key that does not split runs into groups (repeatable)");
  app.add_option("--match", match, "A config key whose value pairs a group with its reference group (repeatable)");
  app.add_flag("--allow-early-fires", options.allow_early_fires, "Report early fires without failing on them");
  app.add_flag("--allow-machine-mismatch", options.allow_machine_mismatch,
               "Compare a baseline from another machine (reported as a note)");
  app.add_option("--input-workload", parse.workload,
                 "Workload of histograms and untagged .hlog intervals (default: the file name's stem)");
  app.add_option("--input-system", parse.system,
                 "System of histogram, .hlog and Google Benchmark runs (default: none; their groups are "
                 "named by the workload alone)");
  app.add_option("--baseline-cmd", baseline_cmd,
                 "A/B mode: shell command that measures the baseline build once and prints its runs on stdout "
                 "(e.g. 'old/kairos-lat -w W3 -s kairos-hybrid --quick --no-java')");
  app.add_option("--candidate-cmd", candidate_cmd,
                 "A/B mode: the same measurement of the candidate build; run alternately with the baseline (ABBA)");
  app.add_option("--rounds", rounds, "A/B mode: rounds; each runs both commands once and gives one paired ratio")
      ->default_val(10)
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--record", record_path, "A/B mode: also write the tagged runs (JSON Lines), to judge again with --ab");
  app.add_option("--ab", ab_path, "Judge a stored A/B record (written by --record) instead of running commands");
  app.add_option("--markdown", markdown_path,
                 "Also write the result as Markdown to this file (a CI summary); the verdict is printed and "
                 "decides the exit code even when the file cannot be written");

  app.set_version_flag("--version", std::string("kairos-gate ") + KAIROS_VERSION_STRING);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kPass : kBadInput;
  }

  namespace gate = kairos::gate;
  // Prints the table (and the Markdown summary); the verdict decides the exit code.
  const auto report = [&](const std::vector<gate::Comparison>& comparisons) {
    std::cout << gate::render_table(comparisons) << std::flush;
    if (!markdown_path.empty()) {
      std::ofstream md(markdown_path, std::ios::trunc);
      md << gate::render_markdown(comparisons);
      md.flush();
      if (!md) std::cerr << "kairos-gate: warning: " << markdown_path << ": cannot be written (verdict above)\n";
    }
    switch (gate::overall(comparisons)) {
      case gate::Verdict::regression: return kRegression;
      case gate::Verdict::inconclusive: return inconclusive_exit;
      default: return kPass;
    }
  };
  try {
    for (const std::string& t : tolerances) options.tolerances.insert(gate::parse_limit_assignment(t));
    for (const std::string& r : max_ratios) options.max_ratios.insert(gate::parse_limit_assignment(r));
    for (const std::string& r : min_ratios) options.min_ratios.insert(gate::parse_limit_assignment(r));
    options.workloads.insert(workloads.begin(), workloads.end());
    options.systems.insert(systems.begin(), systems.end());
    options.ignore_config.insert(ignore_config.begin(), ignore_config.end());
    options.match = match;

    const bool ab_mode = !baseline_cmd.empty() || !candidate_cmd.empty() || !ab_path.empty();
    if (ab_mode) {
      if (!current_path.empty() || !baseline_path.empty() || !options.reference.empty())
        throw gate::BadInput("A/B mode (--baseline-cmd/--candidate-cmd or --ab) takes no --current, --baseline or --reference");
      if (!ab_path.empty() && (!baseline_cmd.empty() || !candidate_cmd.empty()))
        throw gate::BadInput("--ab judges a stored record: no --baseline-cmd or --candidate-cmd with it");
      if (ab_path.empty() && (baseline_cmd.empty() || candidate_cmd.empty()))
        throw gate::BadInput("A/B mode needs both --baseline-cmd and --candidate-cmd");
      std::vector<std::string> figures;
      for (const auto* limits : {&options.max_ratios, &options.min_ratios, &options.tolerances})
        for (const auto& [f, l] : *limits) figures.push_back(f);
      if (figures.empty()) throw gate::BadInput("A/B mode needs a limit: --tolerance p50=10% or --max-ratio p50=1.1x");
      std::vector<gate::Run> runs;
      if (!ab_path.empty()) {
        runs = gate::read_runs(ab_path, parse);
      } else {
        gate::AbRecord record;
        const auto start = std::chrono::steady_clock::now();
        for (unsigned r = 0; r < rounds; ++r) {
          const auto round_start = std::chrono::steady_clock::now();
          std::vector<gate::Run> b, c;
          const unsigned round = r + 1;
          auto measure = [&](const std::string& cmd, const char* side) {
            return gate::parse_runs(run_side(cmd, side, round), std::string(side) + " round " + std::to_string(round), parse);
          };
          if (gate::baseline_first(r)) {
            b = measure(baseline_cmd, gate::kBaselineSide);
            c = measure(candidate_cmd, gate::kCandidateSide);
          } else {
            c = measure(candidate_cmd, gate::kCandidateSide);
            b = measure(baseline_cmd, gate::kBaselineSide);
          }
          const std::string summary = round_summary(b, c, figures);
          record.add_round(std::move(b), std::move(c));
          const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - round_start).count();
          std::fprintf(stderr, "kairos-gate: round %u of %u (%s first, %.1f s)%s\n", round, rounds,
                       gate::baseline_first(r) ? "baseline" : "candidate", secs, summary.c_str());
        }
        std::fprintf(stderr, "kairos-gate: %u rounds in %.1f s\n", rounds,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        runs = record.runs();
        if (!record_path.empty()) {
          std::ofstream out(record_path, std::ios::trunc);
          for (const gate::Run& run : runs) out << gate::run_to_json(run).dump() << '\n';
          out.flush();
          if (!out) std::cerr << "kairos-gate: warning: " << record_path << ": cannot be written\n";
        }
      }
      return report({gate::compare_ab(runs, options)});
    }
    if (!record_path.empty()) throw gate::BadInput("--record belongs to A/B mode (--baseline-cmd, --candidate-cmd)");
    if (current_path.empty()) throw gate::BadInput("--current is required (or A/B mode: --baseline-cmd, --candidate-cmd)");
    const bool baseline_mode = !baseline_path.empty();
    const bool reference_mode = !options.reference.empty();
    if (!baseline_mode && !reference_mode)
      throw gate::BadInput("nothing to compare with: give --baseline FILE, --reference SYSTEM, or both");
    if (!baseline_mode && !options.tolerances.empty()) throw gate::BadInput("--tolerance needs --baseline");
    if (!reference_mode && (!options.max_ratios.empty() || !options.min_ratios.empty()))
      throw gate::BadInput("--max-ratio and --min-ratio need --reference");
    if (options.systems.count(options.reference))
      throw gate::BadInput("--system " + options.reference + " is the reference itself");

    const std::vector<gate::Run> current = gate::read_runs(current_path, parse);
    std::vector<gate::Comparison> comparisons;
    if (baseline_mode) {
      gate::GateOptions b = options;
      if (reference_mode) b.systems.erase(options.reference);
      const std::vector<gate::Run> baseline = gate::read_runs(baseline_path, parse);
      comparisons.push_back(gate::compare_to_baseline(baseline, current, b, baseline_path));
    }
    if (reference_mode && (!options.max_ratios.empty() || !options.min_ratios.empty()))
      comparisons.push_back(gate::compare_to_reference(current, options));

    return report(comparisons);
  } catch (const gate::BadInput& e) {
    return bad_input(std::string("bad input: ") + e.what(), markdown_path);
  } catch (const std::exception& e) {
    return bad_input(std::string("error: ") + e.what(), markdown_path);
  }
}
