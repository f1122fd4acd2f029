// options.hpp: how a scheduler is built. Checked once, at construction (std::invalid_argument).
#pragma once
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <kairos/rejection.hpp>
#include <kairos/wait.hpp>

namespace kairos {

struct Options {
  unsigned shards = 1;               // independent heaps, each with its own leader
  unsigned threads_per_shard = 1;    // leader/follower threads of one shard
  std::vector<int> cpus;             // thread i pinned to cpus[i % cpus.size()]; empty: no pinning
  WaitPolicy wait = WaitPolicy::hybrid(std::chrono::microseconds(50));
  Rejection rejection = Rejection::abort;
  std::size_t capacity = 0;          // most pending tasks of one shard at once; 0 = unbounded
  bool remove_on_cancel = false;
  bool execute_existing_delayed_tasks_after_shutdown = true;
  bool continue_existing_periodic_tasks_after_shutdown = false;
  std::function<void(std::exception_ptr)> on_uncaught;  // exceptions nobody will get(): execute()'d
                                                        // tasks and failed periodic tasks
  std::string name = "kairos";       // threads are named <name>-<shard>-<n> (15 chars kept)
  bool record_lateness = true;       // per-shard lateness histogram in stats()
};

}  // namespace kairos
