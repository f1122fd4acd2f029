// submit_driver.cpp: schedules N no-op tasks 1 h ahead (futures dropped, the W1 shape), then
// shutdown_now(), and exits. It exists to be counted:
//   valgrind --tool=callgrind --toggle-collect='*submit_loop*' kairos_submit_driver 100000
// counts only the submit loop (divide the total Ir by N), and running it at two values of N under
// `perf stat -e instructions` or plain callgrind gives the same by difference.
// With "cancel" as second argument, remove-on-cancel is on and each task is cancelled right after
// it was scheduled (the W2 pair, lag 0); the loop is then cancel_loop.
// Usage: kairos_submit_driver [N [cancel]]   (default N = 100000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

[[gnu::noinline]] long cancel_loop(kairos::Scheduler& sched, long n) {
  long cancelled = 0;
  for (long i = 0; i < n; ++i) cancelled += sched.schedule(NoOp{}, 1h).cancel();
  return cancelled;
}

}  // namespace

int main(int argc, char** argv) {
  long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 100'000;
  bool cancel = argc > 2 && std::strcmp(argv[2], "cancel") == 0;
  if (n <= 0 || (argc > 2 && !cancel)) {
    std::fprintf(stderr, "usage: %s [N > 0 [cancel]]\n", argv[0]);
    return 2;
  }
  kairos::Options options;
  options.remove_on_cancel = cancel;
  kairos::Scheduler sched(options);
  long expected = n;
  if (cancel) {
    long cancelled = cancel_loop(sched, n);
    expected = n - cancelled;
  } else {
    submit_loop(sched, n);
  }
  std::size_t pending = sched.queue_size();
  std::size_t taken = sched.shutdown_now().size();  // the Tasks drop here: futures cancelled
  std::printf("submitted %ld, pending %zu, taken by shutdown_now %zu\n", n, pending, taken);
  return pending == static_cast<std::size_t>(expected) && taken == pending ? 0 : 1;
}
