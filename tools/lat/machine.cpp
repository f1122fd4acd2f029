// machine.cpp: reads /proc and uname for machine.hpp.
#include "machine.hpp"

#include <fstream>
#include <string>
#include <thread>

#include <sys/utsname.h>

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

}  // namespace kairos::lat
