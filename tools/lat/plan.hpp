// plan.hpp: what one kairos-lat invocation runs: the workloads with their sizes, the systems with
// their configurations, and how often. Built once from the command line (main.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <record_model.hpp>

#include <workloads/system.hpp>
#include <workloads/w1_submit.hpp>
#include <workloads/w2_timeout_churn.hpp>
#include <workloads/w2b_two_class_churn.hpp>
#include <workloads/w3_lateness.hpp>
#include <workloads/w4_periodic.hpp>
#include <workloads/w5_scale.hpp>
#include <workloads/w6_fire_throughput.hpp>
#include <workloads/w7_fifo_burst.hpp>
#include <workloads/w8_heartbeat.hpp>
#include <workloads/w9_loop_wakeup.hpp>

namespace kairos::lat {

enum class Kind { kairos, kairos_poll, kairos_loop, naive_stpe, asio, asio_inline, java, kernel };

struct SystemSpec {
  Kind kind;
  perf::SystemConfig config;  // config.system is the name printed in every record
  std::string label;          // short row label: name plus the configuration that differs
  bool warm = false;          // a warm-up pass on another system of this kind before each run
};

// The sizes of every workload; a workload with a list runs once per value.
struct WorkloadSizes {
  std::vector<unsigned> w1_producers{1, 2};
  perf::W1Params w1;
  perf::W2Params w2;
  perf::W3Params w3;
  perf::W4Params w4;
  std::vector<std::size_t> w5_timers{1'000'000, 10'000'000};
  perf::W5Params w5;
  perf::W6Params w6;
  perf::W7Params w7;
  perf::W8Params w8;
  bool w8_rearm = true;  // kairos re-arms in place (false: cancel + schedule, as the peers)
  bool w8_lazy = false;  // the Java peers re-arm lazily, as Netty's IdleStateHandler (false: cancel + schedule)
  perf::W9Params w9;
};

struct JavaSettings {
  std::string source_dir;  // holds LatHarness.java, Sys.java, NettyWheelSys.java
  std::string netty_jar = "/usr/share/java/netty-common.jar";
  std::string heap = "8g";
  bool warmup = true;
};

struct Plan {
  std::vector<std::string> workloads;  // W1..W8, in run order
  std::vector<SystemSpec> systems;
  WorkloadSizes sizes;
  JavaSettings java;
  unsigned repeat = 1;
};

// "W3" -> "lateness"; "" if unknown (the workload table, tools/records/record_model.hpp).
inline std::string workload_name(const std::string& id) { return std::string(records::workload_name(id)); }

// One run's sizes of a workload, and the value of the parameter it varies ("producers=2"; empty
// when the workload varies none: records::Workload::varies).
struct Variant {
  WorkloadSizes sizes;
  std::string label;
};
// The sizes of each run of `workload`: one per value of its varying parameter.
inline std::vector<Variant> variants(const std::string& workload, const WorkloadSizes& z) {
  const records::Workload* w = records::find_workload(workload);
  const std::string_view varies = w ? w->varies : std::string_view{};
  std::vector<Variant> out;
  auto add = [&](WorkloadSizes v, auto value) {
    out.push_back({std::move(v), std::string(varies) + "=" + std::to_string(value)});
  };
  if (varies == "producers") {
    for (unsigned p : z.w1_producers) {
      WorkloadSizes v = z;
      v.w1.producers = p;
      add(v, p);
    }
  } else if (varies == "timers") {
    for (std::size_t n : z.w5_timers) {
      WorkloadSizes v = z;
      v.w5.timers = n;
      add(v, n);
    }
  } else {
    out.push_back({z, {}});
  }
  return out;
}

}  // namespace kairos::lat
