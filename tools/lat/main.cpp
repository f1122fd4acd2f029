// kairos-lat: runs the standard workloads W1..W8 (docs/workloads.md) on kairos and its peers, one
// system at a time in this process, and prints one JSON object per run (JSON Lines) plus a table.
// Exit status: 0 every run done and (with --check) every rule kept; 1 a run failed or a rule was
// broken; 2 bad usage or bad input (an unknown option, a nonsensical value, a --from file that is
// not kairos-lat's JSON lines).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <json_input.hpp>
#include <record_model.hpp>

#include "java_harness.hpp"
#include "subprocess.hpp"
#include "machine.hpp"
#include "native_runs.hpp"
#include "plan.hpp"
#include "records.hpp"
#include "report.hpp"
#include "spectrum.hpp"
#include "svg_plot.hpp"


namespace {

using json = nlohmann::ordered_json;
using namespace kairos;
using namespace kairos::lat;

const char* kWorkloadHelp = R"(Workloads (docs/workloads.md; every system runs the same shape, one system at a time):
  W1 submit           P producers (1 and 2) each schedule 1,000,000 no-op tasks with a 1 h delay
                      (they never fire): submits/s from a start barrier to the last producer's end,
                      and the per-call latency of one call at a random position in each block of 64.
  W2 timeout-churn    one producer, 1,000,000 times: schedule task i with a 10 s delay, cancel task
                      i-1024 (remove-on-cancel on): pairs/s, pending count at the end (must be 1024).
  W2b timeout-churn-two-class  (not in the default set) W2 with two delay classes: even i 100 ms,
                      odd i 10 s, interleaved; sized by --w2-iterations; kairos, naive-stpe, asio.
  W3 lateness         one producer, open loop, one submission every 50 us by the clock, 200,000
                      timers with delays uniform in [100 us, 10 ms] (fixed seed): lateness
                      percentiles p50..max and early fires. kernel-nanosleep is the floor: the same
                      delays slept by a pool of threads in clock_nanosleep with 1 ns timer slack.
  W4 periodic         16 fixed-rate tasks, period 1 ms, initial delay 1 ms, for 5 s: lateness of run n
                      against t0 + 1 ms + n ms, and runs per task (must be 5000).
  W5 scale            1,000,000 and 10,000,000 timers with delays in [1 h, 2 h] from one thread:
                      inserts/s, resident bytes per pending timer, then cancels/s of all of them.
  W6 fire-throughput  one producer submits 1,000,000 zero-delay tasks: tasks run per second from
                      the first submit to the last task's start.
  W7 fifo-burst       100,000 tasks with one absolute deadline 20 ms ahead: inversions of submission
                      order among their starts (must be 0 with one worker), deadline to last start.
  W8 heartbeat        (not in the default set) 10,000 sessions, 1,000,000 messages/s open loop, each
                      moving its session's 100 ms timeout; one session goes quiet every 100 ms and must
                      time out: kairos re-arms (schedule_rearmable + rearm), peers cancel + schedule
                      (--w8-lazy: the Java peers as Netty's IdleStateHandler, a stored time and a
                      timeout that re-schedules itself). Re-arms/s, cost per re-arm, wrong or missed
                      timeouts, lateness, memory growth.
  W9 loop-wakeup      (not in the default set) one thread submits 5,000 timeouts at random gaps (mean
                      1 ms) with delays uniform in [100 us, 20 ms] into a loop that sleeps when idle:
                      lateness, and for kairos-loop the wakes per submission.
Lateness = start - (t0 + delay), t0 = steady_clock now just before the schedule call; negative is an
early fire. Task bodies only store their start time into a preallocated slot. Percentiles are exact.

Systems:
  kairos-sleep, kairos-hybrid, kairos-spin   kairos wait policies; --shards, --threads, --pin apply
  kairos-adaptive   WaitPolicy::adaptive() (a self-tuned spin window), as the three above
  kairos-fitted     WaitPolicy::fitted(), the default Options::wait (adaptive from a 50 us floor);
                    not in the default set: name it with -s
  kairos-poll       W2, W6 only: poll mode, the workload's thread is the loop (polls every 64 calls)
  naive-stpe        one mutex, binary heap with indices, condition variable, leader/follower threads
  asio              Boost.Asio steady_timer on one io_context thread
  kairos-loop       W9 only: poll mode on an epoll loop thread (timerfd at next_deadline(), the wake fd)
  kairos-loop-nowake W9 only: the same loop without the wake fd (sleeps until the deadline it read)
  asio-inline       W2, W6 only: Boost.Asio timers on an io_context the workload's thread polls
  java-stpe-1, java-stpe-2, netty-wheel      Java's ScheduledThreadPoolExecutor (1, 2 threads) and
                    Netty's HashedWheelTimer, via perf/peers/java/LatHarness.java when javac exists
  kernel-nanosleep  W3 only: the kernel's own wake-up latency for the same delays
Timer slack is set to 1 ns at start; every scheduler thread (and the JVM) inherits it.

Examples:
  kairos-lat --quick --table                       all workloads, small sizes, a table
  kairos-lat -w W3,W4 --repeat 3 --svg plots       lateness, 3 runs each, SVG charts in plots/
  kairos-lat --demo                                about a minute: W3 and W1, kairos-hybrid vs naive-stpe
  kairos-lat -w W1,W2 -s kairos-hybrid,naive-stpe --warm-and-fresh --repeat 3
                                                   fresh and warmed-up runs side by side
  kairos-lat --from runs.jsonl --markdown          tables (medians, ratios) from saved JSON lines
  kairos-lat --from paced.hlog --svg plots         a percentile spectrum chart of any .hlog, .hgrm or
                                                   latency histogram JSON
  kairos-lat --from before.jsonl --from after.jsonl --svg plots --log-y
                                                   two runs' spectra overlaid, one chart per workload,
                                                   latency on a log scale)";

const std::vector<std::string> kAllSystems = {"kairos-sleep", "kairos-hybrid", "kairos-spin", "kairos-adaptive", "kairos-poll", "kairos-loop", "kairos-loop-nowake",
                                              "naive-stpe", "asio", "asio-inline", "java-stpe-1", "java-stpe-2", "netty-wheel", "kernel-nanosleep"};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A progress line on stderr for runs longer than a couple of seconds, at most once a second.
class ProgressLine {
 public:
  explicit ProgressLine(std::string label) : label_(std::move(label)), tty_(isatty(2)) {}
  ~ProgressLine() {
    if (printed_ && tty_) std::fprintf(stderr, "\r\033[K");
  }
  void operator()(std::uint64_t done, std::uint64_t total) {
    double s = seconds_since(start_);
    if (s < 2.0 || s - last_ < (tty_ ? 1.0 : 5.0)) return;
    last_ = s;
    printed_ = true;
    double pct = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 0.0;
    std::fprintf(stderr, tty_ ? "\r\033[K  %s: %.0f%% (%.0f s)" : "  %s: %.0f%% (%.0f s)\n", label_.c_str(), pct, s);
    std::fflush(stderr);
  }

 private:
  std::string label_;
  bool tty_;
  bool printed_ = false;
  double last_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The Java harness travels with the program: <dir of kairos-lat>/java in a build tree (copied
// there at build time), <prefix>/share/kairos/java once installed. No path of the build machine.
std::string default_java_dir() {
  std::filesystem::path exe = self_exe();
  if (exe.empty()) return "java";
  std::filesystem::path dir = exe.parent_path();
  std::error_code ec;
  if (std::filesystem::exists(dir / "java" / "LatHarness.java", ec)) return (dir / "java").string();
  return (dir.parent_path() / "share" / "kairos" / "java").string();
}

struct Cli {
  std::string workloads = records::default_workloads();  // "W1,...,W7": the workload table's default set
  std::string systems;
  std::vector<unsigned> shards{1};
  unsigned threads = 1;
  double spin_window_us = 50;
  double adaptive_percentile = 0;  // 0: WaitPolicy::kAdaptivePercentile
  bool pin = false;
  std::vector<int> cpus;
  int producer_cpu = 0;
  unsigned repeat = 1;
  bool quick = false, table = false, markdown = false, demo = false;
  std::string out, svg;
  std::vector<std::string> from;  // --from, repeatable: their charts overlaid
  bool log_y = false;
  std::string java_dir = default_java_dir(), netty_jar = "/usr/share/java/netty-common.jar", java_heap = "8g";
  bool no_java_warmup = false, no_java = false;
  bool warm = false, warm_and_fresh = false;  // native systems: a warm-up pass before each run
  bool no_lateness = false;  // kairos systems: Options::record_lateness = false
  double far_timer_slack_us = -1;  // kairos systems: Options::far_timer_slack (< 0: its default)
  bool child = false;  // run exactly one (workload, system, sizes) and print its record
  bool check = false;
  std::vector<unsigned> w1_producers;
  std::size_t w1_calls = 0, w2_iterations = 0, w3_count = 0, w6_tasks = 0, w7_tasks = 0, w9_count = 0;
  double w8_seconds = 0;
  bool w8_no_rearm = false;
  bool w1_post = false;   // W1: the system's delayed call with no handle (kairos: execute_after)
  bool w8_lazy = false;
  double w4_seconds = 0;
  std::vector<std::size_t> w5_timers;
};

// Bad usage or bad input: exit status 2, like CLI11's own parse errors.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

SystemSpec make_spec(const std::string& name, const Cli& cli, unsigned shards, const WorkloadSizes& z) {
  SystemSpec s{Kind::kairos, {}, name};
  perf::SystemConfig& c = s.config;
  c.system = name;
  c.spin_window_ns = static_cast<std::int64_t>(cli.spin_window_us * 1000.0);
  c.adaptive_percentile = cli.adaptive_percentile;
  bool native = true;
  if (name == "kairos-sleep" || name == "kairos-hybrid" || name == "kairos-spin" || name == "kairos-adaptive" ||
      name == "kairos-fitted") {
    c.wait = name.substr(7);
    c.shards = shards;
    c.threads = cli.threads;
    c.record_lateness = !cli.no_lateness;
    if (cli.far_timer_slack_us >= 0) c.far_timer_slack_ns = static_cast<std::int64_t>(cli.far_timer_slack_us * 1000.0);
  } else if (name == "kairos-poll") {
    s.kind = Kind::kairos_poll;
    c.wait = "inline";
    c.threads = 0;
  } else if (name == "kairos-loop" || name == "kairos-loop-nowake") {
    s.kind = Kind::kairos_loop;
    c.wait = name == "kairos-loop" ? "wake-fd" : "timerfd";
  } else if (name == "asio-inline") {
    s.kind = Kind::asio_inline;
    c.wait = "inline";
    c.threads = 0;
  } else if (name == "naive-stpe") {
    s.kind = Kind::naive_stpe;
    c.wait = "condvar";
    c.threads = cli.threads;
  } else if (name == "asio") {
    s.kind = Kind::asio;
    c.wait = "epoll";
  } else if (name == "java-stpe-1" || name == "java-stpe-2" || name == "netty-wheel") {
    s.kind = Kind::java;
    native = false;
  } else if (name == "kernel-nanosleep") {
    s.kind = Kind::kernel;
    c.wait = "clock_nanosleep";
    c.threads = z.w3.kernel_threads;
    native = false;
  } else {
    throw UsageError("kairos-lat: --systems: unknown system '" + name + "'");
  }
  if (cli.pin && native) {
    unsigned n = c.shards * c.threads;
    c.cpus = !cli.cpus.empty() ? cli.cpus : (n == 1 ? std::vector<int>{1} : std::vector<int>{1, 0});
    c.producer_cpu = cli.producer_cpu;
  }
  s.warm = cli.warm && native;
  if (s.kind != Kind::java) {
    json rec;
    rec["system"] = name;
    rec["config"] = config_json(s);
    s.label = row_label(rec);
  }
  return s;
}

WorkloadSizes sizes_from(const Cli& cli) {
  WorkloadSizes z;
  if (cli.quick) {
    z.w1.calls_per_producer = 100'000;
    z.w2.iterations = 100'000;
    z.w3.count = 20'000;
    z.w4.duration_ns = 1'000'000'000;
    z.w5_timers = {100'000};
    z.w6.tasks = 100'000;
    z.w7.tasks = 20'000;
    z.w8.duration_ns = 1'000'000'000;
    z.w9.count = 1'000;
  }
  if (!cli.w1_producers.empty()) z.w1_producers = cli.w1_producers;
  if (cli.w1_calls) z.w1.calls_per_producer = cli.w1_calls;
  if (cli.w2_iterations) z.w2.iterations = cli.w2_iterations;
  if (cli.w3_count) z.w3.count = cli.w3_count;
  if (cli.w4_seconds > 0) z.w4.duration_ns = static_cast<std::int64_t>(cli.w4_seconds * 1e9);
  if (!cli.w5_timers.empty()) z.w5_timers = cli.w5_timers;
  if (cli.w6_tasks) z.w6.tasks = cli.w6_tasks;
  if (cli.w7_tasks) z.w7.tasks = cli.w7_tasks;
  if (cli.w9_count) z.w9.count = cli.w9_count;
  z.w8_rearm = !cli.w8_no_rearm;
  z.w1.post = cli.w1_post;
  z.w8_lazy = cli.w8_lazy;
  if (cli.w8_seconds > 0) z.w8.duration_ns = static_cast<std::int64_t>(cli.w8_seconds * 1e9);
  return z;
}

// The text of a --from file, at most json_input.hpp's kMaxInputBytes.
std::string read_input(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError("kairos-lat: cannot read " + path);
  try {
    return tools::read_bounded(f);
  } catch (const std::invalid_argument& e) {
    throw UsageError("kairos-lat: " + path + ": " + e.what());
  }
}

// The records of a file kairos-lat wrote (records.hpp checks each field the report reads);
// anything else is bad input (UsageError), named by its line.
std::vector<json> read_records(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  try {
    return lat::read_records(in, path);
  } catch (const RecordError& e) {
    throw UsageError(std::string("kairos-lat: ") + e.what());
  }
}

// --svg DIR: created (with its parents) and probed with a file before anything runs, so an
// unwritable directory is a usage error (exit 2) at the start, not a lost chart at the end.
void prepare_svg_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path probe = std::filesystem::path(dir) / ".kairos-lat-write-test";
  bool ok = !ec && static_cast<bool>(std::ofstream(probe));
  std::filesystem::remove(probe, ec);
  if (!ok) throw UsageError("kairos-lat: --svg " + dir + ": cannot write into this directory");
}

void write_spectrum_svgs(const std::string& dir, const std::vector<SpectrumChart>& charts, const SpectrumStyle& style) {
  prepare_svg_dir(dir);
  for (const SpectrumChart& chart : charts) {
    const std::string path = (std::filesystem::path(dir) / (chart.name + ".svg")).string();
    std::ofstream f(path);
    if (!(f << spectrum_svg(chart, style)) || !f.flush()) throw UsageError("kairos-lat: cannot write " + path);
    std::fprintf(stderr, "kairos-lat: wrote %s\n", std::filesystem::absolute(path).c_str());
  }
}

// The charts of `groups` into dir; a chart that cannot be written is a UsageError (exit 2).
void write_svgs(const std::string& dir, const std::vector<RunGroup>& groups, const json& machine) {
  prepare_svg_dir(dir);
  auto text = [&](const char* key) {
    return machine.contains(key) && machine[key].is_string() ? machine[key].get<std::string>() : std::string("?");
  };
  std::string sub = text("cpu") + ", " + (machine.contains("nproc") ? machine["nproc"].dump() : std::string("?")) +
                    " CPUs, Linux " + text("kernel") + "; median of the runs";
  for (const records::Workload& w : records::kWorkloads) {
    if (w.lateness_chart.empty()) continue;  // W3 and W4
    const std::string id(w.id);
    auto series = lateness_series(groups, id);
    if (series.empty()) continue;
    std::string file = id + "_lateness.svg";
    file[0] = 'w';  // w3_lateness.svg
    std::string path = (std::filesystem::path(dir) / file).string();
    std::string title = id + " " + std::string(w.lateness_chart);
    if (!write_lateness_svg(path, title, sub, series)) throw UsageError("kairos-lat: cannot write " + path);
    std::fprintf(stderr, "kairos-lat: wrote %s\n", std::filesystem::absolute(path).c_str());
  }
}

// The host a record names (machine.host), in one line; older records did not measure it.
std::string recorded_host(const json& rec) {
  if (!rec.contains("machine") || !rec["machine"].is_object() || !rec["machine"].contains("host") ||
      !rec["machine"]["host"].is_object())
    return "not recorded (a record older than the host fingerprint)";
  return host_line(rec["machine"]["host"]);
}

// Records read back (--from) whose hosts are not one: a handoff (machine.host.handoff_ns, or the
// one measured after a run, handoff_after_ns) that is another host's than the first record's.
// Empty when they agree, or when the records did not measure it.
std::string mixed_hosts(const std::vector<json>& records) {
  auto handoff = [](const json& r, const char* key) -> std::optional<std::int64_t> {
    if (!r.contains("machine") || !r["machine"].is_object() || !r["machine"].contains("host")) return std::nullopt;
    const json& h = r["machine"]["host"];
    if (!h.is_object() || !h.contains(key) || !h[key].is_number_integer()) return std::nullopt;
    return h[key].get<std::int64_t>();
  };
  std::optional<std::int64_t> first;
  std::size_t other = 0;
  for (const json& r : records)
    for (const char* key : {"handoff_ns", "handoff_after_ns"}) {
      const auto h = handoff(r, key);
      if (!h) continue;
      if (!first) first = h;
      else if (!handoffs_agree(*first, *h)) ++other;
    }
  if (other == 0) return {};
  return std::to_string(other) + " handoff measurement(s) of these records are another host's than the first (" +
         std::to_string(*first) + " ns): the records mix hosts";
}

// The rules of docs/workloads.md that no measurement noise excuses; returns the broken ones.
std::vector<std::string> broken_rules(const json& rec) {
  std::vector<std::string> out;
  std::string who = rec.value("workload", "?") + " on " + row_label(rec);
  auto num = [&](const char* k) { return rec.contains(k) && rec[k].is_number() ? rec[k].get<double>() : 0.0; };
  if (num("early_fires") > 0) out.push_back(who + ": " + rec["early_fires"].dump() + " early fires");
  if (num("missing") > 0) out.push_back(who + ": " + rec["missing"].dump() + " tasks never ran");
  if (num("missed") > 0) out.push_back(who + ": " + rec["missed"].dump() + " quiet sessions never timed out");
  if (num("wrong_fires") > 0) out.push_back(who + ": " + rec["wrong_fires"].dump() + " timeouts of live sessions");
  if (num("iterations_per_wake") > 2)  // W9: the loop came round on a wake fd nobody read back
    out.push_back(who + ": " + rec["iterations_per_wake"].dump() + " loop iterations per wake");
  if ((rec.value("workload", "") == "W2" || rec.value("workload", "") == "W2b") && rec.contains("parameters") &&
      num("pending_at_end") != rec["parameters"].value("window", 1024.0))
    out.push_back(who + ": pending at end " + rec["pending_at_end"].dump() + ", not the window");
  const json& c = rec.contains("config") ? rec["config"] : json::object();
  std::string sys = rec.value("system", "");
  bool promises_fifo = sys.rfind("kairos-", 0) == 0 || sys == "naive-stpe";  // (deadline, seq) order
  if (rec.value("workload", "") == "W7" && promises_fifo &&
      c.value("threads_per_shard", c.value("threads", 1)) == 1 &&
      num("inversions") > 0)
    out.push_back(who + ": " + rec["inversions"].dump() + " inversions with one worker");
  return out;
}

// The command line that runs one native (workload, system, sizes) in a fresh kairos-lat process.
std::vector<std::string> child_command(const SystemSpec& s, const std::string& w, const WorkloadSizes& z,
                                       const Cli& cli) {
  auto str = [](auto v) { return std::to_string(v); };
  char window[32], seconds[32];
  std::snprintf(window, sizeof window, "%.9g", cli.spin_window_us);
  std::snprintf(seconds, sizeof seconds, "%.9g", static_cast<double>(z.w4.duration_ns) * 1e-9);
  std::vector<std::string> a = {self_exe(), "--child", "-w", w, "-s", s.config.system,
                                "--shards", str(s.config.shards), "--threads", str(cli.threads),
                                "--spin-window-us", window};
  if (cli.adaptive_percentile > 0) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.9g", cli.adaptive_percentile);
    a.insert(a.end(), {"--adaptive-percentile", pct});
  }
  if (s.warm) a.push_back("--warm");
  if (!s.config.record_lateness) a.push_back("--no-lateness");
  if (s.config.far_timer_slack_ns >= 0) {
    char slack[32];
    std::snprintf(slack, sizeof slack, "%.9g", static_cast<double>(s.config.far_timer_slack_ns) / 1000.0);
    a.insert(a.end(), {"--far-timer-slack-us", slack});
  }
  if (!s.config.cpus.empty()) {
    std::string cpus;
    for (int c : s.config.cpus) cpus += (cpus.empty() ? "" : ",") + str(c);
    a.insert(a.end(), {"--pin", "--cpus", cpus, "--producer-cpu", str(s.config.producer_cpu)});
  }
  a.insert(a.end(), {"--w1-producers", str(z.w1.producers), "--w1-calls", str(z.w1.calls_per_producer),
                     "--w2-iterations", str(z.w2.iterations), "--w3-count", str(z.w3.count),
                     "--w4-seconds", seconds, "--w5-timers", str(z.w5.timers), "--w6-tasks", str(z.w6.tasks),
                     "--w7-tasks", str(z.w7.tasks)});
  char w8s[32];
  std::snprintf(w8s, sizeof w8s, "%.9g", static_cast<double>(z.w8.duration_ns) * 1e-9);
  a.insert(a.end(), {"--w8-seconds", w8s});
  if (!z.w8_rearm) a.push_back("--w8-no-rearm");
  if (z.w1.post) a.push_back("--w1-post");
  a.insert(a.end(), {"--w9-count", str(z.w9.count)});
  return a;
}

std::optional<json> run_in_child(const SystemSpec& s, const std::string& w, const WorkloadSizes& z,
                                 const Cli& cli) {
  int status = 0;
  std::string out = run_capture(child_command(s, w, z, cli), status);
  std::optional<json> rec;
  std::stringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{') rec = json::parse(line);
  if (status != 0 || !rec) {
    std::fprintf(stderr, "kairos-lat: %s %s failed (exit %d)\n", s.config.system.c_str(), w.c_str(), status);
    return std::nullopt;
  }
  return rec;
}

}  // namespace

// CLI11's PositiveNumber prints its range as a 310-digit number; this says it plainly.
const CLI::Validator kPositive(
    [](std::string& text) {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      return !text.empty() && *end == '\0' && v > 0 ? std::string() : "must be greater than 0, got " + text;
    },
    "> 0");
const CLI::Validator kNonNegative(
    [](std::string& text) {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      return !text.empty() && *end == '\0' && v >= 0 ? std::string() : "must be 0 or more, got " + text;
    },
    ">= 0");

namespace {

// ---- the command line -------------------------------------------------------------------------

void add_options(CLI::App& app, Cli& cli) {
  app.footer(kWorkloadHelp);
  app.add_option("-w,--workloads", cli.workloads, "comma-separated workload ids")->capture_default_str();
  app.add_option("-s,--systems", cli.systems, "comma-separated systems (default: all of them)");
  app.add_option("--shards", cli.shards, "kairos shard counts, each run as its own configuration")
      ->delimiter(',')->capture_default_str()->check(CLI::Range(1u, 64u));
  app.add_option("--threads", cli.threads, "threads per kairos shard; naive-stpe workers")->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--adaptive-percentile", cli.adaptive_percentile,
                 "kairos-adaptive: the wake-overshoot percentile its window follows (default: WaitPolicy's)")
      ->check(CLI::Validator(
          [](std::string& v) {
            double p = 0;
            try {
              p = std::stod(v);
            } catch (...) {
            }
            return p > 0 && p < 1 ? std::string() : "must be in (0, 1), got " + v;
          },
          "in (0, 1)"));
  app.add_option("--spin-window-us", cli.spin_window_us, "kairos-hybrid spin window")->capture_default_str()
      ->check(kNonNegative);
  app.add_flag("--pin", cli.pin, "pin scheduler threads (kairos, naive-stpe, asio) and the producer");
  app.add_option("--cpus", cli.cpus, "CPUs of the pinned scheduler threads (default 1, or 1,0)")->delimiter(',');
  app.add_option("--producer-cpu", cli.producer_cpu, "CPU of the pinned producer")->capture_default_str();
  app.add_option("--repeat", cli.repeat, "runs of each (workload, system)")->capture_default_str()
      ->check(CLI::Range(1u, 1000u));
  app.add_flag("--quick", cli.quick, "small sizes, for CI (W3 20,000 timers, W4 1 s, W5 100,000 timers, ...)");
  app.add_flag("--table", cli.table, "the table on stdout (JSON lines then go only to --out)");
  app.add_flag("--markdown", cli.markdown, "tables in Markdown, with kairos/peer ratios");
  app.add_option("--out", cli.out, "also append the JSON lines to this file");
  app.add_option("--svg", cli.svg,
                 "write SVG charts into this directory: W3/W4 lateness percentiles, and a percentile "
                 "spectrum (log scale of 1/(1-p)) of every workload whose records carry histograms");
  app.add_flag("--demo", cli.demo, "about a minute: W3 and W1 on kairos-hybrid and naive-stpe, table, SVG");
  app.add_option("--from", cli.from,
                 "do not run: tabulate kairos-lat's JSON lines of this file (and chart them with --svg), or "
                 "draw the percentile spectrum (--svg DIR) of a latency histogram JSON, .hlog or .hgrm file; "
                 "repeat it to overlay several runs: one spectrum chart per workload (and one for all the "
                 "distributions), each line named after its file, a table per file")
      ->allow_extra_args(false);  // one file per --from
  app.add_flag("--log-y", cli.log_y, "percentile spectrum charts with the latency on a log scale (decades)");
  app.add_option("--java-dir", cli.java_dir, "where LatHarness.java is")->capture_default_str();
  app.add_option("--netty-jar", cli.netty_jar, "Netty's common jar")->capture_default_str();
  app.add_option("--java-heap", cli.java_heap, "the JVM's -Xmx")->capture_default_str();
  app.add_flag("--no-java-warmup", cli.no_java_warmup, "skip the JIT warm-up pass before each Java run");
  app.add_flag("--no-java", cli.no_java, "skip java-stpe-1, java-stpe-2 and netty-wheel");
  app.add_flag("--warm", cli.warm,
               "before each measured run, the same workload on another system of the same kind in the "
               "same process, then destroyed: the steady state of a long-running process (\"warm\" in "
               "the config and the row label; kernel-nanosleep repeats its own pass; the Java runs "
               "always have their JIT warm-up pass, see --no-java-warmup)");
  app.add_flag("--warm-and-fresh", cli.warm_and_fresh,
               "run every native system both ways, fresh and with --warm's warm-up pass, as two rows");
  app.add_option("--far-timer-slack-us", cli.far_timer_slack_us,
                 "kairos-sleep/-hybrid/-spin/-adaptive/-fitted with this Options::far_timer_slack (0: no far "
                 "timers, every deadline the caller's clock read; default: the Options default, 1000 us): "
                 "\"far_timer_slack_ns\" in the config and \"far=<us>us\" in the row label")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-lateness", cli.no_lateness,
               "kairos-sleep/-hybrid/-spin/-adaptive with Options::record_lateness off (no start stamp per "
               "task, no lateness histogram in stats()): what that statistic costs (\"no-lateness\" in the "
               "config and the row label; peers and the other kairos systems are unchanged)");
  // Sizes are counts of at least one: a 0 (or a negative) is an error, never "the default".
  app.add_option("--w1-producers", cli.w1_producers, "W1 producer counts (default 1,2)")->delimiter(',')
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--w1-calls", cli.w1_calls, "W1 calls per producer (default 1,000,000)")->check(kPositive);
  app.add_option("--w2-iterations", cli.w2_iterations, "W2 iterations (default 1,000,000)")->check(kPositive);
  app.add_option("--w3-count", cli.w3_count, "W3 timers (default 200,000)")->check(kPositive);
  app.add_option("--w4-seconds", cli.w4_seconds, "W4 duration (default 5)")->check(kPositive);
  app.add_option("--w5-timers", cli.w5_timers, "W5 timer counts (default 1000000,10000000)")->delimiter(',')
      ->check(kPositive);
  app.add_option("--w6-tasks", cli.w6_tasks, "W6 tasks (default 1,000,000)")->check(kPositive);
  app.add_option("--w7-tasks", cli.w7_tasks, "W7 tasks (default 100,000)")->check(kPositive);
  app.add_option("--w8-seconds", cli.w8_seconds, "W8 duration (default 10)")->check(kPositive);
  app.add_option("--w9-count", cli.w9_count, "W9 timeouts submitted (default 5,000)")->check(kPositive);
  app.add_flag("--w1-post", cli.w1_post,
               "W1 with the system's delayed call that returns no handle where it has one (kairos: execute_after); "
               "a system without one (naive-stpe, Java's class) still calls schedule, as its users would");
  app.add_flag("--w8-no-rearm", cli.w8_no_rearm, "W8 on kairos with cancel + schedule instead of rearm (the peers' way)");
  app.add_flag("--w8-lazy", cli.w8_lazy,
               "W8 on the Java peers the way Netty's IdleStateHandler does it: a message stores its time, "
               "the timeout re-schedules itself for the rest of the window (default: cancel + schedule)");
  app.add_flag("--check", cli.check,
               "exit 1 if a run breaks a rule that holds for every correct scheduler: an early fire, "
               "a task that never ran, W2 or W2b pending != 1024, W7 inversions with one worker (kairos, "
               "naive-stpe: the schedulers that order equal deadlines by submission)");
  app.add_flag("--child", cli.child, "internal: one run in this process, its record on stdout")->group("");
}

// ---- the four modes: --from, --demo, --child, and a run ---------------------------------------

// --from FILE...: kairos-lat's records as tables (and charts with --svg), or the percentile
// spectrum chart of a distribution (a latency histogram JSON, .hlog or .hgrm). Several files: a
// table per file of records, and the charts overlaid (spectrum.hpp's overlay_charts; the W3/W4
// lateness charts get a line per file and configuration), each line named after its file.
int tabulate_from(const Cli& cli, const json& machine) {
  const bool overlay = cli.from.size() > 1;
  const std::vector<std::string> names = input_names(cli.from);
  std::vector<OverlayInput> inputs;
  std::vector<RunGroup> all_groups;
  json records_machine = machine;
  bool any_records = false;
  for (std::size_t k = 0; k < cli.from.size(); ++k) {
    const std::string& path = cli.from[k];
    const std::string text = read_input(path);
    OverlayInput input{names[k], false, {}};
    InputKind kind = InputKind::records;
    try {
      kind = detect_input_kind(text, path);
      if (kind != InputKind::records) input.charts = spectrum_charts(text, path);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("kairos-lat: ") + e.what());  // names the file and line
    }
    if (kind != InputKind::records) {  // a distribution: its chart is the output
      if (cli.svg.empty())
        throw UsageError("kairos-lat: --from " + path + " is " + input_kind_name(kind) +
                         ", drawn as a percentile spectrum chart: give --svg DIR");
      inputs.push_back(std::move(input));
      continue;
    }
    const std::vector<json> records = read_records(text, path);
    auto groups = group_runs(records);
    if (overlay) std::cout << (cli.markdown ? "## " : "== ") << path << "\n";
    std::cout << "host: " << recorded_host(records.front()) << "\n";
    if (const std::string mixed = mixed_hosts(records); !mixed.empty()) {
      std::cout << "WARNING: " << mixed << "\n";
      std::fprintf(stderr, "kairos-lat: --from %s: %s\n", path.c_str(), mixed.c_str());
    }
    print_tables(std::cout, groups, cli.markdown);
    if (!any_records && records.front().contains("machine")) records_machine = records.front()["machine"];
    any_records = true;
    input.records = true;
    try {
      input.charts = spectrum_charts(records);
    } catch (const std::invalid_argument& e) {
      throw UsageError("kairos-lat: --from " + path + ": " + e.what());
    }
    for (RunGroup& g : groups) {
      if (overlay) g.label = names[k] + ": " + g.label;
      all_groups.push_back(std::move(g));
    }
    inputs.push_back(std::move(input));
  }
  if (cli.svg.empty()) return 0;
  if (any_records) write_svgs(cli.svg, all_groups, records_machine);
  std::vector<SpectrumChart> charts;
  if (overlay) {
    try {
      charts = overlay_charts(inputs);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("kairos-lat: ") + e.what());  // more lines than a chart takes
    }
  } else {
    charts = std::move(inputs.front().charts);
  }
  write_spectrum_svgs(cli.svg, charts, SpectrumStyle{cli.log_y});
  return 0;
}

// --demo: about a minute, W3 and W1 on kairos-hybrid and naive-stpe, a table and SVG charts.
void apply_demo(Cli& cli) {
  cli.workloads = "W3,W1";
  if (cli.systems.empty()) cli.systems = "kairos-hybrid,naive-stpe";
  cli.table = true;
  if (cli.svg.empty()) cli.svg = "kairos-lat-demo";
}

// What the command line asks to run; UsageError for an unknown workload or system, or a flag
// that would change nothing.
Plan make_plan(const Cli& cli) {
  Plan plan;
  plan.sizes = sizes_from(cli);
  plan.repeat = cli.repeat;
  plan.java = JavaSettings{cli.java_dir, cli.netty_jar, cli.java_heap, !cli.no_java_warmup};
  for (const auto& w : split(cli.workloads)) {
    if (!records::find_workload(w))
      throw UsageError("kairos-lat: --workloads: unknown workload '" + w + "' (W1..W9)");
    plan.workloads.push_back(w);
  }
  for (const auto& name : cli.systems.empty() ? kAllSystems : split(cli.systems)) {
    bool is_kairos = name.rfind("kairos-", 0) == 0 && name != "kairos-poll" && name.rfind("kairos-loop", 0) != 0;  // sharded, threaded
    if (cli.no_java && (name.rfind("java-", 0) == 0 || name == "netty-wheel")) continue;
    for (unsigned shards : is_kairos ? cli.shards : std::vector<unsigned>{1})
      for (bool warm : cli.warm_and_fresh ? std::vector<bool>{false, true} : std::vector<bool>{cli.warm}) {
        Cli c = cli;
        c.warm = warm;
        SystemSpec spec = make_spec(name, c, shards, plan.sizes);
        if (cli.warm_and_fresh && warm && !spec.warm) continue;  // Java: one row, its JIT pass
        plan.systems.push_back(std::move(spec));
      }
  }

  if (cli.w8_lazy && !cli.child) {
    const bool w8 = std::find(plan.workloads.begin(), plan.workloads.end(), "W8") != plan.workloads.end();
    const bool java = std::any_of(plan.systems.begin(), plan.systems.end(),
                                  [](const SystemSpec& s) { return s.kind == Kind::java; });
    if (!w8 || !java)
      throw UsageError(std::string("kairos-lat: --w8-lazy changes only how the Java peers run W8, and ") +
                       (!w8 ? "W8 is not among the workloads (-w W8)"
                            : "no Java system is selected (java-stpe-1, java-stpe-2, netty-wheel; not with --no-java)"));
  }
  return plan;
}

// --child: exactly one (workload, size, native system), here; its record on stdout.
int run_child(const Plan& plan) {
  auto vs = plan.workloads.size() == 1 ? variants(plan.workloads[0], plan.sizes) : std::vector<Variant>{};
  if (vs.size() != 1 || plan.systems.size() != 1 || plan.systems[0].kind == Kind::java)
    throw std::invalid_argument("kairos-lat: --child runs one workload, size and native system");
  const SystemSpec& s = plan.systems[0];
  const std::string& w = plan.workloads[0];
  ProgressLine progress(w + " " + workload_name(w) + " on " + s.label);
  json rec = run_native(s, w, vs[0].sizes, [&](std::uint64_t d, std::uint64_t t) { progress(d, t); });
  std::cout << rec.dump() << std::endl;
  return 0;
}

// Every run of the plan, each in a process of its own; then the tables, the charts and the rules.
int run_plan(const Plan& plan, const Cli& cli, const json& machine) {
  std::vector<json> records;
  std::ofstream out_file;
  if (!cli.out.empty()) {
    out_file.open(cli.out, std::ios::app);
    if (!out_file) throw UsageError("kairos-lat: cannot write " + cli.out);
  }

  JavaHarness java(plan.java);
  std::set<std::string> skipped;
  std::size_t failed = 0;
  std::vector<std::string> host_moved;  // runs after which the handoff was another host's
  std::size_t total_runs = 0, run_no = 0;
  for (const auto& w : plan.workloads)
    for (const auto& s : plan.systems)
      if (applies(s, w)) total_runs += variants(w, plan.sizes).size() * plan.repeat;

  auto started = std::chrono::steady_clock::now();
  for (unsigned rep = 1; rep <= plan.repeat; ++rep) {
    for (const auto& w : plan.workloads) {
      for (const Variant& v : variants(w, plan.sizes)) {
        const WorkloadSizes& z = v.sizes;
        for (const auto& s : plan.systems) {
          if (!applies(s, w)) continue;
          ++run_no;
          if (s.kind == Kind::java) {
            std::string why = java.unavailable(s.config.system);
            if (!why.empty()) {
              if (skipped.insert(s.config.system).second)
                std::fprintf(stderr, "kairos-lat: %s skipped: %s\n", s.config.system.c_str(), why.c_str());
              continue;
            }
          }
          std::string what =
              w + " " + workload_name(w) + (v.label.empty() ? "" : " " + v.label) + " on " + s.label;
          std::fprintf(stderr, "kairos-lat: [%zu/%zu] %s (repeat %u, %.0f s so far)\n", run_no, total_runs,
                       what.c_str(), rep, seconds_since(started));
          double load = load_average_1m();
          std::optional<json> rec;
          try {
            if (s.kind == Kind::java) {
              rec = java.run(s.config.system, w, z);
              if (rec) (*rec)["config"]["warm"] = plan.java.warmup;  // LatHarness's pass, 1/10 size
            } else {
              rec = run_in_child(s, w, z, cli);
            }
          } catch (const std::exception& e) {
            std::fprintf(stderr, "kairos-lat: %s failed: %s\n", what.c_str(), e.what());
          }
          if (!rec) {
            ++failed;
            continue;
          }
          (*rec)["repeat"] = rep;
          (*rec)["loadavg_1m"] = load;
          flag_producer_behind(*rec);
          stamp_provenance(*rec, machine);
          // The host again, right after the run: a record whose host moved during the invocation
          // says so (machine.host.handoff_after_ns), and the invocation warns below.
          if (machine.contains("host") && machine["host"].contains("handoff_ns")) {
            const std::int64_t before = machine["host"]["handoff_ns"].get<std::int64_t>();
            const std::int64_t after = handoff_now_ns();
            (*rec)["machine"]["host"]["handoff_after_ns"] = after;
            if (!handoffs_agree(before, after))
              host_moved.push_back(what + " (repeat " + std::to_string(rep) + "): " + std::to_string(after) + " ns");
          }
          std::string line = rec->dump();
          if (!cli.table) std::cout << line << std::endl;
          if (out_file) out_file << line << std::endl;
          records.push_back(std::move(*rec));
        }
      }
    }
  }
  std::fprintf(stderr, "kairos-lat: %zu runs in %.0f s\n", records.size(), seconds_since(started));

  std::vector<std::string> broken;
  for (const auto& r : records)
    for (auto& b : broken_rules(r)) broken.push_back(std::move(b));

  auto groups = group_runs(records);
  std::ostream& table_out = cli.table ? std::cout : std::cerr;
  table_out << "\nhost: " << (machine.contains("host") ? host_line(machine["host"]) : std::string("not measured")) << "\n";
  if (!host_moved.empty()) {
    std::string list;
    for (const auto& m : host_moved) list += (list.empty() ? "" : "; ") + m;
    std::string warning = "the host changed during this invocation (one-way handoff after " + list +
                          "): these records mix hosts; run again";
    table_out << "WARNING: " << warning << "\n";
    std::fprintf(stderr, "kairos-lat: %s\n", warning.c_str());
  }
  print_tables(table_out, groups, cli.markdown);
  if (!cli.svg.empty()) {
    write_svgs(cli.svg, groups, machine);
    write_spectrum_svgs(cli.svg, spectrum_charts(records), SpectrumStyle{cli.log_y});
  }
  for (const auto& b : broken) std::fprintf(stderr, "kairos-lat: rule broken: %s\n", b.c_str());
  if (failed > 0) std::fprintf(stderr, "kairos-lat: %zu of %zu runs failed\n", failed, run_no);
  if (records.empty() && failed == 0) {
    std::fprintf(stderr, "kairos-lat: no run produced a record (every system skipped or not applicable)\n");
    return 1;
  }
  if (failed > 0 || (cli.check && !broken.empty())) return 1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Cli cli;
  CLI::App app{"kairos-lat: the standard workloads W1..W8 on kairos and its peers, JSON lines out"};
  add_options(app, cli);
  app.set_version_flag("--version", version_line());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints the help, the version or the error
    return code == 0 ? 0 : 2;
  }

  try {
    const json machine = machine_json();
    if (!cli.svg.empty()) prepare_svg_dir(cli.svg);
    if (!cli.from.empty()) return tabulate_from(cli, machine);
    if (cli.demo) apply_demo(cli);
    perf::set_timer_slack_ns(1);  // inherited by every thread and process started from here
    const Plan plan = make_plan(cli);
    if (cli.child) return run_child(plan);
    return run_plan(plan, cli, machine);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kairos-lat: %s\n", e.what());
    return 1;
  }
}
