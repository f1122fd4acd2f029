// leader_wait.hpp: how a shard's leader waits for its next deadline without losing a wake-up.
// Threads: arm/disarm/sleep_until/spin_until: the shard's leader only. notify_earlier/wake: any
//          thread (producers, cancellers, lifecycle calls).
//
// The protocol (edges numbered; each names its partner):
//   Leader, going to wait for deadline D:
//     w = wake_word (LW1, read before it looks at the clock, the inbox or its queue: a wake-up after
//     LW1 ends the wait at once); armed = D (LW2, seq_cst); then it checks the inbox's submission count
//     (Inbox::submitted, seq_cst) and takes every submission counted there into account before
//     it waits (it drains until it has them). It waits while wake_word == w: a futex sleep
//     (sleeping = true (LW5), re-read wake_word (LW6), FUTEX_WAIT on w), or a spin that reads only
//     wake_word and the clock: never a line that producers write on every submission.
//   Producer of a task due at d (after its seq fetch_add (IN1 in inbox.hpp) and its enqueue):
//     a = armed (LW3, seq_cst); if d < a, CAS armed -> kAwake (LW4) and wake(): wake_word += 1 (LW7,
//     seq_cst), then if sleeping (LW8, seq_cst), FUTEX_WAKE.
//   Why nothing is lost. In the single order S of seq_cst operations, either the leader's count
//     read (after LW2) sees the producer's IN1 — then the leader drains that task before it waits —
//     or IN1 comes after the count read, so LW3 (after IN1) comes after LW2 and reads D (or a later
//     value): the producer of an earlier task wins LW4 and wakes it. LW7/LW8 against LW5/LW6: the leader
//     sets sleeping before re-reading wake_word, the waker bumps wake_word before reading
//     sleeping; both seq_cst, so either the leader sees the bump (does not sleep) or the waker
//     sees sleeping (wakes it); FUTEX_WAIT itself re-checks the word atomically.
//   Only the producer that wins LW4 makes a system call; every other submission costs one load.
//
// Poll mode. Nobody sleeps here; the owner's loop arms this wait through next_deadline() (WF1 in
// Shard::earliest_deadline, the same LW2 store and count read), and the producer that wins LW4
// signals the loop's LoopWake (loop_wake.hpp) besides the wake(): the same argument, with the
// loop's sleep in epoll/poll on the wake fd in place of the futex.
#pragma once
#include <atomic>
#include <cstdint>

#include <kairos/detail/futex.hpp>
#include <kairos/detail/steady_clock.hpp>
#include <kairos/duration.hpp>

#include "cache_line.hpp"
#include "loop_wake.hpp"
#include "threads.hpp"

namespace kairos::detail {

inline constexpr std::int64_t kAwake = kMinNs;  // `armed` while the leader is not waiting
// The inbox's high-water intervals (LeaderWait::set_high_water_mask): while the task pool grows,
// and while it does not. The long one is 65,536 (512 KiB of inbox slots between drains): against
// 32,768, W2 and W2b gained 6 % and W1 and W5 did not move (PERF.md, sixteenth round).
inline constexpr std::uint32_t kShortHighWater = 8192;
inline constexpr std::uint32_t kLongHighWater = 65536;

class LeaderWait {
 public:
  // -- leader ------------------------------------------------------------------------------
  std::uint32_t wake_epoch() const noexcept { return wake_word_.load(std::memory_order_seq_cst); }  // LW1
  void arm(std::int64_t deadline) noexcept { armed_.store(deadline, std::memory_order_seq_cst); }  // LW2
  // The same, with the clock read of the pass that arms (far timers measure the wait against it:
  // notify_far). (LW12) relaxed store, before LW2 -> pairs with (LW13).
  void arm(std::int64_t deadline, std::int64_t at) noexcept {
    armed_at_.store(at, std::memory_order_relaxed);  // (LW12)
    arm(deadline);                                   // (LW2)
  }
  void disarm() noexcept { armed_.store(kAwake, std::memory_order_seq_cst); }
  // The inbox's high-water interval, less one (a power of two less one): the producer whose seq
  // ends in it wakes the leader to drain in bulk (Shard::publish). The leader chooses it when it
  // prepares the task pool (Shard::wait_for): short while the pool grows, so that the preparer
  // runs often enough to keep slabs ready; long when it does not, so that the held-back count
  // (take_in_all) reads the newest pending timeouts less often. A hint, not a protocol: no
  // deadline depends on it (a due submission wakes the leader by LW4), and it publishes nothing:
  // a stale mask moves one wake-up. It sits on the armed deadline's line, which the producer reads
  // anyway (LW3), and is stored only when it changes.
  // (HW1) relaxed load and store, the leader the one writer -> pairs with (HW2).
  void set_high_water_mask(std::uint32_t mask) noexcept {
    if (high_water_mask_.load(std::memory_order_relaxed) != mask)
      high_water_mask_.store(mask, std::memory_order_relaxed);
  }
  // Test seam: the leader is in its futex sleep (LW5 set), past its count read. Relaxed: a poll.
  bool asleep_for_testing() const noexcept { return sleeping_.load(std::memory_order_relaxed); }
  // (HW2) relaxed load, by the producer after LW3 -> pairs with (HW1).
  std::uint32_t high_water_mask() const noexcept { return high_water_mask_.load(std::memory_order_relaxed); }
  // After the clock read that found the wait's deadline reached: true if a wake-up came since
  // LW1 all the same (a producer between its enqueue and its wake-up when the spin or the futex
  // ended). Then the reach does not count (Shard::wait_for): a submission that came before that
  // clock read is drained before anything due at it is popped.
  // (LW11) seq_cst load, after the clock read: pairs with (LW7).
  bool woken_since(std::uint32_t w) const noexcept { return wake_word_.load(std::memory_order_seq_cst) != w; }
  // Poll mode, several shards: the loop sleeps until the earliest of their deadlines, so each
  // shard's arm comes down to it (never up, and not once a wake was signalled: kAwake). Lowering
  // keeps the argument above: a producer then wins LW4 for fewer deadlines, never for fewer of
  // those earlier than the loop's.
  void lower(std::int64_t deadline) noexcept {
    std::int64_t a = armed_.load(std::memory_order_seq_cst);
    // (LW9) seq_cst, as the arm it lowers (LW2): a producer's LW3 sees the lower value or wins LW4.
    while (a != kAwake && deadline < a && !armed_.compare_exchange_weak(a, deadline, std::memory_order_seq_cst)) {
    }
  }
  // Futex sleep while wake_word == w, until `deadline` (CLOCK_MONOTONIC ns; < 0: none).
  // Returns true iff the deadline passed.
  bool sleep_until(std::uint32_t w, std::int64_t deadline) noexcept {
    sleeping_.store(true, std::memory_order_seq_cst);  // (LW5) pairs with (LW8)
    bool timed_out = false;
    if (wake_word_.load(std::memory_order_seq_cst) == w)  // (LW6) pairs with (LW7)
      timed_out = !futex_wait(&wake_word_, w, deadline);
    sleeping_.store(false, std::memory_order_relaxed);  // relaxed: only saves a waker's syscall
    return timed_out;
  }
  // Spins while wake_word == w and the steady clock is before `deadline`. Returns the clock
  // read that reached the deadline, or kMinNs if a wake-up ended the spin.
  std::int64_t spin_until(std::uint32_t w, std::int64_t deadline) noexcept {
    // (LW10) acquire, pairs with (LW7): a wake() also publishes what the waker did before it (a
    // re-queued task, a state).
    while (wake_word_.load(std::memory_order_acquire) == w) {
      if (const std::int64_t now = steady_now_ns(); now >= deadline) return now;
      cpu_relax();
    }
    return kMinNs;
  }

  // -- any thread ----------------------------------------------------------------------------
  // Wakes the leader if it waits for a later deadline than `deadline` (see the protocol).
  // Poll mode: true if this call woke the loop and Options::on_wake is set: the caller owes
  // LoopWake::run_callback(), which it runs once it holds nothing of kairos (loop_wake.hpp).
  [[nodiscard]] bool notify_earlier(std::int64_t deadline) noexcept {
    return wake_if_later(armed_.load(std::memory_order_seq_cst), deadline);  // (LW3) pairs with (LW2)
  }
  // A far timer's producer (Options::far_timer_slack), after its seq (IN1) and its enqueue. Its
  // deadline is the leader's to take, at the leader's next drain, which must come within about
  // `slack` of the submission. It does if the leader is awake (kAwake: its next arm's count read
  // sees this submission, as in the protocol above), or if the armed wait ends within `slack` of
  // the clock read of the pass that armed it, a read made before that arm (LW2) and so before
  // this call's LW3. Otherwise this wakes the leader, as notify_earlier(that read + slack) would.
  // (LW13) relaxed load, after LW3: LW3 read the LW2 of an arm or a later value, and that arm's
  // LW12 happens before it, so this reads that arm's clock read or a later arm's. A later arm's
  // count read comes after this LW3 (its LW2 did not precede it) and so sees this submission.
  [[nodiscard]] bool notify_far(std::int64_t slack) noexcept {
    const std::int64_t a = armed_.load(std::memory_order_seq_cst);  // (LW3) pairs with (LW2)
    // An awake leader (kAwake) is woken by no deadline: wake_if_later compares past it.
    return wake_if_later(a, add_saturated(armed_at_.load(std::memory_order_relaxed), slack));  // (LW13)
  }
  // Poll mode: the loop's wake-up, set once before any producer runs (the shard's constructor).
  void set_loop_wake(LoopWake* w) noexcept { loop_wake_ = w; }
  std::uint64_t loop_wakes() const noexcept { return loop_wakes_.load(std::memory_order_relaxed); }
  // notify_earlier's and notify_far's end: `a` is what LW3 read.
  [[nodiscard]] bool wake_if_later(std::int64_t a, std::int64_t deadline) noexcept {
    // kMaxNs: the leader waits with no deadline (nothing queued, or only never-due tasks); any
    // task wakes it, also one due at the end of a ManualClock's time.
    while (deadline < a || a == kMaxNs) {
      if (armed_.compare_exchange_weak(a, kAwake, std::memory_order_seq_cst)) {  // (LW4)
        wake();
        if (loop_wake_ == nullptr) return false;
        // Poll mode: the owner's loop sleeps, not a leader. The fd now; the callback later.
        loop_wakes_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
        return loop_wake_->post();
      }
    }
    return false;
  }
  // A restamp pass is asked for (restamp.hpp): by the producer that took the first sequence
  // number of a period (Shard::take_seq); the leader wakes and runs it at its next look.
  // (RN1) relaxed store, then wake() (LW7): a leader woken by it reads the flag after its
  // acquire of the wake word (LW6/LW10), so it sees the flag -> pairs with (RN2).
  void ask_restamp() noexcept {
    restamp_asked_.store(true, std::memory_order_relaxed);  // (RN1)
    wake();
  }
  // (RN2) the leader: a relaxed load, on the line it reads for LW1 anyway; the exchange only when
  // asked (once in 2^28 submissions) -> pairs with (RN1). The pass reads the sequence itself, so
  // nothing else needs to travel with the flag.
  bool take_restamp_request() noexcept {
    return restamp_asked_.load(std::memory_order_relaxed) && restamp_asked_.exchange(false, std::memory_order_relaxed);  // (RN2)
  }
  // Makes the leader re-examine everything (time moved, state changed, the inbox filled up).
  void wake() noexcept {
    wake_word_.fetch_add(1, std::memory_order_seq_cst);           // (LW7) pairs with (LW6), (LW10), (LW11)
    if (sleeping_.load(std::memory_order_seq_cst)) futex_wake_all(&wake_word_);  // (LW8) with (LW5)
  }

 private:
  alignas(kCacheLine) std::atomic<std::int64_t> armed_{kAwake};
  std::atomic<std::int64_t> armed_at_{kMinNs};  // LW12/LW13: the arming pass's clock read
  std::atomic<std::uint32_t> wake_word_{0};
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> restamp_asked_{false};  // RN1/RN2
  std::atomic<std::uint32_t> high_water_mask_{kShortHighWater - 1};  // set_high_water_mask
  LoopWake* loop_wake_ = nullptr;  // read-only once producers run
  std::atomic<std::uint64_t> loop_wakes_{0};
};
// The wait's words start a line of their own: no neighbour's writes disturb a spinning leader.
static_assert(alignof(LeaderWait) == kCacheLine);

}  // namespace kairos::detail
