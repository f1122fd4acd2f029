// pacer.hpp: runs a function at a fixed rate on a kairos scheduler, open loop, and measures
// each call from the moment it was meant to start.
//
// Schedule: call n is meant to start at start + n * period, where start is the clock read just
//   before the run is submitted plus a start delay. The pacer never waits for a call to finish
//   before deciding when the next one is due (open loop): it is one fixed-rate task
//   (BasicScheduler::schedule_at_fixed_rate), so the schedule does not drift, and a call that
//   takes longer than the period leaves later calls due at once, run back to back until the
//   pacer has caught up (fixed-rate catch-up). Calls never overlap; each happens-before the next.
// Measure: each call's latency is its end minus its intended start, so time spent waiting
//   behind a slow call is counted, not hidden (no coordinated omission). A call that starts
//   late shows as such in max_behind.
// Threads: run_for() and run_count() block the calling thread until the last call returns; the
//   function runs on a scheduler thread. One run at a time per BasicPacer object. Do not start a
//   run from inside a task of the same scheduler: the calls may need the very thread that waits.
// Errors:  a period <= 0 throws std::invalid_argument. An exception from the function stops the
//   run and is rethrown by run_for()/run_count(). A run that the scheduler ends (shutdown,
//   shutdown_now, or a rejected submission) throws CancelledError / RejectedExecution.
//
// Example: pace a function at 100,000 calls/s for 5 s and print its latency percentiles.
//
//   #include <kairos/kairos.hpp>
//   #include <cstdio>
//
//   kairos::Scheduler scheduler;
//   kairos::Pacer pacer{scheduler};
//   kairos::PacerReport r = pacer.run_for([] { send_one_order(); },
//                                         kairos::Pacer::period_for_rate(100'000), std::chrono::seconds(5));
//   std::printf("%llu calls, %.0f/s (asked %.0f/s), max behind %lld ns\n",
//               (unsigned long long)r.calls, r.achieved_rate, r.intended_rate,
//               (long long)r.max_behind.count());
//   std::printf("p50 %lld ns  p99 %lld ns  p99.9 %lld ns\n",
//               (long long)r.histogram.value_at_percentile(50),
//               (long long)r.histogram.value_at_percentile(99),
//               (long long)r.histogram.value_at_percentile(99.9));
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <kairos/clock.hpp>
#include <kairos/duration.hpp>
#include <kairos/errors.hpp>
#include <kairos/future.hpp>
#include <kairos/latency_histogram.hpp>
#include <kairos/scheduler.hpp>

namespace kairos {

struct PacerReport {
  std::uint64_t calls = 0;       // calls made (the function returned)
  Duration period{};             // asked for
  double intended_rate = 0;      // calls per second asked for: 1 s / period
  double achieved_rate = 0;      // (calls - 1) / (start of the last call - intended start of the
                                 // first): at most intended_rate, lower by how far behind the run
                                 // was at its end; 0 with fewer than 2 calls
  Duration elapsed{};            // from the intended start of the first call to the end of the last
  Duration max_behind{};         // the most any call started after its intended start
  Duration behind_at_end{};      // how far after its intended start the last call started
  LatencyHistogram histogram;    // response time, per call: its end minus its intended start, in ns
  LatencyHistogram service;      // service time, per call: its end minus its actual start, in ns
  LatencyHistogram start_lag;    // pacing error, per call: its actual start minus its intended start
  std::uint64_t warmup_calls = 0;  // calls made before the measured ones, in none of the above
};

// The report as text: a wrk2-style summary (rate, percentiles of response and service time)
// and the response-time spectrum in HdrHistogram's .hgrm layout (values in us).
inline std::string format_report(const PacerReport& r) {
  auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1e3; };
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %llu calls (+%llu warm-up) in %.3f s, %.1f calls/s (asked %.1f), fell behind by at most %.3f us\n",
                static_cast<unsigned long long>(r.calls), static_cast<unsigned long long>(r.warmup_calls),
                static_cast<double>(r.elapsed.count()) / 1e9, r.achieved_rate, r.intended_rate, us(r.max_behind.count()));
  out += buf;
  std::snprintf(buf, sizeof buf, "  %-22s %10s %10s %10s %10s %10s %10s\n", "(us)", "mean", "stddev", "p50", "p99",
                "p99.9", "max");
  out += buf;
  const std::pair<const char*, const LatencyHistogram*> rows[] = {
      {"response (corrected)", &r.histogram}, {"service (uncorrected)", &r.service}, {"start lag", &r.start_lag}};
  for (const auto& [name, h] : rows) {
    std::snprintf(buf, sizeof buf, "  %-22s %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", name, h->mean() / 1e3,
                  h->stddev() / 1e3, us(h->value_at_percentile(50)), us(h->value_at_percentile(99)),
                  us(h->value_at_percentile(99.9)), us(h->max()));
    out += buf;
  }
  out += "  response time spectrum (us):\n";
  std::snprintf(buf, sizeof buf, "%12s %14s %10s %14s\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
  out += buf;
  const LatencyHistogram& h = r.histogram;
  for (double p : {0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    const std::uint64_t rank = LatencyHistogram::rank_at_percentile(p, h.count());
    if (p < 100.0)
      std::snprintf(buf, sizeof buf, "%12.3f %14.12f %10llu %14.2f\n", us(h.value_at_percentile(p)), p / 100,
                    static_cast<unsigned long long>(rank), 1 / (1 - p / 100));
    else
      std::snprintf(buf, sizeof buf, "%12.3f %14.12f %10llu\n", us(h.value_at_percentile(p)), 1.0,
                    static_cast<unsigned long long>(rank));
    out += buf;
  }
  return out;
}

template <class Clock>
class BasicPacer {
 public:
  static constexpr Duration kDefaultStartDelay = std::chrono::milliseconds(1);

  // start_delay: from the submission of a run to the intended start of its first call; it lets
  // the scheduler's leader settle on the new deadline before the schedule begins.
  explicit BasicPacer(BasicScheduler<Clock>& scheduler, Duration start_delay = kDefaultStartDelay)
    requires std::is_same_v<Clock, SteadyClock>
      : scheduler_(scheduler), clock_(nullptr), start_delay_(checked_start_delay(start_delay)) {}
  BasicPacer(BasicScheduler<Clock>& scheduler, Clock& clock, Duration start_delay = kDefaultStartDelay)
      : scheduler_(scheduler), clock_(&clock), start_delay_(checked_start_delay(start_delay)) {}

  // 1 s / calls_per_second, rounded to the nearest nanosecond (at least 1 ns).
  static Duration period_for_rate(double calls_per_second) {
    if (!(calls_per_second > 0) || calls_per_second > 1e9)
      throw std::invalid_argument("kairos::Pacer: a rate must be in (0, 1e9] calls/s, got " +
                                  std::to_string(calls_per_second));
    const auto ns = static_cast<std::int64_t>(1e9 / calls_per_second + 0.5);
    return Duration(ns < 1 ? 1 : ns);
  }

  // Calls f every period for `duration`: the calls whose intended start falls before
  // start + duration, that is ceil(duration / period) of them. f is invoked as
  // f(n, intended) with the call's index n (std::uint64_t) and its intended start (a
  // Clock::time_point) if it accepts both, else as f(n), else as f().
  template <class F, class R1, class P1, class R2, class P2>
  PacerReport run_for(F&& f, std::chrono::duration<R1, P1> period, std::chrono::duration<R2, P2> duration) {
    const std::int64_t p = checked_period(period);
    const std::int64_t d = std::chrono::ceil<Duration>(duration).count();
    const std::uint64_t calls = d <= 0 ? 0 : static_cast<std::uint64_t>(d / p + (d % p != 0));
    return run(std::forward<F>(f), p, calls);
  }

  // The first `calls` calls of every later run are a warm-up: made on the same schedule, counted
  // in warmup_calls, and left out of every other figure of the report.
  void set_warmup(std::uint64_t calls) noexcept { warmup_ = calls; }

  // Calls f `calls` times, one every period.
  template <class F, class Rep, class Period>
  PacerReport run_count(F&& f, std::chrono::duration<Rep, Period> period, std::uint64_t calls) {
    return run(std::forward<F>(f), checked_period(period), calls);
  }

 private:
  template <class Fn>
  struct State {
    State(Fn fn, const Clock* c, std::int64_t p, std::uint64_t n)
        : f(std::move(fn)), clock(c), period(p), total(n) {}
    // -- set before submission, read-only after ----------------------------------------
    Fn f;
    const Clock* clock;
    std::int64_t period;
    std::uint64_t total;
    std::int64_t intended0 = 0;
    std::uint64_t warmup = 0;
    // -- written by the runs only (each run happens-before the next); read by the waiting
    //    thread after it saw finished == true under mu, which the last writing run set -----
    std::uint64_t next = 0;          // index of the next call; == total once the run is over
    std::int64_t last_start = 0;
    std::int64_t last_end = 0;
    std::int64_t max_behind = 0;
    std::exception_ptr error;
    LatencyHistogram histogram;
    LatencyHistogram service;
    LatencyHistogram start_lag;
    std::atomic<std::uint64_t> calls_made{0};  // relaxed: progress for an error message only
    // -- shared: guarded by mu ----------------------------------------------------------
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
  };

  template <class Fn>
  struct Body {
    std::shared_ptr<State<Fn>> state;
    void operator()() const {
      State<Fn>& s = *state;
      if (s.next >= s.total) return;  // a run after the last call, before the pacer cancels
      const std::int64_t intended = s.intended0 + static_cast<std::int64_t>(s.next) * s.period;
      const std::int64_t start = now_ns(s.clock);
      try {
        if constexpr (std::is_invocable_v<Fn&, std::uint64_t, typename Clock::time_point>)
          s.f(s.next, typename Clock::time_point(std::chrono::duration_cast<typename Clock::duration>(Duration(intended))));
        else if constexpr (std::is_invocable_v<Fn&, std::uint64_t>) s.f(s.next);
        else s.f();
      } catch (...) {
        s.error = std::current_exception();
        s.next = s.total;
        finish(s);
        return;
      }
      const std::int64_t end = now_ns(s.clock);
      if (s.next >= s.warmup) {
        s.histogram.record(end - intended);
        s.service.record(end - start);
        s.start_lag.record(start - intended);
        if (start - intended > s.max_behind) s.max_behind = start - intended;
      }
      s.last_start = start;
      s.last_end = end;
      s.calls_made.store(s.next + 1, std::memory_order_relaxed);
      if (++s.next == s.total) finish(s);
    }
    static void finish(State<Fn>& s) {
      {
        std::lock_guard lock(s.mu);  // publishes every field above to the waiting thread
        s.finished = true;
      }
      s.cv.notify_all();
    }
  };

  template <class F>
  PacerReport run(F&& f, std::int64_t period, std::uint64_t calls) {
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn&, std::uint64_t, typename Clock::time_point> ||
                      std::is_invocable_v<Fn&, std::uint64_t> || std::is_invocable_v<Fn&>,
                  "kairos::Pacer: the function must be callable as f(), f(std::uint64_t) or "
                  "f(std::uint64_t, Clock::time_point)");
    if (calls > 0 && calls - 1 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() / period))
      throw std::invalid_argument("kairos::Pacer: calls * period does not fit in 292 years");
    PacerReport report;
    report.period = Duration(period);
    report.intended_rate = 1e9 / static_cast<double>(period);
    if (calls == 0) return report;

    const std::uint64_t warmup = warmup_;
    if (calls > std::numeric_limits<std::uint64_t>::max() - warmup)
      throw std::invalid_argument("kairos::Pacer: warm-up plus calls overflow");
    calls += warmup;
    auto state = std::make_shared<State<Fn>>(std::forward<F>(f), clock_, period, calls);
    state->warmup = warmup;
    state->intended0 = now_ns(clock_) + start_delay_.count();
    ScheduledFuture<void> future =
        scheduler_.schedule_at_fixed_rate(Body<Fn>{state}, start_delay_, Duration(period));

    bool stopped_by_scheduler = false;
    {
      std::unique_lock lock(state->mu);
      while (!state->finished) {
        // The runs wake us when the last call returns; the timeout only notices a run that
        // the scheduler ended (its future completes) and that will therefore never finish.
        state->cv.wait_for(lock, std::chrono::milliseconds(10));
        if (!state->finished && future.is_done()) {
          stopped_by_scheduler = true;
          break;
        }
      }
    }
    future.cancel(false);
    if (stopped_by_scheduler) {
      // A run may still be in progress on a scheduler thread: only the atomic is read here.
      throw CancelledError("kairos::Pacer: the scheduler ended the run after " +
                           std::to_string(state->calls_made.load(std::memory_order_relaxed)) + " of " +
                           std::to_string(calls) + " calls");
    }
    if (state->error) std::rethrow_exception(state->error);

    const State<Fn>& s = *state;
    report.calls = s.next - warmup;
    report.warmup_calls = warmup;
    const std::int64_t measured0 = s.intended0 + static_cast<std::int64_t>(warmup) * period;
    report.elapsed = Duration(s.last_end - measured0);
    report.max_behind = Duration(s.max_behind);
    report.behind_at_end =
        Duration(s.last_start - (s.intended0 + static_cast<std::int64_t>(s.next - 1) * period));
    if (report.calls >= 2 && s.last_start > measured0)
      report.achieved_rate = static_cast<double>(report.calls - 1) * 1e9 / static_cast<double>(s.last_start - measured0);
    report.histogram = s.histogram;
    report.service = s.service;
    report.start_lag = s.start_lag;
    return report;
  }

  static std::int64_t now_ns(const Clock* clock) noexcept {
    if constexpr (std::is_same_v<Clock, SteadyClock>) {
      (void)clock;
      return std::chrono::duration_cast<Duration>(SteadyClock::now().time_since_epoch()).count();
    } else {
      return std::chrono::duration_cast<Duration>(clock->now().time_since_epoch()).count();
    }
  }

  template <class Rep, class Period>
  static std::int64_t checked_period(std::chrono::duration<Rep, Period> period) {
    const std::int64_t p = std::chrono::ceil<Duration>(period).count();
    if (p <= 0) throw std::invalid_argument("kairos::Pacer: the period must be > 0");
    return p;
  }
  static Duration checked_start_delay(Duration d) {
    if (d.count() < 0) throw std::invalid_argument("kairos::Pacer: the start delay must be >= 0");
    return d;
  }

  BasicScheduler<Clock>& scheduler_;
  const Clock* clock_;
  Duration start_delay_;
  std::uint64_t warmup_ = 0;
};

using Pacer = BasicPacer<SteadyClock>;

}  // namespace kairos
