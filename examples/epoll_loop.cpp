// epoll_loop.cpp: kairos timers on your own epoll loop (poll mode), woken in time by other threads.
// The pattern of docs/poll-mode.md:
//   loop thread:  d = next_deadline();                 // arms the wake, reads it back
//                 timerfd_settime(tfd, TFD_TIMER_ABSTIME, d)   // CLOCK_MONOTONIC = SteadyClock
//                 epoll_wait(-1) on { tfd, wake_fd(), the loop's own fds }
//                 poll(); then the loop's own handlers  // poll first: disarms the wake
//   other thread: schedule(...) with a deadline earlier than d  -> wake_fd() becomes readable
// What it shows (exit 0 iff all held): with a 10 s timer pending, the loop sleeps; a thread
// submits 200 timeouts with random delays of 1..20 ms, some earlier than anything pending: each
// runs on the loop's thread, never early and in time (well before the 10 s timer, a generous
// bound for a loaded machine); a submission later than the pending deadline signals no wake
// (ShardStats::loop_wakes counted before and after); the loop saw the wake fd readable at most
// twice per wake signalled (a level-triggered epoll on a fd nobody read back would spin).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <kairos/kairos.hpp>

using namespace std::chrono_literals;
using Clock = kairos::SteadyClock;

namespace {

std::uint64_t loop_wakes(const kairos::Scheduler& s) {
  std::uint64_t n = 0;
  for (const auto& shard : s.stats().shards) n += shard.loop_wakes;
  return n;
}

// Arms the timerfd at an absolute CLOCK_MONOTONIC deadline; nullopt disarms it.
void arm_timer(int tfd, std::optional<Clock::time_point> d) {
  itimerspec spec{};
  if (d) {
    std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d->time_since_epoch()).count();
    if (ns <= 0) ns = 1;  // a zero it_value would disarm
    spec.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  }
  timerfd_settime(tfd, TFD_TIMER_ABSTIME, &spec, nullptr);
}

}  // namespace

int main() {
  kairos::Options options;
  options.poll_mode = true;
  kairos::Scheduler s(options);

  int ep = epoll_create1(EPOLL_CLOEXEC);
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  int quit = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);  // the loop's own fd: ends it
  for (int fd : {tfd, s.wake_fd(), quit}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }

  auto far = s.schedule([] {}, 10s);  // the loop sleeps for this unless woken
  std::atomic<std::thread::id> loop_id{};
  std::atomic<int> wakeups{0};
  std::thread loop([&] {
    loop_id.store(std::this_thread::get_id());
    epoll_event events[3];
    for (;;) {
      arm_timer(tfd, s.next_deadline());  // next_deadline() also reads the wake fd back to 0
      int n = epoll_wait(ep, events, 3, -1);
      s.poll();  // first, before the loop's own handlers: the loop is awake (disarms the wake)
      for (int i = 0; i < n; ++i) {
        std::uint64_t v;
        if (events[i].data.fd == quit) return;
        if (events[i].data.fd == tfd) (void)!read(tfd, &v, sizeof v);
        if (events[i].data.fd == s.wake_fd()) wakeups.fetch_add(1);
      }
    }
  });

  constexpr int kTimeouts = 200;
  struct Slot {
    Clock::time_point due{};
    std::atomic<std::int64_t> ran_ns{0};
    std::atomic<bool> on_loop{false};
  };
  std::vector<Slot> slots(kTimeouts);
  std::thread submitter([&] {
    std::mt19937 rng(17);
    std::uniform_int_distribution<int> delay_us(1'000, 20'000), gap_us(0, 2'000);
    for (auto& slot : slots) {
      std::this_thread::sleep_for(std::chrono::microseconds(gap_us(rng)));
      auto d = std::chrono::microseconds(delay_us(rng));
      slot.due = Clock::now() + d;
      Slot* p = &slot;
      s.schedule_at([p, &loop_id] {
        p->on_loop.store(std::this_thread::get_id() == loop_id.load());
        p->ran_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
      }, slot.due);
    }
  });
  submitter.join();
  // Every timeout is due within 20 ms of its submission; 5 s is a bound only a missing wake hits
  // (the loop would sleep until the 10 s timer).
  auto until = Clock::now() + 5s;
  auto all_ran = [&] {
    for (auto& slot : slots)
      if (slot.ran_ns.load() == 0) return false;
    return true;
  };
  while (!all_ran() && Clock::now() < until) std::this_thread::sleep_for(1ms);

  int early = 0, missing = 0, off_loop = 0;
  std::int64_t worst = 0;
  for (auto& slot : slots) {
    std::int64_t ran = slot.ran_ns.load();
    if (ran == 0) { ++missing; continue; }
    std::int64_t late = ran - std::chrono::duration_cast<std::chrono::nanoseconds>(slot.due.time_since_epoch()).count();
    if (late < 0) ++early;
    worst = std::max(worst, late);
    if (!slot.on_loop.load()) ++off_loop;
  }

  // A later deadline than the pending one signals nothing (the loop is armed for the 10 s timer
  // or earlier; nothing else is pending now).
  std::uint64_t before = loop_wakes(s);
  auto later = s.schedule([] {}, 1h);
  std::this_thread::sleep_for(20ms);
  bool no_wake_for_later = loop_wakes(s) == before;

  std::uint64_t q = 1;
  (void)!write(quit, &q, sizeof q);
  loop.join();
  far.cancel();
  later.cancel();
  std::printf("%d timeouts from another thread: %d missing, %d early, %d not on the loop thread, worst %.2f ms late\n",
              kTimeouts, missing, early, off_loop, static_cast<double>(worst) / 1e6);
  const double per_wake = before > 0 ? wakeups.load() / static_cast<double>(before) : 0.0;
  const bool once_per_wake = static_cast<std::uint64_t>(wakeups.load()) <= 2 * before;
  std::printf("wakes signalled: %llu; the loop saw the wake fd readable %d times (%.2f per wake, at most 2 allowed); "
              "a later deadline woke nothing: %s\n",
              static_cast<unsigned long long>(before), wakeups.load(), per_wake, no_wake_for_later ? "yes" : "NO");
  close(quit);
  close(tfd);
  close(ep);
  bool ok = missing == 0 && early == 0 && off_loop == 0 && no_wake_for_later && before > 0 && once_per_wake;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
