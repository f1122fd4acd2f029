// machine.cpp: reads /proc and uname for machine.hpp.
#include "machine.hpp"

#include <fstream>
#include <string>
#include <thread>

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
  return std::string("kairos-lat ") + KAIROS_VERSION_STRING + " (commit " + KAIROS_LAT_COMMIT + ", " +
         compiler() + ", " + KAIROS_LAT_BUILD_TYPE + ")";
}

}  // namespace kairos::lat
