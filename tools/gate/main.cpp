// kairos-gate: compares latency reports and fails on a regression.
// Exit status: 0 pass, 1 regression, 2 bad input or usage (the message says which), and for an
// inconclusive verdict the code given by --inconclusive-exit (default 3).
#include "gate.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
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
    "  against a reference: kairos-gate -c w3.jsonl --reference naive-stpe --max-ratio p99=5x\n";

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "kairos-gate"};
  std::string current_path, baseline_path, markdown_path;
  std::vector<std::string> tolerances, max_ratios, min_ratios, systems, workloads, ignore_config, match;
  kairos::gate::GateOptions options;
  kairos::gate::ParseOptions parse;
  int inconclusive_exit = 3;

  app.add_option("--current,-c", current_path, "Runs of this build ('-': standard input)")->required();
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
                 "System of histogram, .hlog and Google Benchmark runs (default: \"current\")");
  app.add_option("--markdown", markdown_path,
                 "Also write the result as Markdown to this file (a CI summary); the verdict is printed and "
                 "decides the exit code even when the file cannot be written");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kPass : kBadInput;
  }

  namespace gate = kairos::gate;
  try {
    for (const std::string& t : tolerances) options.tolerances.insert(gate::parse_limit_assignment(t));
    for (const std::string& r : max_ratios) options.max_ratios.insert(gate::parse_limit_assignment(r));
    for (const std::string& r : min_ratios) options.min_ratios.insert(gate::parse_limit_assignment(r));
    options.workloads.insert(workloads.begin(), workloads.end());
    options.systems.insert(systems.begin(), systems.end());
    options.ignore_config.insert(ignore_config.begin(), ignore_config.end());
    options.match = match;

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
  } catch (const gate::BadInput& e) {
    return bad_input(std::string("bad input: ") + e.what(), markdown_path);
  } catch (const std::exception& e) {
    return bad_input(std::string("error: ") + e.what(), markdown_path);
  }
}
