// machine.hpp: what every record says about the machine it was measured on.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace kairos::lat {

// {"nproc", "cpu", "kernel"}: hardware_concurrency, /proc/cpuinfo's model name, uname -r.
nlohmann::ordered_json machine_json();
// The 1-minute load average (/proc/loadavg) right now: how busy the shared machine was.
double load_average_1m();

}  // namespace kairos::lat

namespace kairos::lat {

// Where a record came from, set on every record: "date" (UTC, ISO 8601, when the run ended),
// "kairos" {"version", "commit", "compiler", "build_type"} of this kairos-lat, and "machine".
void stamp_provenance(nlohmann::ordered_json& record, const nlohmann::ordered_json& machine);

// "kairos-lat <version> (commit <commit>, <compiler>, <build type>)", for --version.
std::string version_line();

}  // namespace kairos::lat
