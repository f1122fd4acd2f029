#include <kairos/kairos.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <time.h>
#include <vector>
static long long now_ns() { timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1000000000LL + ts.tv_nsec; }
int main(int argc, char** argv) {
  const int tasks = 16, runs = argc > 1 ? atoi(argv[1]) : 2000;
  kairos::Scheduler s;
  std::vector<std::vector<long long>> starts(tasks, std::vector<long long>(runs + 200));
  std::vector<std::atomic<int>> n(tasks);
  std::vector<long long> t0(tasks);
  std::vector<kairos::ScheduledFuture<void>> h;
  for (int k = 0; k < tasks; ++k) {
    t0[k] = now_ns();
    h.push_back(s.schedule_at_fixed_rate([&, k] { int i = n[k].load(std::memory_order_relaxed); if (i < runs + 200) starts[k][i] = now_ns(); n[k].store(i + 1, std::memory_order_release); }, std::chrono::milliseconds(1), std::chrono::milliseconds(1)));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(runs + 50));
  for (auto& f : h) f.cancel();
  s.shutdown(); s.await_termination(std::chrono::seconds(5));
  printf("submit spacing ns:"); for (int k = 1; k < tasks; ++k) printf(" %lld", t0[k] - t0[k-1]); printf("\n");
  std::vector<long long> all;
  for (int k = 0; k < tasks; ++k) {
    std::vector<long long> late;
    for (int i = 0; i < runs; ++i) late.push_back(starts[k][i] - (t0[k] + 1000000LL + i * 1000000LL));
    all.insert(all.end(), late.begin(), late.end());
    std::sort(late.begin(), late.end());
    // lateness relative to task 0's due time of the same run
    std::vector<long long> rel;
    for (int i = 0; i < runs; ++i) rel.push_back(starts[k][i] - (t0[0] + 1000000LL + i * 1000000LL));
    std::sort(rel.begin(), rel.end());
    printf("task %2d late p50 %6lld p90 %6lld | start after task0's due p50 %6lld\n", k, late[runs/2], late[runs*9/10], rel[runs/2]);
  }
  std::sort(all.begin(), all.end());
  printf("all p50 %lld p90 %lld\n", all[all.size()/2], all[all.size()*9/10]);
}
