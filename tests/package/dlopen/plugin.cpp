// plugin.cpp: a shared object that uses kairos (linked against libkairos.so), for host.cpp (dlopen/).
// plugin_run() submits from the calling thread, so that thread's kairos thread_locals (node
// magazines, producer token, clock pace) are made and used inside a library loaded by dlopen().
#include <atomic>
#include <chrono>
#include <vector>

#include <kairos/kairos.hpp>

extern "C" int plugin_run(int tasks) {
  kairos::Scheduler sched;
  std::atomic<int> ran{0};
  std::vector<kairos::ScheduledFuture<void>> futures;
  for (int i = 0; i < tasks; ++i)
    futures.push_back(sched.schedule([&ran] { ran.fetch_add(1, std::memory_order_relaxed); },
                                     std::chrono::microseconds(100 * (i % 10))));
  for (auto& f : futures) f.get();
  sched.shutdown();
  return ran.load();
}
