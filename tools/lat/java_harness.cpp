// java_harness.cpp: compiling and running LatHarness.java.
#include "java_harness.hpp"

#include "subprocess.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <vector>

#include <unistd.h>

namespace kairos::lat {
namespace fs = std::filesystem;

JavaHarness::~JavaHarness() {
  if (!classes_.empty()) {
    std::error_code ec;
    fs::remove_all(classes_, ec);
  }
}

bool JavaHarness::compile() {
  if (tried_) return !classes_.empty();
  tried_ = true;
  std::string javac = find_in_path("javac");
  if (javac.empty() || find_in_path("java").empty()) {
    compile_error_ = "javac not found (apt-get install openjdk-17-jdk-headless)";
    return false;
  }
  fs::path src = settings_.source_dir;
  if (!fs::exists(src / "LatHarness.java")) {
    compile_error_ = "no LatHarness.java in " + src.string() + " (--java-dir)";
    return false;
  }
  char tmpl[] = "/tmp/kairos-lat-java-XXXXXX";
  if (!mkdtemp(tmpl)) {
    compile_error_ = "cannot create a temporary directory";
    return false;
  }
  std::string dir = tmpl;
  with_netty_ = fs::exists(settings_.netty_jar);
  std::vector<std::string> cmd = {javac, "-nowarn", "-d", dir};
  if (with_netty_) cmd.insert(cmd.end(), {"-cp", settings_.netty_jar});
  cmd.push_back((src / "LatHarness.java").string());
  cmd.push_back((src / "Sys.java").string());
  if (with_netty_) cmd.push_back((src / "NettyWheelSys.java").string());
  int status = 0;
  std::string javac_out = run_capture(cmd, status);
  if (!javac_out.empty()) std::cerr << javac_out;
  if (status != 0) {
    compile_error_ = "javac failed (see above)";
    fs::remove_all(dir);
    return false;
  }
  classes_ = dir;
  return true;
}

std::string JavaHarness::unavailable(const std::string& system) {
  if (!compile()) return compile_error_;
  if (system == "netty-wheel" && !with_netty_)
    return settings_.netty_jar + " not found (apt-get install libnetty-java)";
  return "";
}

std::optional<nlohmann::ordered_json> JavaHarness::run(const std::string& system,
                                                       const std::string& workload,
                                                       const WorkloadSizes& z) {
  if (!unavailable(system).empty()) return std::nullopt;
  std::vector<std::string> a = {"system=" + system, "workload=" + workload,
                                std::string("warmup=") + (settings_.warmup ? "1" : "0")};
  auto arg = [&](const char* k, long long v) { a.push_back(std::string(k) + "=" + std::to_string(v)); };
  if (workload == "W1") {
    arg("producers", z.w1.producers);
    arg("calls_per_producer", static_cast<long long>(z.w1.calls_per_producer));
    arg("delay_ns", z.w1.delay_ns);
  } else if (workload == "W2") {
    arg("iterations", static_cast<long long>(z.w2.iterations));
    arg("window", static_cast<long long>(z.w2.window));
    arg("delay_ns", z.w2.delay_ns);
  } else if (workload == "W3") {
    arg("count", static_cast<long long>(z.w3.count));
    arg("interval_ns", z.w3.interval_ns);
    arg("min_delay_ns", z.w3.min_delay_ns);
    arg("max_delay_ns", z.w3.max_delay_ns);
    arg("seed", static_cast<long long>(z.w3.seed));
  } else if (workload == "W4") {
    arg("tasks", z.w4.tasks);
    arg("period_ns", z.w4.period_ns);
    arg("initial_delay_ns", z.w4.initial_delay_ns);
    arg("duration_ns", z.w4.duration_ns);
    arg("grace_ns", z.w4.grace_ns);
  } else if (workload == "W5") {
    arg("timers", static_cast<long long>(z.w5.timers));
    arg("min_delay_ns", z.w5.min_delay_ns);
    arg("max_delay_ns", z.w5.max_delay_ns);
    arg("seed", static_cast<long long>(z.w5.seed));
  } else if (workload == "W6") {
    arg("tasks", static_cast<long long>(z.w6.tasks));
  } else if (workload == "W7") {
    arg("tasks", static_cast<long long>(z.w7.tasks));
    arg("ahead_ns", z.w7.ahead_ns);
  } else if (workload == "W8") {
    arg("sessions", static_cast<long long>(z.w8.sessions));
    arg("rate", static_cast<long long>(z.w8.rate));
    arg("timeout_ns", z.w8.timeout_ns);
    arg("quiet_every_ns", z.w8.quiet_every_ns);
    arg("duration_ns", z.w8.duration_ns);
    arg("seed", static_cast<long long>(z.w8.seed));
    a.push_back(std::string("w8_mode=") + (z.w8_lazy ? "lazy" : "cancel"));
  }
  std::string cp = classes_ + (with_netty_ ? ":" + settings_.netty_jar : "");
  std::vector<std::string> cmd = {find_in_path("java"), "-Xmx" + settings_.heap, "-cp", cp, "LatHarness"};
  cmd.insert(cmd.end(), a.begin(), a.end());
  int status = 0;
  std::string out = run_capture(cmd, status);
  std::stringstream lines(out);
  std::string line;
  std::optional<nlohmann::ordered_json> rec;
  while (std::getline(lines, line)) {
    if (line.empty() || line.front() != '{') continue;
    try {
      rec = nlohmann::ordered_json::parse(line);
    } catch (const std::exception& e) {
      std::cerr << "kairos-lat: " << system << " printed a bad line: " << e.what() << "\n";
    }
  }
  if (status != 0 || !rec) {
    std::cerr << "kairos-lat: " << system << " " << workload << " failed (exit " << status << ")\n";
    return std::nullopt;
  }
  (*rec)["config"]["timer_slack_ns"] = 1;  // inherited from kairos-lat, which sets it at start
  return rec;
}

}  // namespace kairos::lat
