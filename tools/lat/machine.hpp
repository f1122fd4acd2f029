// machine.hpp: what every record says about the machine it was measured on.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kairos::lat {

// {"nproc", "cpu", "kernel", "host"}: hardware_concurrency, /proc/cpuinfo's model name,
// uname -r, and host_fingerprint().
nlohmann::ordered_json machine_json();
// What a figure depends on, named in every record and table (a verdict measured on one host can
// flip on the next): {"vendor", "family", "model"} (/proc/cpuinfo), "threads_per_core" (cpu0's
// thread siblings), "clocksource" (the kernel's current one), "clock_read_ns" (clock_gettime's
// median cost), "handoff_ns" (a pinned one-way cache-line handoff between two CPUs; -1 with one
// CPU). Measured in about 10 ms.
nlohmann::ordered_json host_fingerprint();
// The pinned one-way handoff of host_fingerprint(), measured again now (about 10 ms; -1 with one
// CPU): kairos-lat measures it after every run, because a VM's vCPUs can be moved under it
// between the host's sockets or core complexes within minutes (a 40 ns handoff becoming 190 ns),
// and a record must not claim the host measured at the invocation's start if that moved.
std::int64_t handoff_now_ns();
// Whether two handoffs are the same host's: equal within the measurement's spread (the larger at
// most 1.5x the smaller, or within 30 ns of it). -1 (not measured) agrees only with -1.
bool handoffs_agree(std::int64_t a, std::int64_t b);
// host_fingerprint() in one line, for a table's heading.
std::string host_line(const nlohmann::ordered_json& host);
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
