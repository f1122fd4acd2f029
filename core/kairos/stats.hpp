// stats.hpp: what a scheduler reports about itself (BasicScheduler::stats()).
// Counters are relaxed atomics summed at the call: each is exact once the scheduler is quiet,
// and may be a few tasks apart from the others while producers run.
#pragma once
#include <algorithm>
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
                                        // (empty when Options::record_lateness is false; in
                                        // poll mode, start is the `now` given to poll(); after
                                        // the second task of a batch, the TSC since then:
                                        // docs/api.md, stats())
  // The leader's wait (WaitPolicy, docs/adaptive-wait.md):
  std::int64_t spin_window_ns = 0;      // the spin window in use: hybrid's own, adaptive's current
                                        // one; 0 under sleep and spin
  std::int64_t wake_overshoot_ns = 0;   // adaptive: the estimated percentile of how late a timed
                                        // sleep wakes (before the floor and ceiling); 0 otherwise
  std::uint64_t wake_overshoot_samples = 0;  // adaptive: timed sleeps measured (kicks excluded)
  // Poll mode: wake-ups of the owner's loop signalled by this shard's submitters and re-armers
  // (their deadline was earlier than the one next_deadline() armed; BasicScheduler::wake_fd()).
  std::uint64_t loop_wakes = 0;
  // Submissions (and remove requests) waiting in the inbox for the leader to take them in: it
  // drains lazily (when it wakes, at a high-water mark, after the tasks it woke for have
  // started), so a backlog here is normal; one that stays large means the leader is starved.
  std::uint64_t in_inbox = 0;
  // Far timers (Options::far_timer_slack) given their deadline by the leader at their take-in:
  // schedule() / execute_after() calls that made no clock read (one cancelled before its
  // take-in is not counted: it never needed a deadline).
  std::uint64_t far_timers = 0;
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
      t.spin_window_ns = std::max(t.spin_window_ns, s.spin_window_ns);  // the widest shard's
      t.wake_overshoot_ns = std::max(t.wake_overshoot_ns, s.wake_overshoot_ns);
      t.wake_overshoot_samples += s.wake_overshoot_samples;
      t.loop_wakes += s.loop_wakes;
      t.in_inbox += s.in_inbox;
      t.far_timers += s.far_timers;
    }
    return t;
  }
};

}  // namespace kairos
