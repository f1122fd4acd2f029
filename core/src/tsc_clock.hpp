// tsc_clock.hpp: the submission clock. A deadline computed at submission (schedule(f, delay),
// execute, rearm(delay)) is "now + delay"; this "now" is read from the CPU's time-stamp counter
// (TSC) instead of clock_gettime(CLOCK_MONOTONIC) (about 10 ns against 24 on the development
// VM), as an UPPER bound of CLOCK_MONOTONIC at the call, so a task never starts before (true
// now at the call) + delay. When a task is due is still decided by CLOCK_MONOTONIC alone.
//
// Where: only on x86-64, where the kernel's clocksource is "tsc" (it then checked the counter
// constant and synchronised across CPUs) and the CPU reports an invariant TSC (CPUID
// 0x80000007 EDX bit 8) and rdtscp, for the steady clock (a ManualClock scheduler never comes
// here).
// Elsewhere now() is steady_now_ns(), as before.
//
// The argument. Let f(t) be CLOCK_MONOTONIC as a function of the counter: with clocksource tsc
// the vDSO computes it from its own counter read, and it never decreases. Every counter read
// here is rdtscp, which reads the counter only after every earlier instruction of the thread
// has executed (the vDSO's own read is fenced the same way), so a clock_gettime that returned
// before the call read a counter value <= ours (also across threads, through whatever ordered
// the two calls), and ours is <= that of a clock_gettime that starts after it.
//  - An anchor is (t1 = ticks(), M = clock_gettime, t2 = ticks()): the vDSO's counter read lies
//    in [t1, t2], so f(t1) <= M <= f(t2). It is used only if t2 - t1 is at most kMaxGapNs of
//    ticks.
//  - The rate r (ns per tick) is measured between two such anchors at least kMinBaselineNs
//    apart (the baseline then rolls, so r is at most about a second old); the published slope
//    is mult = r * (1 + 2^-kMarginShift), 1953 ppm above r.
//  - A record (T = t1 of an anchor, M, mult, window W of kWindowNs in ticks) answers a call
//    whose counter read t has T <= t < T + W with U(t) = M + ceil((t - T) * mult).
//    Never early: f(t) - f(T) <= (t - T) * (actual rate) <= (t - T) * mult as long as
//    CLOCK_MONOTONIC's rate stays within 1953 ppm of r (NTP's frequency crossing its whole
//    +-500 ppm range is 1000, an adjtime() slew 500 more, the estimate's error < 100), and
//    f(T) <= M; so f(t) <= U(t).
//    Late by at most B = kMaxGapNs * (1 + m) + 2 * m * kWindowNs + 3 ns (m = 2^-kMarginShift;
//    M - f(T) <= the anchor's gap; the slope's excess over the slowest allowed rate over at most
//    W; rounding): 256.5 + 128 + 3, under 390 ns, whatever the delay (the delay is added in
//    nanoseconds afterwards).
//  - Any other call (no record yet, t outside the window, a writer mid-update) reads the counter
//    and the clock itself and answers max(its clock read, the record's U at its tick, or the
//    record's cap = U(T + W) if the window is behind it, or the record's floor if the record is
//    newer than its tick). It refreshes the record (an anchor, a CAS, seven stores) only for a
//    thread whose previous call came within kDenseNs = W / 4 (a thread-local note of its
//    latest answer): the new window serves its next calls.
//  - Sparse callers. A thread whose calls come further apart (a timer every 50 us, once a
//    millisecond) would pay the counter read, the clock read and a refresh that never serves
//    it, and its deadlines would carry both reads. It is marked sparse (thread-local) and reads
//    the clock first: the answer is m itself when m >= the current record's cap, since every
//    answer any call gave is at most the latest cap (a record answers at most its cap; the next
//    one is published only once the clock passed it). Below the cap (another thread keeps the
//    record fresh) it reads the counter after m and answers as above, max(m, what the record
//    can have answered up to that counter value), and goes back to the counter path; two of
//    its calls within kDenseNs do too.
//  - Monotone: a new record is published only when the clock has passed the previous record's
//    cap (the largest value it can give): floor = previous cap <= M. So of two calls ordered
//    by happens-before, the later one never gets an earlier "now": equal delays submitted in
//    that order keep their order, as with clock_gettime.
//  - No rate within kGiveUpNs of the first try (every anchor loose: an emulator, a clock read
//    slower than the counter path can use): clock reads for good (nothing was published).
//  - A runaway rate (a slew faster than the margin: adjtimex ADJ_TICK, a large PLL offset) is
//    caught at the next refresh: if the previous record, extended to the new anchor, ran below
//    the clock, the process stops using the counter (publishes a record with no window whose
//    cap keeps the order, then switches to plain clock reads once the clock passed that cap).
//
// Threads and ordering (seqlock; TC edges):
//  - A writer is whoever wins the CAS of seq_ from an even value s to s + 1 (TC0, acquire:
//    it sees the previous writer's calibration state, published by TC1). It stores the record
//    fields with release (TC2: a reader that loads one of them with acquire also sees seq_ odd
//    or later), then seq_ = s + 2 (TC1, release). The calibration state (base_*, next_*,
//    rate_) is touched only by the writer holding seq_ odd: one writer at a time.
//  - A reader loads seq_ (TC3, acquire, pairs with TC1: the fields of that version are visible),
//    the fields (acquire, pairs with TC2), then seq_ again; equal and even: a consistent record.
//    The fast path never waits and never writes; a failed read goes to the slow path, which
//    retries while a writer is inside (a few stores; it yields if the writer was preempted).
//  - mode_ (TC4 release / TC5 acquire): the switch to plain clock reads is stored after a clock
//    read past the last cap; a reader that sees it reads the clock after that, so it gets a
//    value >= every value the counter path gave.
#pragma once
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <thread>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <kairos/detail/futex.hpp>  // cpu_relax
#include <kairos/detail/steady_clock.hpp>  // steady_now_ns

namespace kairos::detail {

bool tsc_is_clocksource() noexcept;    // threads.cpp: read once per process
bool cpu_has_invariant_tsc() noexcept;  // tsc_clock.cpp: CPUID 0x80000007 EDX bit 8
bool cpu_has_rdtscp() noexcept;         // tsc_clock.cpp: CPUID 0x80000001 EDX bit 27

// The counter and the clock of the process.
struct HardwareTicks {
  static std::uint64_t ticks() noexcept {
#if defined(__x86_64__)
    unsigned aux;
    return __rdtscp(&aux);  // after every earlier instruction executed (Intel and AMD alike)
#else
    return 0;
#endif
  }
  static std::int64_t mono() noexcept { return steady_now_ns(); }
  static bool eligible() noexcept {
#if defined(__x86_64__)
    return tsc_is_clocksource() && cpu_has_invariant_tsc() && cpu_has_rdtscp();
#else
    return false;
#endif
  }
};

// Source: ticks() (an ordered counter read), mono() (CLOCK_MONOTONIC), eligible() (the counter
// may be used); tests pass a fake one.
template <class Source>
class TscClock {
 public:
  static constexpr int kMarginShift = 9;                  // the slope is 2^-9 = 1953 ppm above r
  static constexpr std::int64_t kWindowNs = 32'768;       // W: a record answers for 32.8 us
  static constexpr std::int64_t kMaxGapNs = 256;          // an anchor's two counter reads, at most
  static constexpr std::uint64_t kBootstrapGapTicks = 2'048;  // before r is known
  static constexpr std::int64_t kMinBaselineNs = 50'000'000;  // r's baseline, at least
  static constexpr std::int64_t kRollNs = 500'000'000;        // ... and at most about twice that
  static constexpr std::int64_t kDenseNs = kWindowNs / 4;     // a thread's calls this close: the counter path
  static constexpr std::int64_t kGiveUpNs = 2'000'000'000;    // no rate by then: clock reads
  static constexpr std::int64_t kCalibrationStepNs = 250'000;  // while calibrating: an anchor per step at most
  // B above: the most a value exceeds CLOCK_MONOTONIC at the call (or a read right after it).
  static constexpr std::int64_t kLateBoundNs =
      kMaxGapNs + (kMaxGapNs >> kMarginShift) + 1 + 2 * (kWindowNs >> kMarginShift) + 3;

  enum Mode : int { kUnknown = 0, kTsc = 1, kClock = 2 };

  constexpr TscClock() noexcept = default;
  explicit TscClock(Source s) noexcept : src_(s) {}
  TscClock(const TscClock&) = delete;
  TscClock& operator=(const TscClock&) = delete;

  // An upper bound of CLOCK_MONOTONIC at the call, by at most kLateBoundNs; never less than a
  // value an earlier call (by happens-before) returned. Any thread.
  std::int64_t now() noexcept {
    if (const int mode = mode_.load(std::memory_order_acquire); mode != kTsc) [[unlikely]]  // TC5, pairs with TC4
      return mode == kClock ? src_.mono() : now_not_tsc();
    Pace& p = pace_;
    if (p.sparse) [[unlikely]] return now_sparse(p);
    const std::uint64_t t = src_.ticks();
    const std::uint64_t s = seq_.load(std::memory_order_acquire);  // TC3, pairs with TC1
    const std::uint64_t at = tick_.load(std::memory_order_acquire);  // these pair with TC2
    const std::int64_t ns = ns_.load(std::memory_order_acquire);
    const std::uint64_t mult = mult_.load(std::memory_order_acquire);
    const std::uint64_t win = window_.load(std::memory_order_acquire);
    const std::uint64_t dt = t - at;  // huge if t < at: not in the window
    if ((((seq_.load(std::memory_order_relaxed) ^ s) | (s & 1)) == 0) & (dt < win)) {
      const std::int64_t v = ns + static_cast<std::int64_t>(ceil_mul(dt, mult));
      p.last_ns = v;
      return v;
    }
    return slow(p);
  }

  Mode mode() const noexcept { return static_cast<Mode>(mode_.load(std::memory_order_acquire)); }
  // True once a record with a window is published (the counter path answers).
  bool calibrated() const noexcept { return window_.load(std::memory_order_acquire) != 0; }
  // Test seam: stop using the counter, exactly as a runaway rate does (record without a window,
  // then plain clock reads once the clock passed its cap).
  void disable() noexcept {
    if (mode_.load(std::memory_order_acquire) == kUnknown) now();
    for (;;) {
      Record r;
      std::uint64_t s = read_record(r);
      if (!try_lock(s)) continue;
      if (mode_.load(std::memory_order_relaxed) == kTsc && !dead_) kill(r);
      std::int64_t m = src_.mono();
      if (dead_ && m >= dead_cap_) mode_.store(kClock, std::memory_order_release);  // TC4
      seq_.store(s + 2, std::memory_order_release);  // TC1
      return;
    }
  }
  Source& source() noexcept { return src_; }
  // How many times a writer went in (tests: which calls write).
  std::uint64_t writes() const noexcept { return seq_.load(std::memory_order_acquire) / 2; }

 private:
  struct Record {
    std::uint64_t tick;
    std::int64_t ns;
    std::uint64_t mult;
    std::uint64_t window;
    std::int64_t cap;
    std::int64_t floor;
  };

  // A thread's own pace: the answer of its latest call, and whether its calls come too far
  // apart for a record to serve them (sparse: now_sparse). Thread-local and shared by the
  // instances of one Source (tests build several): a hint, which chooses a path and never a
  // value; a wrong one costs a clock read or a refresh. No other thread reads it. The default
  // TLS model, as every thread_local of kairos: an initial-exec one would make the whole TLS
  // block of libkairos.so static (about 700 bytes), and a dlopen() of it then fails in a process
  // whose spare static TLS is used up (CMakeLists.txt, "TLS descriptors").
  struct Pace {
    std::int64_t last_ns = LLONG_MIN / 2;
    bool sparse = false;
  };
  static inline thread_local Pace pace_;

  static std::uint64_t ceil_mul(std::uint64_t dt, std::uint64_t mult) noexcept {
    return (dt * mult + 0xFFFF'FFFFu) >> 32;  // dt < window: no overflow (publish() checks)
  }

  [[gnu::noinline]] std::int64_t now_not_tsc() noexcept {
    if (mode_.load(std::memory_order_acquire) == kUnknown) {
      // Every thread that gets here computes the same answer; the first store wins nothing.
      Mode m = src_.eligible() ? kTsc : kClock;
      int expected = kUnknown;
      mode_.compare_exchange_strong(expected, m, std::memory_order_acq_rel, std::memory_order_acquire);
      if (mode_.load(std::memory_order_acquire) == kTsc) return slow(pace_);
    }
    return src_.mono();
  }

  // A consistent copy of the record; returns its (even) version. Waits only while a writer is
  // between TC0 and TC1 (a few stores).
  std::uint64_t read_record(Record& r) noexcept {
    for (int spins = 0;; ++spins) {
      const std::uint64_t s = seq_.load(std::memory_order_acquire);  // TC3
      r.tick = tick_.load(std::memory_order_acquire);                // TC2's partners
      r.ns = ns_.load(std::memory_order_acquire);
      r.mult = mult_.load(std::memory_order_acquire);
      r.window = window_.load(std::memory_order_acquire);
      r.cap = cap_.load(std::memory_order_acquire);
      r.floor = floor_.load(std::memory_order_acquire);
      if ((s & 1) == 0 && seq_.load(std::memory_order_relaxed) == s) return s;
      if (spins < 256) cpu_relax();
      else std::this_thread::yield();  // the writer was preempted inside
    }
  }

  bool try_lock(std::uint64_t s) noexcept {
    return seq_.compare_exchange_strong(s, s + 1, std::memory_order_acquire, std::memory_order_relaxed);  // TC0
  }

  // The answer of record r to a call that read the counter at t and the clock at m (in either
  // order): at least m, and at least what r can have answered for a counter value <= t (the
  // floor for one before r, U(t) inside the window, the cap past it). Sets expired past it.
  static std::int64_t answer(const Record& r, std::uint64_t t, std::int64_t m, bool& expired) noexcept {
    expired = false;
    if (t < r.tick) return std::max(m, r.floor);  // a record newer than our counter read
    if (t - r.tick < r.window) return std::max(m, r.ns + static_cast<std::int64_t>(ceil_mul(t - r.tick, r.mult)));
    expired = true;
    return std::max(m, r.cap);
  }

  // A sparse thread's call: the clock first. Every answer any call gave is at most the latest
  // record's cap (a record answers at most its cap; the next is published only once the clock
  // passed it, and an answer past the window is at least the cap), so m >= cap is the answer
  // itself, with no counter read and no write. Below the cap another thread keeps the record
  // fresh: the counter read then bounds what it can have answered, and this thread goes back
  // to the counter path. A record without a window (calibrating, a switch to clock reads) sends
  // the call to slow(), which writes in those states.
  [[gnu::noinline]] std::int64_t now_sparse(Pace& p) noexcept {
    const std::int64_t m = src_.mono();
    Record r;
    read_record(r);
    if (r.window == 0) {  // calibrating, or switching to clock reads: those write (slow)
      p.sparse = false;
      return slow(p);
    }
    if (m - p.last_ns < kDenseNs) p.sparse = false;  // calls came close: the counter path again
    p.last_ns = m;
    if (m >= r.cap) return m;
    p.sparse = false;
    bool expired;
    return answer(r, src_.ticks(), m, expired);
  }

  // A miss of the counter path. Its own counter read, right before the clock read: (t1, m, t2)
  // is an anchor, and the tighter it is, the closer to the clock the record it may publish (the
  // fast path's read, before the record's loads, would widen it by those, and by far more where
  // loads are slow, as under ThreadSanitizer).
  [[gnu::noinline]] std::int64_t slow(Pace& p) noexcept {
    const std::int64_t previous = p.last_ns;
    const std::uint64_t t1 = src_.ticks();
    const std::int64_t m = src_.mono();
    Record r;
    const std::uint64_t s = read_record(r);
    bool expired;
    const std::int64_t v = answer(r, t1, m, expired);
    const bool dense = m - previous < kDenseNs;  // this thread's previous call was close
    // Write only when it serves: while there is no window (calibrating, or finishing a switch
    // to clock reads); to refresh an expired record once the clock has passed its cap
    // (monotone), and only for a thread whose calls come often (its previous call within
    // kDenseNs: the new window will answer its next ones; a thread calling less often becomes
    // sparse and reads the clock, see now_sparse); or when the counter looks reset. One
    // writer; the rest go on.
    // While calibrating (no record was ever published: cap is LLONG_MIN), one anchor per
    // kCalibrationStepNs is enough (the rate needs two kMinBaselineNs apart): the other calls pay
    // a clock read and a relaxed load, not the lock. A record without a window after a kill
    // (switching to clock reads) is written by every call, as before.
    bool write = r.window == 0;
    if (write && r.cap == LLONG_MIN) {
      write = m - last_calibration_ns_.load(std::memory_order_relaxed) >= kCalibrationStepNs;
      if (write) last_calibration_ns_.store(m, std::memory_order_relaxed);  // a hint: publishes nothing
    }
    if (!write && r.window != 0 && expired && m >= r.cap) {
      write = dense;
      p.sparse = !dense;
    }
    if (!write && t1 < r.tick && m >= r.cap) write = true;
    if (write) {
      const std::uint64_t t2 = src_.ticks();
      if (try_lock(s)) {
        write_locked(r, t1, m, t2);
        seq_.store(s + 2, std::memory_order_release);  // TC1
      }
    }
    p.last_ns = v;
    return v;
  }

  // seq_ is odd and ours: r is the current record.
  void write_locked(const Record& r, std::uint64_t t1, std::int64_t m, std::uint64_t t2) noexcept {
    if (dead_) {
      if (m >= dead_cap_) mode_.store(kClock, std::memory_order_release);  // TC4
      return;
    }
    const bool published = r.window != 0;
    if (t2 < r.tick) {
      // The counter, read after our clock read, is behind a record whose clock read was more
      // than a window earlier: the counter jumped back (not one counter any more).
      if (published) kill(r);
      return;
    }
    if (t1 < r.tick) return;
    const std::uint64_t gap = t2 - t1;
    if (published) {
      // The previous record extended to this anchor must not have run below the clock.
      const std::uint64_t dt = t1 - r.tick;
      __extension__ typedef unsigned __int128 U128;
      const U128 pred = static_cast<U128>(dt) * r.mult;
      const std::int64_t slack = static_cast<std::int64_t>(ceil_mul(gap < (1u << 20) ? gap : (1u << 20), r.mult));
      const std::int64_t lowest = m - slack;  // f(t1) >= M - (f(t2) - f(t1))
      if (lowest > r.ns && static_cast<U128>(lowest - r.ns) > ((pred + 0xFFFF'FFFFu) >> 32)) {
        kill(r);
        return;
      }
    }
    calibrate(t1, m, gap);
    if (rate_ <= 0) {
      // No rate after kGiveUpNs (every anchor loose: clock reads slower than the counter path
      // can use, e.g. under an instruction-level emulator): clock reads from now on. Nothing
      // was published, so every earlier answer was a clock read: the order holds.
      if (first_write_ns_ == 0) first_write_ns_ = m;
      else if (m - first_write_ns_ > kGiveUpNs) mode_.store(kClock, std::memory_order_release);  // TC4
      return;
    }
    if (static_cast<double>(gap) * rate_ > static_cast<double>(kMaxGapNs)) return;  // a loose anchor
    const double mult = rate_ * (1.0 + 1.0 / (1 << kMarginShift)) * 4294967296.0;
    const double win = static_cast<double>(kWindowNs) / rate_;
    if (!(mult >= 1.0 && mult < 1e12 && win >= 1.0 && win < 1e9)) return;  // no sane rate
    Record n;
    n.tick = t1;
    n.ns = m;
    n.mult = static_cast<std::uint64_t>(mult) + 1;  // rounded up
    n.window = static_cast<std::uint64_t>(win);
    n.cap = m + static_cast<std::int64_t>(ceil_mul(n.window, n.mult));
    n.floor = published ? r.cap : LLONG_MIN;  // m >= r.cap: the caller checked
    store(n);
  }

  // The rate between two tight anchors kMinBaselineNs or more apart, the baseline rolling
  // forward every kRollNs. Writer only.
  void calibrate(std::uint64_t t1, std::int64_t m, std::uint64_t gap) noexcept {
    const bool tight = rate_ > 0 ? static_cast<double>(gap) * rate_ <= static_cast<double>(kMaxGapNs)
                                 : gap <= kBootstrapGapTicks;
    if (!tight) return;
    if (!have_base_ || t1 <= base_tick_ || m <= base_ns_) {
      have_base_ = true;
      have_next_ = false;
      base_tick_ = t1;
      base_ns_ = m;
      return;
    }
    const std::int64_t span = m - base_ns_;
    if (span >= kMinBaselineNs) rate_ = static_cast<double>(span) / static_cast<double>(t1 - base_tick_);
    if (!have_next_) {
      if (span >= kRollNs) {
        have_next_ = true;
        next_tick_ = t1;
        next_ns_ = m;
      }
    } else if (m - next_ns_ >= kRollNs) {
      base_tick_ = next_tick_;
      base_ns_ = next_ns_;
      next_tick_ = t1;
      next_ns_ = m;
    }
  }

  // A record without a window: every call takes the slow path and gets at least its cap; once
  // the clock has passed the cap, plain clock reads.
  void kill(const Record& r) noexcept {
    dead_ = true;
    dead_cap_ = r.cap;
    Record n = r;
    n.window = 0;
    n.floor = r.cap;
    store(n);
  }

  void store(const Record& n) noexcept {  // TC2: each after TC0 in this thread
    tick_.store(n.tick, std::memory_order_release);
    ns_.store(n.ns, std::memory_order_release);
    mult_.store(n.mult, std::memory_order_release);
    window_.store(n.window, std::memory_order_release);
    cap_.store(n.cap, std::memory_order_release);
    floor_.store(n.floor, std::memory_order_release);
  }

  // -- read by every call: one cache line -----------------------------------------------------
  alignas(64) std::atomic<int> mode_{kUnknown};
  std::atomic<std::uint64_t> seq_{0};  // odd while a writer is inside
  std::atomic<std::uint64_t> tick_{0};
  std::atomic<std::int64_t> ns_{0};
  std::atomic<std::uint64_t> mult_{0};
  std::atomic<std::uint64_t> window_{0};   // 0: no window (not calibrated, or dead)
  std::atomic<std::int64_t> cap_{LLONG_MIN};    // the largest value this record gives
  std::atomic<std::int64_t> floor_{LLONG_MIN};  // the previous record's cap
  // -- any slow call, relaxed: a hint ---------------------------------------------------------
  alignas(64) std::atomic<std::int64_t> last_calibration_ns_{LLONG_MIN / 2};
  // -- the writer holding seq_ odd only --------------------------------------------------------
  alignas(64) double rate_ = 0;  // ns per tick; 0: not measured yet
  bool have_base_ = false, have_next_ = false, dead_ = false;
  std::uint64_t base_tick_ = 0, next_tick_ = 0;
  std::int64_t base_ns_ = 0, next_ns_ = 0, dead_cap_ = 0, first_write_ns_ = 0;
  Source src_{};
};

// The process's submission clock (tsc_clock.cpp); submit_now_ns() (kairos/detail/steady_clock.hpp)
// reads it.
TscClock<HardwareTicks>& process_submit_clock() noexcept;

}  // namespace kairos::detail
