// record_model.hpp: the record model kairos-lat and kairos-gate share: the standard workloads by id,
// the key that makes runs the repeats of one measurement, groups in first-seen order, medians.
// A run itself stays each tool's own (kairos-lat keeps the JSON record it wrote or read;
// kairos-gate a Run of figures read from any of its formats): both group and summarise alike.
// Threads: plain functions over values; GroupIndex is one object per grouping.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kairos::records {

// ---- the standard workloads (docs/workloads.md, perf/workloads/) -----------------------------

struct Workload {
  std::string_view id;       // "W3": the "workload" of every record
  std::string_view name;     // "lateness"
  std::string_view varies;   // the parameter one invocation runs several values of ("producers",
                             // "timers"), empty when it runs one
  bool by_default;           // run when no -w is given
  std::string_view lateness_chart;  // W3/W4: the title of its lateness chart (--svg), else empty
};

inline constexpr Workload kWorkloads[] = {
    {"W1", "submit", "producers", true, {}},
    {"W2", "timeout-churn", {}, true, {}},
    {"W2b", "timeout-churn-two-class", {}, false, {}},
    {"W3", "lateness", {}, true, "lateness of one-shot timers"},
    {"W4", "periodic", {}, true, "lateness of fixed-rate runs"},
    {"W5", "scale", "timers", true, {}},
    {"W6", "fire-throughput", {}, true, {}},
    {"W7", "fifo-burst", {}, true, {}},
    {"W8", "heartbeat", {}, false, {}},
    {"W9", "loop-wakeup", {}, false, {}},
};

// The workload of id `id` ("W3"), or nullptr.
const Workload* find_workload(std::string_view id);
// Its name ("W3" -> "lateness"); "" if unknown.
std::string_view workload_name(std::string_view id);
// The ids of every workload, and of the default set, comma-separated ("W1,W2,...").
std::vector<std::string> workload_ids();
std::string default_workloads();

// ---- groups: the repeats of one measurement --------------------------------------------------

// Runs with equal keys are repeats of one measurement: the workload, the system (or a row label
// that names it), and the parameters and configuration, each in its serialised form.
std::string group_key(std::string_view workload, std::string_view system, std::string_view parameters,
                      std::string_view config);

// Groups in the order their first run appears.
class GroupIndex {
 public:
  // The index of key's group, and whether this call made it (the caller then appends the group).
  std::pair<std::size_t, bool> find_or_add(const std::string& key);
  std::size_t size() const { return at_.size(); }

 private:
  std::map<std::string, std::size_t> at_;
};

// ---- summaries -------------------------------------------------------------------------------

// The median of a non-empty list (the mean of the middle two for an even count); an empty list
// throws std::invalid_argument.
double median(std::vector<double> values);

}  // namespace kairos::records
