// kairos-gate: compares latency reports and fails on a regression.
// Exit status: 0 no regression, 1 regression, 2 bad input or usage (the message says which).
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
    "kairos-gate: compares latency reports (JSON Lines of kairos-lat, or kairos.latency_histogram JSON)\n"
    "and exits 0 (no regression), 1 (regression) or 2 (bad input).\n"
    "Runs of the same workload, system and config are repeats; each figure is their median.\n"
    "  against a baseline:  kairos-gate --baseline base.jsonl --current cur.jsonl --tolerance p99=15%\n"
    "  against a reference: kairos-gate --current cur.jsonl --reference naive-stpe --max-ratio p99=0.5\n";

// Says why nothing was judged, on stderr and in the Markdown summary if one was asked for.
int bad_input(const std::string& message, const std::string& markdown_path) {
  std::cerr << "kairos-gate: " << message << '\n';
  if (!markdown_path.empty()) std::ofstream(markdown_path, std::ios::trunc) << "### kairos-gate: " << message << "\n";
  return kBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "kairos-gate"};
  std::string current_path, baseline_path, markdown_path;
  std::vector<std::string> tolerances, max_ratios, min_ratios, systems, workloads, ignore_config, match;
  kairos::gate::GateOptions options;
  kairos::gate::ParseOptions parse;

  app.add_option("--current,-c", current_path, "Reports of this run, JSON Lines ('-': standard input)")->required();
  app.add_option("--baseline,-b", baseline_path, "Stored baseline reports, JSON Lines");
  app.add_option("--tolerance,-t", tolerances,
                 "FIGURE=LIMIT, repeatable: how much worse than the baseline a figure may get, relative "
                 "(p99=15%) or absolute (p99=2us; ns, us, ms, s). FIGURE 'all' sets the default for "
                 "p50, p90, p99, p99.9, p99.99 and max");
  app.add_option("--reference,-r", options.reference, "A system measured in the same run to compare with");
  app.add_option("--max-ratio", max_ratios,
                 "FIGURE=R, repeatable: a latency must stay at or below R times the reference's");
  app.add_option("--min-ratio", min_ratios,
                 "FIGURE=R, repeatable: a rate (a figure named *_per_s) must stay at or above R times the reference's");
  app.add_option("--min-runs", options.min_runs,
                 "Fewest runs per judged group, on each side; fewer: refuse to judge (exit 2)")
      ->default_val(3)
      ->check(CLI::Range(1u, 1000000u));
  app.add_option("--system", systems, "Judge only this system (repeatable; default: all but the reference)");
  app.add_option("--workload", workloads, "Judge only this workload, W1..W7 (repeatable; default: all)");
  app.add_option("--ignore-config", ignore_config,
                 "A config key that does not split runs into separate groups (repeatable)");
  app.add_option("--match", match,
                 "A config key whose value pairs a group with its reference group (repeatable)");
  app.add_flag("--allow-early-fires", options.allow_early_fires,
               "Report early fires without failing on them");
  app.add_option("--histogram-workload", parse.histogram_workload,
                 "Workload of histogram lines that carry no \"workload\"");
  app.add_option("--histogram-system", parse.histogram_system,
                 "System of histogram lines that carry no \"system\"");
  app.add_option("--markdown", markdown_path,
                 "Also write the table as Markdown to this file, replacing it (a CI summary); on bad "
                 "input it holds the error");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kPass : kBadInput;
  }

  namespace gate = kairos::gate;
  try {
    for (const std::string& t : tolerances) options.tolerances.insert(gate::parse_tolerance_assignment(t));
    for (const std::string& r : max_ratios) options.max_ratios.insert(gate::parse_ratio_assignment(r));
    for (const std::string& r : min_ratios) options.min_ratios.insert(gate::parse_ratio_assignment(r));
    for (const std::string& w : workloads) {
      if (!gate::is_valid_workload(w)) throw gate::BadInput("--workload " + w + ": W1..W7 are valid");
      options.workloads.insert(w);
    }
    options.systems.insert(systems.begin(), systems.end());
    options.ignore_config.insert(ignore_config.begin(), ignore_config.end());
    options.match = match;

    const bool baseline_mode = !baseline_path.empty();
    const bool reference_mode = !options.reference.empty();
    if (!baseline_mode && !reference_mode)
      throw gate::BadInput("nothing to compare with: give --baseline FILE, --reference SYSTEM, or both");
    if (!baseline_mode && !options.tolerances.empty())
      throw gate::BadInput("--tolerance needs --baseline");
    if (!reference_mode && (!options.max_ratios.empty() || !options.min_ratios.empty()))
      throw gate::BadInput("--max-ratio and --min-ratio need --reference");
    if (options.systems.count(options.reference))
      throw gate::BadInput("--system " + options.reference + " is the reference itself");

    const std::vector<gate::Run> current = gate::read_runs(current_path, parse);
    std::vector<gate::Comparison> comparisons;
    if (baseline_mode) {
      const std::vector<gate::Run> baseline = gate::read_runs(baseline_path, parse);
      comparisons.push_back(gate::compare_to_baseline(baseline, current, options, baseline_path));
    }
    if (reference_mode) comparisons.push_back(gate::compare_to_reference(current, options));

    std::size_t judged = 0, regressions = 0;
    for (const gate::Comparison& c : comparisons) {
      judged += c.judged();
      regressions += c.regressions();
    }
    std::cout << gate::render_table(comparisons);
    if (!markdown_path.empty()) {
      std::ofstream md(markdown_path, std::ios::trunc);
      md << gate::render_markdown(comparisons);
      if (!md) throw gate::BadInput(markdown_path + ": cannot be written");
    }
    if (judged == 0) throw gate::BadInput("no figure was judged: check --tolerance, --max-ratio and the filters");
    return regressions ? kRegression : kPass;
  } catch (const gate::BadInput& e) {
    return bad_input(std::string("bad input: ") + e.what(), markdown_path);
  } catch (const std::exception& e) {
    return bad_input(std::string("error: ") + e.what(), markdown_path);
  }
}
