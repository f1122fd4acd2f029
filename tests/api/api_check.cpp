// api_check.cpp: compile-only check that every call docs/api.md documents exists with the
// documented types. Built by the ctest api_check_compiles (target kairos_api_check); never run.
// A renamed or dropped public name, or a changed result type, fails the build here.
#include <kairos/kairos.hpp>
#include <kairos/pacer.hpp>  // the latency kit (kairos::latency): latency_tools() below

#include <chrono>
#include <concepts>
#include <coroutine>
#include <exception>
#include <future>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kairos_api_check {

using namespace std::chrono_literals;

// Types and aliases.
static_assert(std::is_same_v<kairos::Duration, std::chrono::nanoseconds>);
static_assert(std::is_same_v<kairos::Scheduler, kairos::BasicScheduler<kairos::SteadyClock>>);
static_assert(std::is_same_v<kairos::SteadyClock::time_point, std::chrono::steady_clock::time_point>);
static_assert(std::is_same_v<kairos::ManualClock::time_point,
                             std::chrono::time_point<kairos::ManualClock, kairos::Duration>>);
static_assert(std::derived_from<kairos::RejectedExecution, std::runtime_error>);
static_assert(std::derived_from<kairos::CancelledError, std::runtime_error>);
static_assert(!std::is_copy_constructible_v<kairos::ManualClock>);
static_assert(!std::is_copy_constructible_v<kairos::Task> && std::is_move_constructible_v<kairos::Task>);
static_assert(!std::is_copy_constructible_v<kairos::Scheduler>);
static_assert(std::is_copy_constructible_v<kairos::ScheduledFuture<int>>);
static_assert(std::is_nothrow_move_constructible_v<kairos::ScheduledFuture<int>>);

// Options: every field with its documented default.
inline kairos::Options options_with_every_field() {
  kairos::Options o;
  unsigned shards = o.shards;
  unsigned threads = o.threads_per_shard;
  std::vector<int> cpus = o.cpus;
  kairos::WaitPolicy w = o.wait;
  kairos::Rejection r = o.rejection;
  std::size_t capacity = o.capacity;
  bool flags = o.remove_on_cancel || o.execute_existing_delayed_tasks_after_shutdown ||
               o.continue_existing_periodic_tasks_after_shutdown || o.record_lateness || o.poll_mode;
  std::function<void(std::exception_ptr)> handler = o.on_uncaught;
  std::string name = o.name;
  (void)shards, (void)threads, (void)cpus, (void)w, (void)r, (void)capacity, (void)flags, (void)handler, (void)name;
  o.wait = kairos::WaitPolicy::sleep();
  o.wait = kairos::WaitPolicy::spin();
  o.wait = kairos::WaitPolicy::hybrid(25us);
  o.wait = kairos::WaitPolicy::hybrid(std::chrono::duration<double, std::micro>(12.5));
  o.wait = kairos::WaitPolicy::adaptive();
  for (kairos::Rejection each : {kairos::Rejection::abort, kairos::Rejection::caller_runs,
                                 kairos::Rejection::discard, kairos::Rejection::discard_oldest})
    o.rejection = each;
  o.on_uncaught = [](std::exception_ptr) {};
  return o;
}

// Every submission form, with the result type docs/api.md gives it.
template <class Clock>
void submissions(kairos::BasicScheduler<Clock>& s, typename Clock::time_point at) {
  kairos::ScheduledFuture<int> a = s.schedule([] { return 1; }, 3ms);
  kairos::ScheduledFuture<void> b = s.schedule([] {}, std::chrono::duration<double>(0.5));
  kairos::ScheduledFuture<long> c = s.schedule_at([] { return 2L; }, at);
  kairos::ScheduledFuture<void> d = s.schedule_at_fixed_rate([] {}, 0ms, 1ms);
  kairos::ScheduledFuture<void> e = s.schedule_with_fixed_delay([] {}, 1ms, 2ms);
  kairos::ScheduledFuture<void> f = s.schedule([](std::stop_token t) { (void)t.stop_requested(); }, 0ns);
  kairos::ScheduledFuture<double> g = s.submit([] { return 0.5; });
  s.execute([] {});
  kairos::ScheduledFuture<int> h = s.schedule_rearmable([] { return 3; }, 100ms);
  kairos::ScheduledFuture<void> i = s.schedule_rearmable_at([] {}, at);
  (void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g, (void)h, (void)i;
}

// The future's calls.
inline void future_calls(kairos::ScheduledFuture<int> f, kairos::ScheduledFuture<void> v) {
  kairos::ScheduledFuture<int> copy = f;
  kairos::ScheduledFuture<int> empty;
  bool valid = empty.valid();
  int value = copy.get();
  v.get();
  std::future_status st = f.wait_for(1ms);
  bool cancelled = f.cancel() || f.cancel(true);
  bool state = f.is_done() || f.is_cancelled() || f.is_periodic();
  kairos::Duration left = f.delay();
  bool rearmed = f.is_rearmable() && f.rearm(100ms) && v.rearm(std::chrono::duration<double>(0.1));
  f.wait();
  std::future_status until = f.wait_until(kairos::SteadyClock::now() + 1ms);
  std::future_status until_system = v.wait_until(std::chrono::system_clock::now() + 1ms);
  bool rearmed_at = f.rearm_at(kairos::SteadyClock::now() + 1ms) || v.rearm_at(kairos::ManualClock::time_point(1ms));
  (void)valid, (void)value, (void)st, (void)cancelled, (void)state, (void)left, (void)rearmed;
  (void)until, (void)until_system, (void)rearmed_at;
}

// The scheduler's lifecycle, policies and introspection, on both clocks.
template <class Clock>
void lifecycle(kairos::BasicScheduler<Clock>& s) {
  s.set_remove_on_cancel(true);
  s.set_execute_existing_delayed_tasks_after_shutdown(false);
  s.set_continue_existing_periodic_tasks_after_shutdown(true);
  std::size_t n = s.queue_size();
  bool idle = s.wait_idle(10ms);
  kairos::SchedulerStats stats = s.stats();
  kairos::ShardStats total = stats.total();
  std::uint64_t counts = total.submitted + total.ran + total.cancelled + total.rejected + total.pending +
                         total.periodic_failures + total.lateness.count();
  typename Clock::time_point now = s.now();
  s.shutdown();
  std::vector<kairos::Task> left = s.shutdown_now();
  for (kairos::Task& t : left) {
    bool periodic = t.is_periodic();
    (void)periodic;
    t.run();
  }
  bool done = s.await_termination(1s);
  bool states = s.is_shutdown() || s.is_terminating() || s.is_terminated();
  (void)n, (void)idle, (void)counts, (void)now, (void)done, (void)states;
}

// Poll mode (docs/poll-mode.md): the owner's loop runs the due tasks, on both clocks.
template <class Clock>
void poll_loop(kairos::BasicScheduler<Clock>& s) {
  std::size_t ran = s.poll(s.now(), 64) + s.poll(s.now()) + s.poll();
  std::optional<typename Clock::time_point> next = s.next_deadline();
  (void)ran, (void)next;
}

inline void steady_scheduler() {
  kairos::Scheduler s{options_with_every_field()};
  submissions(s, kairos::SteadyClock::now() + 1ms);
  lifecycle(s);
  kairos::Options inline_loop;
  inline_loop.poll_mode = true;
  kairos::Scheduler polled{inline_loop};
  poll_loop(polled);
}

inline void manual_scheduler() {
  kairos::ManualClock clock;
  kairos::ManualClock::time_point start = clock.now();
  kairos::BasicScheduler<kairos::ManualClock> s{kairos::Options{}, clock};
  submissions(s, start + 5ms);
  clock.advance(5ms);
  clock.advance(std::chrono::seconds(1));
  lifecycle(s);
  kairos::Options inline_loop;
  inline_loop.poll_mode = true;
  kairos::BasicScheduler<kairos::ManualClock> polled{inline_loop, clock};
  poll_loop(polled);
}

// Latency tools.
inline void latency_tools() {
  kairos::LatencyHistogram h;
  h.record(std::int64_t{120});
  h.record(std::chrono::microseconds(3));
  kairos::LatencyHistogram other;
  other.record(std::int64_t{-5});
  h.merge(other);
  std::int64_t p99 = h.value_at_percentile(99.0);
  std::uint64_t counts = h.count() + h.below_zero();
  double mean = h.mean();
  std::int64_t range = h.max() - h.min();
  std::string json = h.to_json();
  h.reset();
  (void)p99, (void)counts, (void)mean, (void)range, (void)json, (void)h.empty();

  kairos::Options options;
  options.wait = kairos::WaitPolicy::sleep();
  kairos::Scheduler s{options};
  kairos::Pacer pacer{s};
  kairos::PacerReport r = pacer.run_count([] {}, kairos::Pacer::period_for_rate(1000.0), 10);
  kairos::PacerReport t = pacer.run_for([] {}, 1ms, 10ms);
  double rate = r.achieved_rate + t.achieved_rate;
  std::uint64_t calls = r.calls;
  (void)rate, (void)calls, (void)r.histogram.count(), (void)r.max_behind.count();
  pacer.set_warmup(5);
  pacer.set_concurrency(2);
  pacer.set_intervals(1s, [](const kairos::PacerInterval& i) { (void)i.histogram.count(), (void)i.start; });
  pacer.set_progress(1s, [](std::uint64_t done, std::uint64_t total) { (void)done, (void)total; });
  std::string text = kairos::format_report(r);
  (void)text, (void)r.behind_at_end, (void)r.warmup_calls, (void)r.concurrency, (void)r.start_lag, (void)r.service;
}

// Coroutines (kairos/coro.hpp): awaiters any coroutine type can co_await.
struct AnyCoroutine {
  struct promise_type {
    AnyCoroutine get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept {}
  };
};
template <class Clock>
AnyCoroutine coroutines(kairos::BasicScheduler<Clock>& s, typename Clock::time_point at, std::stop_token stop) {
  co_await kairos::sleep_for(s, 1ms);
  co_await kairos::sleep_for(s, 1ms, stop);
  co_await kairos::sleep_until(s, at);
  co_await kairos::sleep_until(s, at, stop);
  kairos::ScheduledFuture<int> f = s.schedule([] { return 1; }, 1ms);
  int v = co_await f;                             // lvalue
  v += co_await s.schedule([] { return 2; }, 0ms);  // temporary
  co_await s.submit([] {});                       // void
  static_assert(std::is_same_v<decltype(kairos::sleep_for(s, 1ms)), kairos::SleepAwaiter<Clock>>);
  static_assert(std::is_same_v<decltype(operator co_await(f)), kairos::FutureAwaiter<int>>);
  (void)v;
}
template AnyCoroutine coroutines(kairos::Scheduler&, kairos::SteadyClock::time_point, std::stop_token);
template AnyCoroutine coroutines(kairos::BasicScheduler<kairos::ManualClock>&, kairos::ManualClock::time_point,
                                 std::stop_token);

}  // namespace kairos_api_check
