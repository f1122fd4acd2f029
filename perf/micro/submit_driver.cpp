// submit_driver.cpp: schedules N no-op tasks 1 h ahead (futures dropped, the W1 shape), then
// shutdown_now(), and exits. It exists to be counted:
//   valgrind --tool=callgrind --toggle-collect='*submit_loop*' kairos_submit_driver 100000
// counts only the submit loop (divide the total Ir by N), and running it at two values of N under
// `perf stat -e instructions` or plain callgrind gives the same by difference.
// With "cancel" as second argument, remove-on-cancel is on and each task is cancelled right after
// it was scheduled (the W2 pair, lag 0); the loop is then cancel_loop. With "cancel1024", W2's
// own shape: each iteration cancels the task scheduled 1,024 iterations before (cancel_lag_loop).
// With "execute" or "schedule0" the tasks are due at once (the W6 shape: `execute(f)`, or
// `schedule(f, 0)` with the handle dropped) and the program waits until all of them ran: the
// whole program's count at two values of N, by difference, is the cost of one task from submit
// to burial, the scheduler's thread included.
// With "burst" the N tasks share one absolute deadline 1 s ahead (the W7 shape: `schedule_at`,
// handles dropped) and all run once it passes.
// The schedule and cancel loops also print the calling thread's CPU time per operation
// (CLOCK_THREAD_CPUTIME_ID) and the wall time: run once as is and once under `taskset -c 0` (the
// whole process on one CPU: no line crosses cores), the difference of the two CPU figures is what
// the lines the scheduler's thread holds cost the producer (issue 29's transfer cost). They also
// print the caller's page faults and who grew the task pool's slabs (the scheduler's thread ahead
// of the caller, or the caller itself when none was ready): a fresh process's W1 faults its
// nodes' pages in somewhere.
// With "steady" after schedule, cancel or cancel1024, the loop runs in chunks with pauses between
// them (below: what valgrind's one thread at a time does to the counts otherwise).
// With "execute_after" the W1 shape with execute_after(f, 1h): no future.
// The 1 h and 10 s delays are far timers under the default Options (docs/api.md "Far timers"):
// the calls make no clock read.
// Usage: kairos_submit_driver [N [schedule|execute_after|cancel|cancel1024 [steady]|execute|schedule0|burst]]
//        (default N = 100000, schedule)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <time.h>

#include <kairos/detail/task_pool.hpp>
#include <kairos/kairos.hpp>

namespace {

using namespace std::chrono_literals;

// A named no-op: the task node's type then does not carry the loop's name, so the toggle pattern
// matches the loop alone (not the nodes' destroy() at shutdown_now).
struct NoOp {
  void operator()() const noexcept {}
};

// Out of line and never inlined: callgrind's --toggle-collect names them.
[[gnu::noinline]] void submit_loop(kairos::Scheduler& sched, long n) {
  for (long i = 0; i < n; ++i) sched.schedule(NoOp{}, 1h);
}

// execute_after: the same W1 shape with no future (one locked RMW fewer: no handle to drop).
[[gnu::noinline]] void post_loop(kairos::Scheduler& sched, long n) {
  for (long i = 0; i < n; ++i) sched.execute_after(NoOp{}, 1h);
}

[[gnu::noinline]] long cancel_loop(kairos::Scheduler& sched, long n) {
  long cancelled = 0;
  for (long i = 0; i < n; ++i) cancelled += sched.schedule(NoOp{}, 1h).cancel();
  return cancelled;
}

// W2's own shape: cancel task i - 1024 (a window of 1,024 pending timeouts); iterations
// [first, first + n) of it. The caller cancels the window at the end.
constexpr std::size_t kLag = 1024;
[[gnu::noinline]] long cancel_lag_loop(kairos::Scheduler& sched, std::vector<kairos::ScheduledFuture<void>>& window,
                                       long first, long n) {
  long cancelled = 0;
  for (long i = first; i < first + n; ++i) {
    kairos::ScheduledFuture<void>& slot = window[static_cast<std::size_t>(i) % kLag];
    cancelled += slot.cancel();
    slot = sched.schedule(NoOp{}, 10s);
  }
  return cancelled;
}

[[gnu::noinline]] void execute_loop(kairos::Scheduler& sched, long n, bool with_future) {
  for (long i = 0; i < n; ++i) {
    if (with_future) sched.schedule(NoOp{}, 0ns);
    else sched.execute(NoOp{});
  }
}

[[gnu::noinline]] void burst_loop(kairos::Scheduler& sched, long n, kairos::Scheduler::time_point at) {
  for (long i = 0; i < n; ++i) sched.schedule_at(NoOp{}, at);
}

}  // namespace

int main(int argc, char** argv) {
  long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 100'000;
  const char* mode = argc > 2 ? argv[2] : "";
  bool lag = std::strcmp(mode, "cancel1024") == 0;
  bool cancel = lag || std::strcmp(mode, "cancel") == 0;
  bool execute = std::strcmp(mode, "execute") == 0;
  bool schedule0 = std::strcmp(mode, "schedule0") == 0;
  bool burst = std::strcmp(mode, "burst") == 0;
  bool steady = argc > 3 && std::strcmp(argv[3], "steady") == 0;
  bool post = std::strcmp(mode, "execute_after") == 0;
  bool plain = post || std::strcmp(mode, "") == 0 || std::strcmp(mode, "schedule") == 0;
  if (n <= 0 || (argc > 2 && !plain && !cancel && !execute && !schedule0 && !burst) ||
      (argc > 3 && (!steady || execute || schedule0 || burst))) {
    std::fprintf(stderr, "usage: %s [N > 0 [schedule|execute_after|cancel|cancel1024 [steady]|execute|schedule0|burst]]\n", argv[0]);
    return 2;
  }
  kairos::Options options;
  options.remove_on_cancel = cancel;
  // KAIROS_FAR_TIMER_SLACK_NS: Options::far_timer_slack (the default, 1 ms, otherwise). Under
  // valgrind, which runs this ~50x slower, the leader's far-timer drains come ~50x as often per
  // submission as natively; the path-budget tests that count a pair at lag 0 set 50 ms
  // (perf/micro/CMakeLists.txt).
  if (const char* slack = std::getenv("KAIROS_FAR_TIMER_SLACK_NS"))
    options.far_timer_slack = std::chrono::nanoseconds(std::strtoll(slack, nullptr, 10));
  kairos::Scheduler sched(options);
  if (execute || schedule0 || burst) {
    if (burst) {
      const auto at = kairos::Scheduler::clock_type::now() + 1s;
      burst_loop(sched, n, at);
      while (kairos::Scheduler::clock_type::now() < at) std::this_thread::sleep_for(1ms);
    } else {
      execute_loop(sched, n, schedule0);
    }
    bool idle = sched.wait_idle(60s);
    std::uint64_t ran = sched.stats().total().ran;
    std::printf("submitted %ld, ran %llu\n", n, static_cast<unsigned long long>(ran));
    return idle && ran == static_cast<std::uint64_t>(n) ? 0 : 1;
  }
  long expected = n;
  auto thread_cpu_ns = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
  };
  auto thread_faults = [] {
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_minflt;
  };
  const kairos::detail::TaskPoolStats pool0 = kairos::detail::task_pool_stats();
  const long faults0 = thread_faults();
  const double cpu0 = thread_cpu_ns();
  const auto wall0 = std::chrono::steady_clock::now();
  // "steady": the loop in chunks of 16,384 with a pause of 20 ms between them, outside the
  // counted functions. Under valgrind, which runs one thread at a time, the scheduler's thread
  // otherwise rarely runs during the loop: the nodes and inbox blocks it would recycle do not
  // come back, and the caller carves new ones all along, which a real steady state does not
  // (tools/count-locked-rmw.py --steady). In a pause the leader drains what the high-water wakes
  // (every 8,192 submissions) asked it to, as it would beside the caller.
  const long chunk = steady ? 16384 : n;
  std::vector<kairos::ScheduledFuture<void>> window(lag ? kLag : 0);
  long cancelled = 0;
  for (long first = 0; first < n; first += chunk) {
    if (first != 0) std::this_thread::sleep_for(20ms);
    const long m = std::min(chunk, n - first);
    if (lag) cancelled += cancel_lag_loop(sched, window, first, m);
    else if (cancel) cancelled += cancel_loop(sched, m);
    else if (post) post_loop(sched, m);
    else submit_loop(sched, m);
  }
  for (auto& f : window) cancelled += f.cancel();
  expected = n - cancelled;
  const double wall = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - wall0).count();
  std::printf("%s: caller CPU %.1f ns/op, wall %.1f ns/op\n", cancel ? "schedule+cancel" : post ? "execute_after" : "schedule",
              (thread_cpu_ns() - cpu0) / static_cast<double>(n), wall / static_cast<double>(n));
  // Who faulted the nodes' pages in: the scheduler's thread (slabs it prepared ahead) or the
  // caller (slabs it found none ready for and grew itself, whose pages then fault in its calls).
  const kairos::detail::TaskPoolStats pool1 = kairos::detail::task_pool_stats();
  std::printf("caller page faults %ld; slabs prepared by the scheduler %llu, grown by the caller %llu\n",
              thread_faults() - faults0, static_cast<unsigned long long>(pool1.slabs_prepared - pool0.slabs_prepared),
              static_cast<unsigned long long>(pool1.slabs_grown_by_alloc - pool0.slabs_grown_by_alloc));
  std::size_t pending = sched.queue_size();
  std::size_t taken = sched.shutdown_now().size();  // the Tasks drop here: futures cancelled
  std::printf("submitted %ld, pending %zu, taken by shutdown_now %zu\n", n, pending, taken);
  return pending == static_cast<std::size_t>(expected) && taken == pending ? 0 : 1;
}
