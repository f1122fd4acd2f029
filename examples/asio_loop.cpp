// asio_loop.cpp: kairos timers on a Boost.Asio io_context thread (poll mode), beside Asio's own
// handlers, woken in time by other threads, through kairos::asio::PollBridge (kairos/asio.hpp).
// Boost (header-only) is this example's dependency; the kairos library never needs it. The
// bridge's pattern, all on the io_context's thread:
//   pass():   poll(); d = next_deadline();        // next_deadline() arms the wake
//             steady_timer.expires_at(d) + async_wait(-> pass)   // kairos's next deadline
//   the wake fd in a posix::stream_descriptor: async_wait(wait_read, -> pass, wait again)
// (The descriptor holds a dup() of the wake fd: a stream_descriptor closes its fd, and the
// scheduler's own must never be closed.)
// What it shows (exit 0 iff all held): an Asio periodic handler and kairos timers share the
// thread; with a 10 s kairos timer pending, another thread submits 200 timeouts with random delays
// of 1..20 ms: each runs on the io_context thread, never early, in time (well before the 10 s timer);
// a kairos::asio::async_sleep_for completes its Asio handler there too; the wake fd starts at most
// 4 passes per wake kairos signalled, on average, and the loop does not spin (all its passes stay
// within twice the timeouts and wakes).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <kairos/asio.hpp>
#include <kairos/kairos.hpp>

using namespace std::chrono_literals;
using Clock = kairos::SteadyClock;

int main() {
  kairos::Options options;
  options.poll_mode = true;
  kairos::Scheduler s(options);
  boost::asio::io_context io;
  kairos::asio::PollBridge bridge(io, s);  // construct and use on the io_context's thread (not running yet)

  // An Asio handler of the application's own, on the same thread: a 5 ms tick.
  boost::asio::steady_timer tick(io);
  std::atomic<int> ticks{0};
  bool stopping = false;  // the io_context's thread only
  std::function<void(const boost::system::error_code&)> on_tick = [&](const boost::system::error_code& ec) {
    // A tick that expired just before the cancel below still runs, with no error: without the
    // flag it would wait again, and io.run() would never return.
    if (ec || stopping) return;
    ticks.fetch_add(1);
    tick.expires_after(5ms);
    tick.async_wait(on_tick);
  };
  tick.expires_after(5ms);
  tick.async_wait(on_tick);

  auto far = s.schedule([] {}, 10s);
  std::atomic<std::thread::id> io_id{};
  std::atomic<bool> slept_on_io{false};
  std::thread io_thread([&] {
    io_id.store(std::this_thread::get_id());
    bridge.start();
    // An Asio operation on kairos: its handler runs here, on the io_context's thread.
    kairos::asio::async_sleep_for(s, 3ms, boost::asio::bind_executor(io, [&](boost::system::error_code ec) {
      slept_on_io.store(!ec && std::this_thread::get_id() == io_id.load());
    }));
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
    stopping = true;
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
  std::printf("kairos::asio::async_sleep_for's handler %s on the io_context thread\n",
              slept_on_io.load() ? "ran" : "did NOT run");
  // The loop's passes. A wake kairos signalled starts one pass through the wake fd (the pass's
  // next_deadline() reads the fd back): more fd passes than wakes means a wake fd left readable.
  // The timer starts one pass per deadline that came without a wake (most of the 200 here: only
  // a submission earlier than the armed deadline wakes the loop), so all passes together stay
  // within twice the timeouts and wakes; a loop that spins does not.
  std::uint64_t signalled = s.stats().total().loop_wakes;
  double fd_passes_per_wake = static_cast<double>(bridge.wakes()) / static_cast<double>(std::max<std::uint64_t>(signalled, 1));
  bool passes_bounded = bridge.iterations() <= 2 * (kTimeouts + signalled + 2);
  std::printf("%llu loop passes, %llu of them started by the wake fd, %llu wakes signalled: %.2f fd passes per wake\n",
              static_cast<unsigned long long>(bridge.iterations()), static_cast<unsigned long long>(bridge.wakes()),
              static_cast<unsigned long long>(signalled), fd_passes_per_wake);
  bool ok = missing == 0 && early == 0 && off_io == 0 && ticks.load() > 0 && slept_on_io.load() &&
            fd_passes_per_wake <= 4.0 && passes_bounded;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
