// java_harness.hpp: runs perf/peers/java/LatHarness.java (java-stpe-1, java-stpe-2, netty-wheel).
// The harness is compiled with javac once per kairos-lat process into a private temporary
// directory, then each run is one JVM, one after another (never two at once), its JSON line read
// from its stdout. Without javac (or, for netty-wheel, without netty-common.jar) a system is
// skipped with one line on stderr saying why.
// Threads: one JavaHarness per process, used from the main thread only.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "plan.hpp"

namespace kairos::lat {

class JavaHarness {
 public:
  explicit JavaHarness(JavaSettings s) : settings_(std::move(s)) {}
  ~JavaHarness();
  JavaHarness(const JavaHarness&) = delete;
  JavaHarness& operator=(const JavaHarness&) = delete;

  // Why `system` cannot run here ("" if it can); compiles the harness on first use.
  std::string unavailable(const std::string& system);
  // One run; nullopt (and a line on stderr) if the JVM failed or printed no JSON.
  std::optional<nlohmann::ordered_json> run(const std::string& system, const std::string& workload,
                                            const WorkloadSizes& sizes);

 private:
  bool compile();
  JavaSettings settings_;
  bool tried_ = false;
  std::string classes_;     // compiled classes; empty until compiled
  std::string compile_error_;
  bool with_netty_ = false;
};

}  // namespace kairos::lat
