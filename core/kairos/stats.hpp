// stats.hpp: what a scheduler reports about itself (BasicScheduler::stats()).
// Counters are relaxed atomics summed at the call: each is exact once the scheduler is quiet,
// and may be a few tasks apart from the others while producers run.
#pragma once
#include <cstdint>
#include <vector>

#include <kairos/latency_histogram.hpp>

namespace kairos {

struct ShardStats {
  std::uint64_t submitted = 0;          // accepted submissions
  std::uint64_t ran = 0;                // executions started (each periodic run counts)
  std::uint64_t cancelled = 0;          // tasks that left the shard cancelled
  std::uint64_t rejected = 0;           // submissions refused or discarded by the rejection policy
  std::uint64_t pending = 0;            // queue_size() of this shard
  std::uint64_t periodic_failures = 0;  // periodic tasks stopped by an exception
  LatencyHistogram lateness;            // start - deadline of each execution, in ns
                                        // (empty when Options::record_lateness is false)
};

struct SchedulerStats {
  std::vector<ShardStats> shards;
  ShardStats total() const {
    ShardStats t;
    for (const ShardStats& s : shards) {
      t.submitted += s.submitted;
      t.ran += s.ran;
      t.cancelled += s.cancelled;
      t.rejected += s.rejected;
      t.pending += s.pending;
      t.periodic_failures += s.periodic_failures;
      t.lateness.merge(s.lateness);
    }
    return t;
  }
};

}  // namespace kairos
