// native_runs.hpp: one workload run on a C++ system in this process (kairos, naive-stpe, asio,
// kernel-nanosleep), turned into its JSON record.
#pragma once
#include <string>

#include <nlohmann/json.hpp>
#include <workloads/result.hpp>

#include "plan.hpp"

namespace kairos::lat {

// True iff `workload` means something for this system (kernel-nanosleep runs W3 only).
bool applies(const SystemSpec& s, const std::string& workload);

// Builds a fresh system, runs the workload once with `sizes`, destroys the system; the record has
// workload, name, system, config, parameters and the figures (repeat and machine come later).
nlohmann::ordered_json run_native(const SystemSpec& s, const std::string& workload,
                                  const WorkloadSizes& sizes, const perf::Progress& progress);

// The "config" object of a record.
nlohmann::ordered_json config_json(const SystemSpec& s);

// Appends a RunResult's parameters and figures to a record.
void add_result(nlohmann::ordered_json& record, const perf::RunResult& r);

}  // namespace kairos::lat
