// machine.hpp: what every record says about the machine it was measured on.
#pragma once
#include <nlohmann/json.hpp>

namespace kairos::lat {

// {"nproc", "cpu", "kernel"}: hardware_concurrency, /proc/cpuinfo's model name, uname -r.
nlohmann::ordered_json machine_json();
// The 1-minute load average (/proc/loadavg) right now: how busy the shared machine was.
double load_average_1m();

}  // namespace kairos::lat
