// asio_loop.cpp: kairos timers on a Boost.Asio io_context thread (poll mode), beside Asio's own
// handlers, woken in time by other threads. Boost (header-only) is this example's dependency; the
// kairos library never needs it. The pattern, all on the io_context's thread:
//   rearm():  poll(); d = next_deadline();        // next_deadline() arms the wake
//             steady_timer.expires_at(d) + async_wait(-> rearm)   // kairos's next deadline
//   the wake fd in a posix::stream_descriptor: async_wait(wait_read, -> rearm, wait again)
// (The descriptor holds a dup() of the wake fd: a stream_descriptor closes its fd, and the
// scheduler's own must never be closed.)
// What it shows (exit 0 iff all held): an Asio periodic handler and kairos timers share the
// thread; with a 10 s kairos timer pending, another thread submits 200 timeouts with random delays
// of 1..20 ms: each runs on the io_context thread, never early, in time (well before the 10 s timer).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <kairos/kairos.hpp>

using namespace std::chrono_literals;
using Clock = kairos::SteadyClock;

// kairos on an io_context: construct and use on the io_context's thread.
class KairosOnAsio {
 public:
  KairosOnAsio(boost::asio::io_context& io, kairos::Scheduler& s)
      : s_(s), timer_(io), wake_(io, ::dup(s.wake_fd())) {}
  void start() {
    rearm();
    wait_for_wake();
  }
  void stop() {
    stopped_ = true;
    timer_.cancel();
    wake_.cancel();
  }

 private:
  void rearm() {
    if (stopped_) return;
    s_.poll();
    std::optional<Clock::time_point> d = s_.next_deadline();  // arms the wake, reads the fd back
    timer_.expires_at(d ? std::chrono::steady_clock::time_point(d->time_since_epoch())
                        : std::chrono::steady_clock::time_point::max());
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) rearm();  // operation_aborted: a newer expires_at replaced this wait
    });
  }
  void wait_for_wake() {
    wake_.async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
      if (ec || stopped_) return;
      rearm();  // next_deadline() inside reads the wake fd back to 0
      wait_for_wake();
    });
  }

  kairos::Scheduler& s_;
  boost::asio::steady_timer timer_;
  boost::asio::posix::stream_descriptor wake_;
  bool stopped_ = false;
};

int main() {
  kairos::Options options;
  options.poll_mode = true;
  kairos::Scheduler s(options);
  boost::asio::io_context io;
  KairosOnAsio bridge(io, s);

  // An Asio handler of the application's own, on the same thread: a 5 ms tick.
  boost::asio::steady_timer tick(io);
  std::atomic<int> ticks{0};
  std::function<void(const boost::system::error_code&)> on_tick = [&](const boost::system::error_code& ec) {
    if (ec) return;
    ticks.fetch_add(1);
    tick.expires_after(5ms);
    tick.async_wait(on_tick);
  };
  tick.expires_after(5ms);
  tick.async_wait(on_tick);

  auto far = s.schedule([] {}, 10s);
  std::atomic<std::thread::id> io_id{};
  std::thread io_thread([&] {
    io_id.store(std::this_thread::get_id());
    bridge.start();
    io.run();
  });
  while (io_id.load() == std::thread::id{}) std::this_thread::yield();

  constexpr int kTimeouts = 200;
  struct Slot {
    Clock::time_point due{};
    std::atomic<std::int64_t> ran_ns{0};
    std::atomic<bool> on_io{false};
  };
  std::vector<Slot> slots(kTimeouts);
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> delay_us(1'000, 20'000), gap_us(0, 2'000);
  for (auto& slot : slots) {
    std::this_thread::sleep_for(std::chrono::microseconds(gap_us(rng)));
    slot.due = Clock::now() + std::chrono::microseconds(delay_us(rng));
    Slot* p = &slot;
    s.schedule_at([p, &io_id] {
      p->on_io.store(std::this_thread::get_id() == io_id.load());
      p->ran_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
    }, slot.due);
  }
  auto until = Clock::now() + 5s;  // all are due within 20 ms; only a missing wake reaches this
  auto all_ran = [&] {
    for (auto& slot : slots)
      if (slot.ran_ns.load() == 0) return false;
    return true;
  };
  while (!all_ran() && Clock::now() < until) std::this_thread::sleep_for(1ms);

  boost::asio::post(io, [&] {
    bridge.stop();
    tick.cancel();
  });
  io_thread.join();
  far.cancel();

  int early = 0, missing = 0, off_io = 0;
  std::int64_t worst = 0;
  for (auto& slot : slots) {
    std::int64_t ran = slot.ran_ns.load();
    if (ran == 0) { ++missing; continue; }
    std::int64_t late = ran - std::chrono::duration_cast<std::chrono::nanoseconds>(slot.due.time_since_epoch()).count();
    if (late < 0) ++early;
    worst = std::max(worst, late);
    if (!slot.on_io.load()) ++off_io;
  }
  std::printf("%d timeouts from another thread on the io_context thread: %d missing, %d early, %d elsewhere, worst %.2f ms late; %d Asio ticks beside them\n",
              kTimeouts, missing, early, off_io, static_cast<double>(worst) / 1e6, ticks.load());
  bool ok = missing == 0 && early == 0 && off_io == 0 && ticks.load() > 0;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
