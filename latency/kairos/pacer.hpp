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
// Concurrency: set_concurrency(n) with n > 1 makes the calls on n threads of the pacer's own, at
//   the same total rate (wrk2's -c): call k is meant for t0 + k * period and belongs to thread
//   k % n, which makes its own calls k, k + n, k + 2n, ... in order (wrk2: each connection owns
//   its share of the schedule). A call starts when the scheduler's fixed-rate task releases it
//   (a wake-up aimed at its thread alone) or when its thread sees the clock reach its intended
//   start, whichever comes first. No thread ever waits for another: a thread slow to wake or
//   busy with a slow call delays its own later calls only (they start late and are measured
//   from their intended start, so the delay shows), never another thread's. Up to n calls are in
//   flight. With n == 1 (the default) the calls run on the scheduler thread itself, one after
//   another (no hand-off between threads). Start lag at n == 2 against n == 1, same rate, free
//   cores: tests/latency/pacer_concurrency_test.cpp (PacerConcurrency.StartLagAtTwoThreadsNearOne
//   holds the bound; PacerStartLag.DISABLED_Table prints the table for a quiet machine).
// Intervals: set_intervals(every, fn) hands fn the histograms of every interval of `every`
//   (a call is counted in the interval in which it ended, measured from the intended start of
//   the first measured call; intervals without calls are handed out too, so the sum of the
//   intervals is the report). hlog_intervals(log) turns an hdr::HlogWriter (kairos/hdr_codec.hpp)
//   into such an fn; a writer made with hdr::start_later gets the run's start as its StartTime.
// Wall clock: the report's start_time and measured_from place the run in time (system_clock);
//   write_hlog(out, report) writes the report as an .hlog whose StartTime is measured_from. set_progress(every, fn) tells fn (done, total) every `every` and once at the
//   end. Both run on the thread that called run_for()/run_count(), never on a calling thread.
// Threads: run_for() and run_count() block the calling thread until the last call returns; the
//   function runs on a scheduler thread (concurrency 1) or on the pacer's threads (n > 1), where
//   it must be safe to call from n threads at once. One run at a time per BasicPacer object. Do
//   not start a run from inside a task of the same scheduler: the calls may need the very thread
//   that waits.
// Errors:  a period <= 0, a concurrency of 0 or an interval <= 0 throws std::invalid_argument.
//   An exception from the function (the first one, with concurrency) or from an interval or
//   progress callback stops the run and is rethrown by run_for()/run_count(). A run that the
//   scheduler ends throws CancelledError: shutdown() or shutdown_now() during the run, or before
//   it (its submission refused because the scheduler is shut down; such a run makes no call).
//   A submission refused over capacity (Rejection::abort) throws RejectedExecution.
//
// Example: pace a function at 100,000 calls/s for 5 s and print its latency percentiles.
//
//   #include <kairos/kairos.hpp>
//   #include <kairos/pacer.hpp>   // the latency kit: link kairos::latency
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
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <kairos/clock.hpp>
#include <kairos/duration.hpp>
#include <kairos/errors.hpp>
#include <kairos/future.hpp>
#include <kairos/hdr_codec.hpp>
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
  unsigned concurrency = 1;        // threads making calls (at most this many calls in flight)
  // Wall clock (system_clock) at the intended start of the first call, warm-up included, and at
  // that of the first measured call: the zero of elapsed, of every interval's start and of an
  // .hlog written from this report or its intervals (its StartTime and BaseTime). Mapped from
  // the pacer's clock once, when the run is submitted.
  std::chrono::system_clock::time_point start_time{};
  std::chrono::system_clock::time_point measured_from{};
};

// One interval of a run (BasicPacer::set_intervals): the calls that ended in it.
struct PacerInterval {
  std::uint64_t index = 0;       // 0, 1, 2, ...
  Duration start{};              // from the intended start of the first measured call
  Duration length{};             // the interval asked for; the last one ends with the run
  std::chrono::system_clock::time_point measured_from{};  // the run's: start is counted from it
  LatencyHistogram histogram;    // response time, as in PacerReport
  LatencyHistogram service;      // service time
  LatencyHistogram start_lag;    // pacing error
};

// The report as text: a wrk2-style summary (rate, percentiles of response and service time)
// and the response-time spectrum in HdrHistogram's .hgrm layout (values in us).
inline std::string format_report(const PacerReport& r) {
  auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1e3; };
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "  %llu calls (+%llu warm-up) in %.3f s on %u thread%s, %.1f calls/s (asked %.1f), fell behind by at most %.3f us\n",
                static_cast<unsigned long long>(r.calls), static_cast<unsigned long long>(r.warmup_calls),
                static_cast<double>(r.elapsed.count()) / 1e9, r.concurrency, r.concurrency == 1 ? "" : "s",
                r.achieved_rate, r.intended_rate, us(r.max_behind.count()));
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

// The report as an interval log (.hlog): the header with StartTime and BaseTime at the report's
// measured_from, then one interval, the whole run (from 0 for elapsed), holding the response
// time (tagged `tag` if not empty). Interval logs of the run's intervals: hlog_intervals().
inline void write_hlog(std::ostream& out, const PacerReport& r, std::string_view tag = {}) {
  hdr::HlogWriter log(out, std::chrono::duration<double>(r.measured_from.time_since_epoch()).count());
  log.write(r.histogram, 0.0, std::chrono::duration<double>(r.elapsed).count(), tag);
}

template <class Clock>
class BasicPacer {
 public:
  static constexpr Duration kDefaultStartDelay = std::chrono::milliseconds(1);
  using IntervalFn = std::function<void(const PacerInterval&)>;
  using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total)>;

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

  // Calls f `calls` times, one every period.
  template <class F, class Rep, class Period>
  PacerReport run_count(F&& f, std::chrono::duration<Rep, Period> period, std::uint64_t calls) {
    return run(std::forward<F>(f), checked_period(period), calls);
  }

  // The first `calls` calls of every later run are a warm-up: made on the same schedule, counted
  // in warmup_calls, and left out of every other figure of the report and of the intervals.
  void set_warmup(std::uint64_t calls) noexcept { warmup_ = calls; }

  // Later runs make their calls on n threads at the same total rate (see Concurrency above).
  void set_concurrency(unsigned n) {
    if (n == 0) throw std::invalid_argument("kairos::Pacer: the concurrency must be >= 1");
    concurrency_ = n;
  }

  // Later runs hand fn each interval of `every` (see Intervals above); an empty fn turns it off.
  template <class Rep, class Period>
  void set_intervals(std::chrono::duration<Rep, Period> every, IntervalFn fn) {
    const std::int64_t e = std::chrono::ceil<Duration>(every).count();
    if (e <= 0) throw std::invalid_argument("kairos::Pacer: an interval must be > 0");
    interval_ = fn ? e : 0;
    interval_fn_ = std::move(fn);
  }

  // Later runs tell fn (calls done including warm-up, calls in all) every `every` by the pacer's
  // clock, and once when the run is over (done == total then).
  template <class Rep, class Period>
  void set_progress(std::chrono::duration<Rep, Period> every, ProgressFn fn) {
    const std::int64_t e = std::chrono::ceil<Duration>(every).count();
    if (e <= 0) throw std::invalid_argument("kairos::Pacer: a progress interval must be > 0");
    progress_every_ = fn ? e : 0;
    progress_fn_ = std::move(fn);
  }

  // An interval callback that writes each interval's response-time histogram as one line of an
  // interval log: log.write(histogram, start_s, length_s, tag), as kairos::hdr::HlogWriter takes
  // it. Start times are from the first measured call's intended start (measured_from). A log
  // made with hdr::start_later gets its header from the first interval: StartTime and BaseTime
  // are then that moment, with no arithmetic of the caller's. A log started already keeps its
  // own StartTime (the lines stay relative to measured_from). `log` must outlive the runs.
  template <class Log>
  static IntervalFn hlog_intervals(Log& log, std::string tag = {}) {
    return [&log, tag = std::move(tag)](const PacerInterval& i) {
      if constexpr (requires { log.started(); log.start(0.0); }) {
        if (!log.started()) log.start(epoch_seconds(i.measured_from));
      }
      log.write(i.histogram, std::chrono::duration<double>(i.start).count(),
                std::chrono::duration<double>(i.length).count(), tag);
    };
  }

  // Seconds since the epoch, as an .hlog's StartTime takes them.
  static double epoch_seconds(std::chrono::system_clock::time_point t) {
    return std::chrono::duration<double>(t.time_since_epoch()).count();
  }

 private:
  // What one calling thread measured; written by that thread only.
  struct Tally {
    LatencyHistogram histogram;
    LatencyHistogram service;
    LatencyHistogram start_lag;
    std::int64_t max_behind = 0;
    std::int64_t last_start = std::numeric_limits<std::int64_t>::min();
    std::int64_t last_end = std::numeric_limits<std::int64_t>::min();
  };

  // Concurrency n: what the tick tells calling thread w (each on its own cache line, so a
  // release for one thread never touches another's line).
  struct alignas(64) Slot {
    // Calls of this thread released so far (its j-th own call, k = w + j * n, may start once
    // released > j), plus kStopBump per stop. Incremented by the tick only, in index order.
    std::atomic<std::uint64_t> released{0};
    // What the thread sleeps on: bumped after every change of `released`. 32 bits, so that
    // wait()/notify are a futex on this very word (libstdc++ waits on a 64-bit atomic through a
    // table of shared proxy words, which all slots, 64 bytes apart, would hash to alike).
    std::atomic<std::uint32_t> bell{0};
    std::atomic<bool> sleeping{false};  // the thread is (about to be) blocked in bell.wait()
  };

  // The open interval and the closed ones not yet handed out. A calling thread records each
  // call under mu; the waiting thread takes the closed ones under mu and hands them out (with
  // the empty intervals between them) outside it. An interval in which no call ended is never
  // built while calls are made: a run that falls far behind (a stalled host, a sanitizer) would
  // otherwise copy three histograms (171 KiB) per skipped interval under the lock, in the calling
  // threads, and fall further behind the more it skipped.
  struct Intervals {
    std::mutex mu;
    std::int64_t every = 0;  // 0: off
    // -- guarded by mu ---------------------------------------------------------------------
    std::uint64_t open = 0;                          // index of the open interval
    std::unique_ptr<PacerInterval> current;          // its calls; null while it has none
    std::vector<std::unique_ptr<PacerInterval>> ready;  // closed, with calls, in index order
    // -- the waiting thread only ------------------------------------------------------------
    std::uint64_t handed = 0;               // intervals handed out: 0 .. handed - 1
    std::unique_ptr<PacerInterval> empty;   // handed out for each interval without calls

    std::chrono::system_clock::time_point measured_from{};  // set before the run, read-only after

    std::unique_ptr<PacerInterval> make(std::uint64_t index) const {
      auto i = std::make_unique<PacerInterval>();
      i->index = index;
      i->start = Duration(static_cast<std::int64_t>(index) * every);
      i->length = Duration(every);
      i->measured_from = measured_from;
      return i;
    }
    void close_current() {  // mu held
      if (current) ready.push_back(std::move(current));
    }
    void record(std::int64_t since_start, std::int64_t response, std::int64_t service_ns, std::int64_t lag) {
      std::lock_guard lock(mu);
      const std::uint64_t at = since_start < 0 ? 0 : static_cast<std::uint64_t>(since_start / every);
      if (at > open) {  // the intervals between had no call: nothing is kept of them
        close_current();
        open = at;
      }  // a call that ends late in an old interval (at < open) counts in the open one
      if (!current) current = make(open);
      current->histogram.record(response);
      current->service.record(service_ns);
      current->start_lag.record(lag);
    }
    // Waiting thread: the closed intervals, in order, with an empty one for each index without
    // calls. run_end >= 0 (the run's elapsed time) closes the open interval too: it ends there.
    template <class Fn>
    void hand_out(Fn&& fn, std::int64_t run_end = -1) {
      std::vector<std::unique_ptr<PacerInterval>> closed;
      std::uint64_t upto;
      {
        std::lock_guard lock(mu);
        if (run_end >= 0) {
          if (!current) current = make(open);
          current->length = Duration(std::max<std::int64_t>(0, run_end - current->start.count()));
          close_current();
          ++open;
        }
        upto = open;
        closed.swap(ready);
      }
      auto gap_until = [&](std::uint64_t index) {
        for (; handed < index; ++handed) {
          if (!empty) empty = make(handed);
          empty->index = handed;
          empty->start = Duration(static_cast<std::int64_t>(handed) * every);
          fn(*empty);
        }
      };
      for (const auto& i : closed) {
        gap_until(i->index);
        fn(*i);
        handed = i->index + 1;
      }
      gap_until(upto);
    }
  };

  template <class Fn>
  struct State {
    State(Fn fn, const Clock* c, std::int64_t p, std::uint64_t n, unsigned threads)
        : f(std::move(fn)), clock(c), period(p), total(n), tallies(threads) {}
    // -- set before submission, read-only after ----------------------------------------
    Fn f;
    const Clock* clock;
    std::int64_t period;
    std::uint64_t total;
    std::int64_t intended0 = 0;
    std::int64_t measured0 = 0;  // intended start of the first measured call
    std::uint64_t warmup = 0;
    // -- concurrency 1: written by the runs only (each run happens-before the next); read by
    //    the waiting thread after it saw finished == true under mu, which the last run set.
    //    concurrency n: next is the tick's; each tally and slot its thread's, tallies read
    //    after the join ---
    std::uint64_t next = 0;  // index of the next call (the next to release, with concurrency)
    std::int64_t final_start = 0;  // actual start of call total - 1
    std::vector<Tally> tallies;
    std::exception_ptr error;  // with concurrency, written under mu
    Intervals intervals;
    std::atomic<std::uint64_t> calls_made{0};  // relaxed: progress only
    std::atomic<bool> stop{false};             // a run must end early (error, scheduler ended)
    // -- concurrency n only ----------------------------------------------------------------
    std::unique_ptr<Slot[]> slots;           // one per calling thread: slots[k % n] for call k
    std::atomic<unsigned> running{0};        // calling threads not yet finished
    std::atomic<bool> begun{false};          // the scheduler accepted the run, or it is stopped
    // -- shared: guarded by mu ----------------------------------------------------------
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
  };

  static constexpr std::uint64_t kStopBump = std::uint64_t{1} << 62;
  static constexpr std::int64_t kYieldWithinNs = 100'000;  // a calling thread yields, not sleeps

  template <class Fn>
  static void invoke(State<Fn>& s, std::uint64_t n, std::int64_t intended) {
    if constexpr (std::is_invocable_v<Fn&, std::uint64_t, typename Clock::time_point>)
      s.f(n, typename Clock::time_point(std::chrono::duration_cast<typename Clock::duration>(Duration(intended))));
    else if constexpr (std::is_invocable_v<Fn&, std::uint64_t>) s.f(n);
    else s.f();
  }

  template <class Fn>
  static void record(State<Fn>& s, Tally& t, std::uint64_t n, std::int64_t intended, std::int64_t start,
                     std::int64_t end) {
    if (n >= s.warmup) {
      t.histogram.record(end - intended);
      t.service.record(end - start);
      t.start_lag.record(start - intended);
      if (start - intended > t.max_behind) t.max_behind = start - intended;
      if (s.intervals.every) s.intervals.record(end - s.measured0, end - intended, end - start, start - intended);
    }
    if (start > t.last_start) t.last_start = start;
    if (end > t.last_end) t.last_end = end;
    if (n + 1 == s.total) s.final_start = start;
    s.calls_made.fetch_add(1, std::memory_order_relaxed);
  }

  template <class Fn>
  static void finish(State<Fn>& s) {
    {
      std::lock_guard lock(s.mu);  // publishes every field written before to the waiting thread
      s.finished = true;
    }
    s.cv.notify_all();
  }

  // Concurrency 1: the fixed-rate task makes call `next` itself.
  template <class Fn>
  struct Body {
    std::shared_ptr<State<Fn>> state;
    void operator()() const {
      State<Fn>& s = *state;
      if (s.next >= s.total) return;  // a run after the last call, before the pacer cancels
      if (s.stop.load(std::memory_order_acquire)) {
        s.next = s.total;
        finish(s);
        return;
      }
      const std::int64_t intended = s.intended0 + static_cast<std::int64_t>(s.next) * s.period;
      const std::int64_t start = now_ns(s.clock);
      try {
        invoke(s, s.next, intended);
      } catch (...) {
        s.error = std::current_exception();
        s.next = s.total;
        finish(s);
        return;
      }
      record(s, s.tallies[0], s.next, intended, start, now_ns(s.clock));
      if (++s.next == s.total) finish(s);
    }
  };

  // Concurrency n: the fixed-rate task releases call `next` at its intended start.
  template <class Fn>
  struct Tick {
    std::shared_ptr<State<Fn>> state;
    void operator()() const {
      State<Fn>& s = *state;
      if (s.stop.load(std::memory_order_acquire)) return;
      // Every call due by now and no other (a release lets the call start: never before its
      // intended start). A tick late against the calls' schedule (the clock moved on before
      // the run was submitted) so leaves no due call waiting for a later tick.
      const std::int64_t now = now_ns(s.clock);
      while (s.next < s.total && s.intended0 + static_cast<std::int64_t>(s.next) * s.period <= now) {
        release(s.slots[s.next % s.tallies.size()]);
        ++s.next;
      }
    }
    static void release(Slot& owner) {
      // (PC1) pairs with (PC2) in worker(): both sides are seq_cst, a store then a load of the
      // other's word (Dekker), so in their single total order either this load follows the
      // thread's sleeping = true (it is woken here) or the thread's re-read of `released`
      // follows this increment (it does not block). The bell changes after `released`: a thread
      // that read the old bell and then the old count blocks on a word that this bump changes,
      // so the futex returns at once or is woken by the notify. No release is lost.
      owner.released.fetch_add(1, std::memory_order_seq_cst);
      owner.bell.fetch_add(1, std::memory_order_seq_cst);
      if (owner.sleeping.load(std::memory_order_seq_cst)) owner.bell.notify_one();
    }
  };

  template <class Fn>
  static void stop_workers(State<Fn>& s) {
    s.stop.store(true, std::memory_order_release);
    s.begun.store(true, std::memory_order_release);  // a thread still waiting for the run to begin
    s.begun.notify_all();                            // wakes, sees stop, and ends
    for (std::size_t w = 0; w < s.tallies.size(); ++w) {
      // Every waiter's word changes and counts every call as released: the thread wakes, and its
      // stop check (acquire; the store above is sequenced before this bump) ends it.
      s.slots[w].released.fetch_add(kStopBump, std::memory_order_seq_cst);
      s.slots[w].bell.fetch_add(1, std::memory_order_seq_cst);
      s.slots[w].bell.notify_all();
    }
  }

  // Concurrency n: calling thread w of n. It makes calls w, w + n, w + 2n, ... in order: for
  // each, it waits for its release (or the clock), makes it, records it. It shares nothing
  // with the other calling threads but the stop flag, the error and the intervals' lock.
  template <class Fn>
  static void worker(State<Fn>& s, unsigned w, Tally& t) {
    const std::uint64_t n = s.tallies.size();
    Slot& slot = s.slots[w];
    // No call before the scheduler accepted the run (or the run is stopped): a refused run
    // makes no call at all. (PC4) acquire, pairs with (PC3): intended0 and the rest of the
    // run's setup were written before.
    s.begun.wait(false, std::memory_order_acquire);
    for (std::uint64_t j = 0;; ++j) {
      const std::uint64_t k = w + j * n;
      if (k >= s.total || s.stop.load(std::memory_order_acquire)) break;
      {
        // The call may start once released or once the clock has reached its intended start,
        // whichever this thread sees first (the thread does not depend on the tick being
        // scheduled in time). Close to the intended start it yields and looks again; further
        // off, it sleeps until the tick releases the call.
        const std::int64_t due = s.intended0 + static_cast<std::int64_t>(k) * s.period;
        std::uint64_t r = slot.released.load(std::memory_order_acquire);
        while (r <= j) {
          const std::int64_t ahead = due - now_ns(s.clock);
          if (ahead <= 0) break;
          if (ahead <= kYieldWithinNs) {
            std::this_thread::yield();
          } else {
            slot.sleeping.store(true, std::memory_order_seq_cst);
            const std::uint32_t bell = slot.bell.load(std::memory_order_seq_cst);
            r = slot.released.load(std::memory_order_seq_cst);  // (PC2) pairs with (PC1) in Tick
            if (r <= j) slot.bell.wait(bell, std::memory_order_acquire);
            slot.sleeping.store(false, std::memory_order_relaxed);  // a stale true: one spare notify
          }
          r = slot.released.load(std::memory_order_acquire);
        }
      }
      if (s.stop.load(std::memory_order_acquire)) break;  // set before the bump that woke us
      const std::int64_t intended = s.intended0 + static_cast<std::int64_t>(k) * s.period;
      const std::int64_t start = now_ns(s.clock);
      try {
        invoke(s, k, intended);
      } catch (...) {
        {
          std::lock_guard lock(s.mu);
          if (!s.error) s.error = std::current_exception();
        }
        stop_workers(s);
        break;
      }
      record(s, t, k, intended, start, now_ns(s.clock));
    }
    if (s.running.fetch_sub(1, std::memory_order_acq_rel) == 1) finish(s);
  }

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
    report.concurrency = concurrency_;
    if (calls == 0) return report;

    const std::uint64_t warmup = warmup_;
    if (calls > std::numeric_limits<std::uint64_t>::max() - warmup)
      throw std::invalid_argument("kairos::Pacer: warm-up plus calls overflow");
    calls += warmup;
    const unsigned n = concurrency_;
    auto state = std::make_shared<State<Fn>>(std::forward<F>(f), clock_, period, calls, n);
    State<Fn>& s = *state;
    s.warmup = warmup;
    s.intervals.every = interval_;
    const auto wall = std::chrono::system_clock::now();
    s.intended0 = now_ns(clock_) + start_delay_.count();
    s.measured0 = s.intended0 + static_cast<std::int64_t>(warmup) * period;
    report.start_time = wall + std::chrono::duration_cast<std::chrono::system_clock::duration>(start_delay_);
    report.measured_from = report.start_time + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                                   Duration(s.measured0 - s.intended0));
    s.intervals.measured_from = report.measured_from;

    // The calling threads (concurrency n) exist before the first release; they are stopped and
    // joined on every way out of this function.
    std::vector<std::thread> threads;
    struct Joiner {
      State<Fn>& s;
      std::vector<std::thread>& threads;
      ~Joiner() {
        if (threads.empty()) return;
        stop_workers(s);
        for (auto& t : threads) t.join();
      }
    } joiner{s, threads};
    if (n > 1) {
      s.running.store(n, std::memory_order_relaxed);
      threads.reserve(n);
      s.slots = std::make_unique<Slot[]>(n);
      for (unsigned w = 0; w < n; ++w) threads.emplace_back([&s, w] { worker(s, w, s.tallies[w]); });
    }
    // The first run at the first intended start (also when starting the threads took time). A
    // submission refused because the scheduler is shut down is a run the scheduler ended:
    // CancelledError, as when the shutdown comes a moment later (the calling threads, which
    // would otherwise start calls by the clock alone, wait for the submission's outcome; this
    // is what let a shutdown observe calls of a run whose submission it then refused).
    ScheduledFuture<void> future;
    const Duration first_in(std::max<std::int64_t>(0, s.intended0 - now_ns(clock_)));
    try {
      if (n == 1) future = scheduler_.schedule_at_fixed_rate(Body<Fn>{state}, first_in, Duration(period));
      else future = scheduler_.schedule_at_fixed_rate(Tick<Fn>{state}, first_in, Duration(period));
    } catch (const RejectedExecution& e) {
      if (!scheduler_.is_shutdown()) throw;  // capacity reached: Rejection::abort's own error
      throw CancelledError(std::string("kairos::Pacer: the scheduler ended the run before its first call (") +
                           e.what() + ")");
    }
    // Refused without a throw (Rejection::discard, or an on_rejected handler that dropped the
    // task): its future is already cancelled. Ended before its first call, like a shutdown.
    if (future.is_done())
      throw CancelledError("kairos::Pacer: the scheduler refused the run (its future is cancelled)");
    if (n > 1) {
      s.begun.store(true, std::memory_order_release);  // (PC3) pairs with (PC4) in worker()
      s.begun.notify_all();
    }

    bool stopped_by_scheduler = false;
    std::exception_ptr callback_error;
    std::int64_t next_progress = progress_every_ ? now_ns(clock_) + progress_every_ : 0;
    {
      std::unique_lock lock(s.mu);
      while (!s.finished) {
        // The runs wake us when the last call returns; the timeout hands out intervals and
        // progress, and notices a run that the scheduler ended (its future completes) and that
        // will therefore never finish.
        s.cv.wait_for(lock, std::chrono::milliseconds(10));
        if (s.finished) break;
        if (future.is_done()) {
          stopped_by_scheduler = true;
          break;
        }
        if (callback_error) continue;
        lock.unlock();
        try {
          if (s.intervals.every) s.intervals.hand_out(interval_fn_);
          if (progress_every_ && now_ns(clock_) >= next_progress) {
            next_progress = now_ns(clock_) + progress_every_;
            progress_fn_(s.calls_made.load(std::memory_order_relaxed), calls);
          }
        } catch (...) {
          callback_error = std::current_exception();
          if (n == 1) s.stop.store(true, std::memory_order_release);
          else stop_workers(s);
        }
        lock.lock();
      }
    }
    future.cancel(false);
    if (stopped_by_scheduler) {
      // A run may still be in progress on a scheduler thread: only atomics are read here.
      throw CancelledError("kairos::Pacer: the scheduler ended the run after " +
                           std::to_string(s.calls_made.load(std::memory_order_relaxed)) + " of " +
                           std::to_string(calls) + " calls");
    }
    for (auto& t : threads) t.join();
    threads.clear();
    if (callback_error) std::rethrow_exception(callback_error);
    if (s.error) std::rethrow_exception(s.error);

    const auto all_ptr = std::make_unique<Tally>();  // three histograms: not on the stack
    Tally& all = *all_ptr;
    for (const Tally& t : s.tallies) {
      all.histogram.merge(t.histogram);
      all.service.merge(t.service);
      all.start_lag.merge(t.start_lag);
      all.max_behind = std::max(all.max_behind, t.max_behind);
      all.last_start = std::max(all.last_start, t.last_start);
      all.last_end = std::max(all.last_end, t.last_end);
    }
    report.calls = calls - warmup;
    report.warmup_calls = warmup;
    report.elapsed = Duration(all.last_end - s.measured0);
    report.max_behind = Duration(all.max_behind);
    report.behind_at_end =
        Duration(s.final_start - (s.intended0 + static_cast<std::int64_t>(calls - 1) * period));
    if (report.calls >= 2 && all.last_start > s.measured0)
      report.achieved_rate =
          static_cast<double>(report.calls - 1) * 1e9 / static_cast<double>(all.last_start - s.measured0);
    report.histogram = std::move(all.histogram);
    report.service = std::move(all.service);
    report.start_lag = std::move(all.start_lag);

    if (s.intervals.every) s.intervals.hand_out(interval_fn_, report.elapsed.count());
    if (progress_every_) progress_fn_(calls, calls);
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
  unsigned concurrency_ = 1;
  std::int64_t interval_ = 0;
  IntervalFn interval_fn_;
  std::int64_t progress_every_ = 0;
  ProgressFn progress_fn_;
};

using Pacer = BasicPacer<SteadyClock>;

}  // namespace kairos
