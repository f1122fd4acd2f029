// coro_sleep.cpp: kairos from C++20 coroutines of your own type (kairos/coro.hpp; docs/coroutines.md).
// A dozen-line eager coroutine type is enough: kairos's awaiters work with any. One coroutine
// sleeps three times (never early), awaits a task's value, and is then cancelled by a stop token
// while it sleeps for an hour: it resumes once, with CancelledError, on the stopping thread.
// Exit 0 iff all of that happened.
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdio>
#include <exception>
#include <stop_token>
#include <thread>

#include <kairos/kairos.hpp>

using namespace std::chrono_literals;

// Starts at once; nobody awaits it; its frame ends with it.
struct Detached {
  struct promise_type {
    Detached get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
};

struct Report {
  std::atomic<int> sleeps_on_time{0};
  std::atomic<int> value{0};
  std::atomic<bool> cancelled{false};
  std::atomic<bool> done{false};
};

Detached session(kairos::Scheduler& s, std::stop_token stop, Report& r) {
  for (int i = 0; i < 3; ++i) {
    auto before = s.now();
    co_await kairos::sleep_for(s, 2ms, stop);
    if (s.now() - before >= 2ms) r.sleeps_on_time.fetch_add(1);
    std::printf("slept 2 ms (%d), on a scheduler thread\n", i + 1);
  }
  r.value.store(co_await s.schedule([] { return 42; }, 1ms));
  std::printf("awaited a task: %d\n", r.value.load());
  try {
    co_await kairos::sleep_for(s, 1h, stop);
  } catch (const kairos::CancelledError&) {
    r.cancelled.store(true);
    std::printf("the hour-long sleep was cancelled by the stop token\n");
  }
  r.done.store(true);
}

int main() {
  kairos::Options options;
  options.shards = 1;
  kairos::Scheduler s(options);
  std::stop_source stop;
  Report r;
  session(s, stop.get_token(), r);
  // The session reaches its hour-long sleep after ~7 ms; wait for the value, then stop it.
  for (int i = 0; i < 20000 && r.value.load() == 0; ++i) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(5ms);  // let it begin the long sleep (a stop before it: at once)
  stop.request_stop();
  bool ok = r.done.load() && r.cancelled.load() && r.sleeps_on_time.load() == 3 && r.value.load() == 42;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
