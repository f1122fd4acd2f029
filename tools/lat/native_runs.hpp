// native_runs.hpp: one workload run on a C++ system in this process (kairos, naive-stpe, asio,
// kernel-nanosleep), turned into its JSON record.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>
#include <workloads/result.hpp>

#include "plan.hpp"

namespace kairos::lat {

// True iff `workload` means something for this system (kernel-nanosleep runs W3 only).
bool applies(const SystemSpec& s, const std::string& workload);

// Builds a fresh system, runs the workload once with `sizes`, destroys the system; the record has
// workload, name, system, config, parameters, the figures and, for the workloads with latency
// samples (W1, W2, W3, W4), "histogram": every sample as an HdrHistogram V2 compressed histogram
// in base64 (kairos::hdr::from_base64 reads it; early fires are left out, see early_fires).
// With s.warm, a warm-up pass of the same workload on another system of the same kind comes
// first, in this process, and is destroyed before the measured system is built.
nlohmann::ordered_json run_native(const SystemSpec& s, const std::string& workload,
                                  const WorkloadSizes& sizes, const perf::Progress& progress);

// How many systems run_native has built in this process (warm-up ones included); for tests.
std::uint64_t systems_built();

// The "config" object of a record.
nlohmann::ordered_json config_json(const SystemSpec& s);

inline constexpr const char* kHistogramFormat = "HdrHistogram V2 compressed, base64";

// Appends a RunResult's parameters, figures and histogram to a record.
void add_result(nlohmann::ordered_json& record, const perf::RunResult& r);

}  // namespace kairos::lat
