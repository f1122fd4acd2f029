// kairos_loop_system.hpp: KairosLoopSystem, kairos in poll mode on an epoll loop thread of its own
// behind the workload adapter (system.hpp): the loop an application would write
// (docs/poll-mode.md, examples/epoll_loop.cpp).
//   loop:  d = next_deadline(); timerfd armed at d (TFD_TIMER_ABSTIME, CLOCK_MONOTONIC, the
//          clock of SteadyClock); epoll_wait(-1) on the timerfd, the scheduler's wake fd and a
//          kick eventfd of the adapter's own (drain, destruction); poll(), then the handlers.
//   kairos-loop         the wake fd registered: a submission from another thread whose deadline is
//                       earlier than the one the loop sleeps for wakes it (Scheduler::wake_fd()).
//   kairos-loop-nowake  the wake fd not registered: the loop sleeps until the deadline it read
//                       (1 ms when nothing is pending, or it would never look again), the pattern
//                       docs/poll-mode.md showed before the wake existed. Earlier submissions run
//                       when the loop next wakes (late: W9 shows how late). The scheduler still
//                       signals its wakes (counted), nobody listens.
// Threads: the loop thread polls; any thread submits and cancels. loop_wakes(): the wakes the
//          scheduler signalled (ShardStats::loop_wakes), read by W9 per submission;
//          wake_fd_seen(): the loop's iterations that found the wake fd readable (relaxed: a
//          count W9 reads after the run), which W9 compares with the wakes signalled.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <kairos/kairos.hpp>

#include "system.hpp"

namespace kairos::perf {

class KairosLoopSystem {
 public:
  using Handle = kairos::ScheduledFuture<void>;
  static constexpr bool kAbsoluteDeadlines = true;

  explicit KairosLoopSystem(const SystemConfig& c) : use_wake_(c.wait == "wake-fd"), sched_(options(c)) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    timer_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    kick_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_ < 0 || timer_ < 0 || kick_ < 0) throw std::runtime_error("kairos-loop: epoll, timerfd or eventfd failed");
    watch(timer_);
    watch(kick_);
    if (use_wake_) watch(sched_.wake_fd());
    int cpu = c.cpus.empty() ? -1 : c.cpus.front();
    loop_ = std::thread([this, cpu] {
      if (cpu >= 0) pin_this_thread(cpu);
      run();
    });
  }
  ~KairosLoopSystem() {
    stop_.store(true, std::memory_order_release);
    kick();
    loop_.join();
    sched_.shutdown_now().clear();
    close(kick_);
    close(timer_);
    close(epoll_);
  }
  KairosLoopSystem(const KairosLoopSystem&) = delete;
  KairosLoopSystem& operator=(const KairosLoopSystem&) = delete;

  template <class F>
  Handle schedule(F&& f, std::int64_t delay_ns) {
    return sched_.schedule(std::forward<F>(f), std::chrono::nanoseconds(delay_ns));
  }
  template <class F>
  Handle schedule_at(F&& f, std::int64_t deadline_ns) {
    return sched_.schedule_at(std::forward<F>(f), kairos::SteadyClock::time_point(std::chrono::nanoseconds(deadline_ns)));
  }
  template <class F>
  Handle schedule_at_fixed_rate(F&& f, std::int64_t initial_delay_ns, std::int64_t period_ns) {
    return sched_.schedule_at_fixed_rate(std::forward<F>(f), std::chrono::nanoseconds(initial_delay_ns),
                                         std::chrono::nanoseconds(period_ns));
  }
  template <class F>
  void execute(F&& f) {
    sched_.execute(std::forward<F>(f));
  }
  // W1 --w1-post: a delayed task with no handle (execute_after).
  template <class F>
  void post(F&& f, std::int64_t delay_ns) {
    sched_.execute_after(std::forward<F>(f), std::chrono::nanoseconds(delay_ns));
  }
  static bool cancel(Handle& h) { return h.cancel(); }
  std::size_t queue_size() { return sched_.queue_size(); }
  // Applied once the loop has polled after the call: kicked, then waited for (wait_idle off the
  // loop's thread waits for the loop).
  bool drain(std::chrono::nanoseconds timeout) {
    kick();
    return sched_.wait_idle(timeout);
  }
  std::uint64_t loop_wakes() const {
    std::uint64_t n = 0;
    for (const auto& s : sched_.stats().shards) n += s.loop_wakes;
    return n;
  }
  std::uint64_t wake_fd_seen() const { return wake_fd_seen_.load(std::memory_order_relaxed); }
  bool listens_to_wakes() const noexcept { return use_wake_; }

 private:
  static kairos::Options options(const SystemConfig& c) {
    kairos::Options o;
    o.shards = 1;
    o.poll_mode = true;
    o.remove_on_cancel = c.remove_on_cancel;
    return o;
  }
  void watch(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) throw std::runtime_error("kairos-loop: epoll_ctl failed");
  }
  void kick() {
    std::uint64_t one = 1;
    (void)!write(kick_, &one, sizeof one);
  }
  void run() {
    epoll_event events[4];
    while (!stop_.load(std::memory_order_acquire)) {
      // Arms the wake (and reads the wake fd back to 0): from here a submission earlier than d
      // makes the wake fd readable.
      std::optional<kairos::SteadyClock::time_point> d = sched_.next_deadline();
      itimerspec spec{};
      if (!d && !use_wake_) d = kairos::SteadyClock::now() + std::chrono::milliseconds(1);
      if (d) {
        std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d->time_since_epoch()).count();
        if (ns <= 0) ns = 1;  // a zero it_value would disarm the timer
        spec.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
        spec.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
      }
      timerfd_settime(timer_, TFD_TIMER_ABSTIME, &spec, nullptr);  // all zero: disarmed
      int n = epoll_wait(epoll_, events, 4, -1);
      sched_.poll();  // first: the loop is awake (disarms the wake)
      for (int i = 0; i < n; ++i) {
        std::uint64_t v;
        if (events[i].data.fd == timer_ || events[i].data.fd == kick_) (void)!read(events[i].data.fd, &v, sizeof v);
        // the wake fd: next_deadline() reads it back
        else wake_fd_seen_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

  bool use_wake_;
  kairos::Scheduler sched_;
  int epoll_ = -1;
  int timer_ = -1;
  int kick_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> wake_fd_seen_{0};
  std::thread loop_;
};

}  // namespace kairos::perf
