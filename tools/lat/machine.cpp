// machine.cpp: reads /proc and uname for machine.hpp, and measures the host's fingerprint: the
// clock read's cost and a pinned one-way cache-line handoff (a ping-pong of one line between two
// CPUs the process may run on), the two figures a timer library's verdict most depends on.
#include "machine.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>
#include <sys/utsname.h>
#include <ctime>

#include <kairos/version.hpp>

// Set by tools/lat/CMakeLists.txt: `git describe` of the source tree at configure time, and the
// build configuration. Neither is a path.
#ifndef KAIROS_LAT_COMMIT
#define KAIROS_LAT_COMMIT "unknown"
#endif
#ifndef KAIROS_LAT_BUILD_TYPE
#define KAIROS_LAT_BUILD_TYPE "unknown"
#endif

namespace kairos::lat {

namespace {

std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  if (!std::getline(f, line)) return "unknown";
  return line;
}

// The first processor's "key : value" lines of /proc/cpuinfo.
std::string cpuinfo_field(const std::string& key) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.empty()) break;  // the end of the first processor's block
    if (line.rfind(key, 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return "unknown";
}

// The CPUs in a sysfs list such as "0-1" or "0,2".
int count_cpu_list(const std::string& list) {
  int n = 0;
  std::stringstream in(list);
  for (std::string part; std::getline(in, part, ',');) {
    auto dash = part.find('-');
    if (dash == std::string::npos) n += part.empty() ? 0 : 1;
    else n += std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
  }
  return n;
}

std::int64_t median(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

// ns per clock_gettime(CLOCK_MONOTONIC): the median of 9 rounds of 2,000 reads.
std::int64_t clock_read_ns() {
  std::vector<std::int64_t> rounds;
  for (int r = 0; r < 9; ++r) {
    timespec ts{};
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 2'000; ++i) clock_gettime(CLOCK_MONOTONIC, &ts);
    auto t1 = std::chrono::steady_clock::now();
    rounds.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count() / 2'000);
  }
  return median(rounds);
}

}  // namespace

// One-way handoff of a cache line between the first two CPUs this process may run on, each thread
// pinned: a counter bounced between them (each side waits for the other's value, then writes the
// next), timed in 400 batches of 50 round trips; the median batch / (2 x 50). A batch during which
// either thread was preempted is an outlier the median ignores (a loaded machine still reads
// right, as long as most batches ran undisturbed). -1 with one CPU, or if pinning fails.
// The line's two writers alternate strictly (acquire load of the partner's value, release
// store of the next): the count is the handoffs, nothing else is ordered by it.
std::int64_t handoff_now_ns() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) return -1;
  constexpr int kBatches = 400, kTrips = 50;
  constexpr std::int64_t kLast = 2 * std::int64_t{kBatches} * kTrips;
  alignas(64) std::atomic<std::int64_t> line{0};
  std::atomic<bool> pinned_ok{true};
  auto pin = [](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
  };
  std::thread echo([&] {
    if (!pin(cpus[1])) pinned_ok = false;
    for (std::int64_t v = 1; v < kLast; v += 2) {
      while (line.load(std::memory_order_acquire) != v)
        if (!pinned_ok.load(std::memory_order_relaxed)) return;
      line.store(v + 1, std::memory_order_release);
    }
  });
  cpu_set_t before;
  pthread_getaffinity_np(pthread_self(), sizeof before, &before);
  if (!pin(cpus[0])) pinned_ok = false;
  std::vector<std::int64_t> batches;
  batches.reserve(kBatches);
  std::int64_t v = 0;
  for (int b = 0; b < kBatches && pinned_ok.load(std::memory_order_relaxed); ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kTrips; ++i, v += 2) {
      line.store(v + 1, std::memory_order_release);
      while (line.load(std::memory_order_acquire) != v + 2)
        if (!pinned_ok.load(std::memory_order_relaxed)) break;
    }
    auto t1 = std::chrono::steady_clock::now();
    batches.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count() / (2 * kTrips));
  }
  echo.join();
  pthread_setaffinity_np(pthread_self(), sizeof before, &before);
  if (!pinned_ok.load()) return -1;
  return median(batches);
}


bool handoffs_agree(std::int64_t a, std::int64_t b) {
  if (a < 0 || b < 0) return a < 0 && b < 0;
  const std::int64_t lo = std::min(a, b), hi = std::max(a, b);
  return hi - lo <= 30 || 2 * hi <= 3 * lo;
}

nlohmann::ordered_json host_fingerprint() {
  nlohmann::ordered_json h;
  h["vendor"] = cpuinfo_field("vendor_id");
  h["family"] = cpuinfo_field("cpu family");
  h["model"] = cpuinfo_field("model\t");
  std::string siblings = first_line("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list");
  h["threads_per_core"] = siblings == "unknown" ? -1 : count_cpu_list(siblings);
  h["clocksource"] = first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  h["clock_read_ns"] = clock_read_ns();
  h["handoff_ns"] = handoff_now_ns();
  return h;
}

std::string host_line(const nlohmann::ordered_json& h) {
  auto text = [&](const char* k) {
    if (!h.contains(k)) return std::string("?");
    return h[k].is_string() ? h[k].get<std::string>() : h[k].dump();
  };
  return text("vendor") + " family " + text("family") + " model " + text("model") + ", " + text("threads_per_core") +
         " thread(s) per core, clocksource " + text("clocksource") + ", clock read " + text("clock_read_ns") +
         " ns, one-way handoff " + text("handoff_ns") + " ns";
}

nlohmann::ordered_json machine_json() {
  nlohmann::ordered_json m;
  m["nproc"] = std::thread::hardware_concurrency();
  std::string model = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  }
  m["cpu"] = model;
  utsname u{};
  m["kernel"] = uname(&u) == 0 ? std::string(u.release) : std::string("unknown");
  m["host"] = host_fingerprint();
  return m;
}

double load_average_1m() {
  std::ifstream f("/proc/loadavg");
  double v = -1;
  f >> v;
  return v;
}

namespace {

std::string compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "g++ " __VERSION__;
#else
  return "unknown";
#endif
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

void stamp_provenance(nlohmann::ordered_json& record, const nlohmann::ordered_json& machine) {
  record["date"] = utc_now();
  record["kairos"] = {{"version", KAIROS_VERSION_STRING},
                      {"commit", KAIROS_LAT_COMMIT},
                      {"compiler", compiler()},
                      {"build_type", KAIROS_LAT_BUILD_TYPE}};
  record["machine"] = machine;
}

std::string version_line() {
  // Appended to one string: the chain of operator+ on literals made g++ 12 -O2 warn (-Warray-bounds,
  // a false positive in its inlined memcpy) in every build's log.
  std::string line = "kairos-lat ";
  for (const std::string& part : {std::string(KAIROS_VERSION_STRING), std::string(" (commit "),
                                  std::string(KAIROS_LAT_COMMIT), std::string(", "), compiler(),
                                  std::string(", "), std::string(KAIROS_LAT_BUILD_TYPE), std::string(")")})
    line += part;
  return line;
}

}  // namespace kairos::lat
