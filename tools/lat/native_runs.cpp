// native_runs.cpp: the C++ systems under the same workload bodies (perf/workloads/).
#include "native_runs.hpp"

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include <kairos/hdr_codec.hpp>

#if !defined(KAIROS_LAT_NO_ASIO)  // built without Boost: no Asio peers (tools/lat/CMakeLists.txt)
#include <peers/asio_inline_system.hpp>
#include <peers/asio_system.hpp>
#endif
#include <peers/naive_stpe_system.hpp>
#include <workloads/kairos_loop_system.hpp>
#include <workloads/kairos_poll_system.hpp>
#include <workloads/kairos_system.hpp>

namespace kairos::lat {
namespace {

std::atomic<std::uint64_t> g_systems_built{0};

template <class System>
perf::RunResult run_workload(System& sys, const perf::SystemConfig& c, const std::string& w,
                             const WorkloadSizes& z, const perf::Progress& progress) {
  if constexpr (requires { System::kInline; }) {  // one thread: W2 and W6 only (applies())
    if (w == "W2") return perf::run_w2(sys, c, z.w2);
    if (w == "W6") return perf::run_w6(sys, c, z.w6, progress);
    throw std::invalid_argument("kairos-lat: an inline system runs W2 and W6 only");
  } else {
  if (w == "W1") return perf::run_w1(sys, c, z.w1);
  if (w == "W2") return perf::run_w2(sys, c, z.w2);
  if (w == "W2b") return perf::run_w2b(sys, c, perf::W2bParams::sized_as(z.w2));
  if (w == "W3") return perf::run_w3(sys, c, z.w3, progress);
  if (w == "W4") return perf::run_w4(sys, c, z.w4, progress);
  if (w == "W5") return perf::run_w5(sys, c, z.w5, progress);
  if (w == "W6") return perf::run_w6(sys, c, z.w6, progress);
  if (w == "W7") return perf::run_w7(sys, c, z.w7);
  // W8: kairos re-arms in place; every peer cancels and schedules.
  if (w == "W8") return perf::run_w8(sys, c, z.w8, z.w8_rearm);
  if (w == "W9") return perf::run_w9(sys, c, z.w9);
  throw std::invalid_argument("kairos-lat: unknown workload " + w);
  }
}

// With s.warm, the same workload first runs on another system of the same kind, which is then
// destroyed: the measured system starts in a process that has already run one (allocator caches
// filled, task nodes recycled across threads, queue blocks reused), as a long-running one has.
template <class System>
perf::RunResult run_on(const SystemSpec& s, const std::string& w, const WorkloadSizes& z,
                       const perf::Progress& progress) {
  perf::SystemConfig c = s.config;
  c.remove_on_cancel = (w == "W2" || w == "W2b" || w == "W5");
  if (s.warm) {
    System warm(c);
    g_systems_built.fetch_add(1, std::memory_order_relaxed);
    (void)run_workload(warm, c, w, z, {});
  }
  System sys(c);
  g_systems_built.fetch_add(1, std::memory_order_relaxed);
  return run_workload(sys, c, w, z, progress);
}

nlohmann::ordered_json to_json(const perf::Value& v) {
  return std::visit([](const auto& x) { return nlohmann::ordered_json(x); }, v);
}

}  // namespace

std::uint64_t systems_built() { return g_systems_built.load(std::memory_order_relaxed); }

bool applies(const SystemSpec& s, const std::string& workload) {
  // Inline systems (the workload's thread is their loop): what one thread's submit, cancel and
  // fire cost. The other workloads need a loop that waits or a second producer.
  if (s.kind == Kind::kairos_poll || s.kind == Kind::asio_inline) return workload == "W2" || workload == "W6";
  // W9, a loop that sleeps woken by another thread: the loop systems and the threaded ones.
  if (s.kind == Kind::kairos_loop) return workload == "W9";
  if (workload == "W2b") return s.kind == Kind::kairos || s.kind == Kind::naive_stpe || s.kind == Kind::asio;
  if (workload == "W9") return s.kind == Kind::kairos || s.kind == Kind::naive_stpe || s.kind == Kind::asio;
  if (workload == "W8") return s.kind != Kind::kernel;
  return s.kind != Kind::kernel || workload == "W3";
}

nlohmann::ordered_json config_json(const SystemSpec& s) {
  const perf::SystemConfig& c = s.config;
  nlohmann::ordered_json j;
  j["threads"] = c.shards * c.threads;
  j["shards"] = c.shards;
  j["threads_per_shard"] = c.threads;
  j["wait"] = c.wait;
  if (c.wait == "hybrid") j["spin_window_ns"] = c.spin_window_ns;
  if (c.wait == "adaptive")
    j["percentile"] = c.adaptive_percentile > 0 ? c.adaptive_percentile : kairos::WaitPolicy::kAdaptivePercentile;
  j["pinned"] = !c.cpus.empty();
  j["cpus"] = c.cpus;
  j["producer_cpu"] = c.producer_cpu;
  j["timer_slack_ns"] = 1;
  j["warm"] = s.warm;
  if (!c.record_lateness) j["record_lateness"] = false;  // kairos-lat --no-lateness
  if (c.far_timer_slack_ns >= 0) j["far_timer_slack_ns"] = c.far_timer_slack_ns;  // --far-timer-slack-us
  return j;
}

void add_result(nlohmann::ordered_json& record, const perf::RunResult& r) {
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (const auto& [k, v] : r.parameters) params[k] = to_json(v);
  record["parameters"] = params;
  for (const auto& [k, v] : r.figures) record[k] = to_json(v);
  if (r.histogram) {
    record["histogram"] = kairos::hdr::to_base64(*r.histogram);
    record["histogram_format"] = kHistogramFormat;
  }
}

nlohmann::ordered_json run_native(const SystemSpec& s, const std::string& workload,
                                  const WorkloadSizes& sizes, const perf::Progress& progress) {
  perf::RunResult r;
  switch (s.kind) {
    case Kind::kairos: r = run_on<perf::KairosSystem>(s, workload, sizes, progress); break;
    case Kind::naive_stpe: r = run_on<perf::NaiveStpeSystem>(s, workload, sizes, progress); break;
#if !defined(KAIROS_LAT_NO_ASIO)
    case Kind::asio: r = run_on<perf::AsioSystem>(s, workload, sizes, progress); break;
    case Kind::asio_inline: r = run_on<perf::AsioInlineSystem>(s, workload, sizes, progress); break;
#else
    case Kind::asio:
    case Kind::asio_inline:
      throw std::invalid_argument("kairos-lat: built without Boost.Asio (libboost-dev): no " + s.label);
#endif
    case Kind::kairos_poll: r = run_on<perf::KairosPollSystem>(s, workload, sizes, progress); break;
    case Kind::kairos_loop: r = run_on<perf::KairosLoopSystem>(s, workload, sizes, progress); break;
    case Kind::kernel:
      if (workload != "W3") throw std::invalid_argument("kairos-lat: kernel-nanosleep runs W3 only");
      if (s.warm) {  // its own kind of warm-up: the same pass of sleeping threads
        g_systems_built.fetch_add(1, std::memory_order_relaxed);
        (void)perf::run_w3_kernel_floor(sizes.w3, {});
      }
      g_systems_built.fetch_add(1, std::memory_order_relaxed);
      r = perf::run_w3_kernel_floor(sizes.w3, progress);
      break;
    case Kind::java: throw std::logic_error("kairos-lat: a Java system is not native");
  }
  nlohmann::ordered_json rec;
  rec["workload"] = workload;
  rec["name"] = workload_name(workload);
  rec["system"] = s.config.system;
  rec["config"] = config_json(s);
  add_result(rec, r);
  return rec;
}

}  // namespace kairos::lat
