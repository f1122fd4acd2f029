// inbox.hpp: a shard's MPSC inbox: the producer half (take a sequence number, enqueue) and the
// leader half (drain in bulk, confirm FIFO order, count). Header-only: submit stays inline.
// Threads: take_seq/push/post/abandon and the counts: any thread, lock-free (one moodycamel
//          producer token per thread, producer_tokens.hpp). drain/drain_all/drain_through and the
//          unconfirmed items (has_unconfirmed ... take_unconfirmed): whoever holds the shard lock
//          (Shard calls them only under mu_; not checked by the compiler: the inbox is not guarded).
//
// FIFO across producers (edges IN1-IN3). The seq is a fetch_add on next_seq_ (IN1), so a submission
// that returned before another started has the smaller seq. moodycamel orders items of one
// producer only, and one pass over its sub-queues can miss A's item yet see B's (A happened
// before B). But once B's item was seen, any later *complete* pass (try_dequeue_bulk returning
// less than asked: it visited every sub-queue) sees A's. So drained submissions wait in
// `unconfirmed_` until a complete pass has started after they were seen; only then does the
// leader take them into its timer queue, where they may fire.
//
// Seen items may wait unconfirmed. The leader's own drains (drain_for_leader) end at the first
// complete pass whose items may all wait (the leader's may_wait: far timers, and tasks due later
// than the hold horizon, Shard::unconfirmed_may_wait), and the leader may then wait with them
// seen and unconfirmed (Shard::lead, arm_and_check: it wakes in time for them), where before it
// drained again at once. Under a steady stream of submissions that "once more" never ended: every
// pass saw the few items enqueued during the last one, so the leader chased the producer a pass at
// a time, read each timeout a microsecond after its producer wrote it, and the cancel then took
// the line back (W2: a complete pass every ~25 pairs). may_wait reads that last pass's items only
// (a few, the newest: their lines are read once more than they would be; a tag in the item would
// spare the read of a far timer's but cost every submission 8 instructions, PERF.md's eighteenth
// round). They stay unconfirmed: nothing about FIFO changes.
//
// Held back. The leader may keep the newest confirmed submissions here instead of taking them in
// (Shard::take_in_all: far-future ones, a timeout likely to be cancelled before it is due, so
// that its cancel finds it not taken in: one CAS, no remove request). They stay at the front of
// unconfirmed_, confirmed, in order, and are offered again by every later confirm; the leader
// knows their earliest deadline and wakes in time for it. has_unconfirmed() does not count them
// (nothing to confirm); holds_any() does (something not yet in the timer queue).
//
// Counts. next_seq_ (sequence numbers taken) - abandoned_ (taken, never enqueued: no memory) is
// the number of submissions; drained_ of them reached the leader. Requests (remove and refile):
// posted_ enqueued (lost_ of those failed), done_ applied by the leader. wait_idle() and shutdown
// compare these to know that everything sent before them has arrived.
//
// Edges (each names its partner):
//   (IN1) take_seq: next_seq_ fetch_add seq_cst -> FIFO (above); pairs with the count read (IN5)
//         and the wait's arm (LW2, leader_wait.hpp).
//   (IN2) push: moodycamel's enqueue, a release -> pairs with (IN3): publishes the task's fields.
//   (IN3) drain: moodycamel's dequeue, an acquire -> pairs with (IN2).
//   (IN4) abandon: abandoned_ fetch_add seq_cst -> pairs with (IN5): a count that sees the seq
//         waits for its abandon, not for an item.
//   (IN5) submitted: the count read, seq_cst loads -> pairs with (IN1) and (IN4) (and with the
//         shutdown's RS1, engine.cpp).
//   (IN6) post: posted_ / lost_ fetch_add seq_cst -> pairs with (IN7).
//   (IN7) removes_sent: seq_cst loads -> pairs with (IN6): drain_all waits for every request
//         posted before it, and the leader's arm (Shard::arm_and_check) for every request posted
//         before a seq its count read (IN5) saw abandoned (a re-arm's refile request).
//   (IN8) seqs_taken: acquire load (drain_through's bound) -> pairs with (IN1).
//   (IN9) drained_ / done_: relaxed, written by the drain under the shard lock (one writer, no
//         RMW: bump) and read by drained() / removes_done(): under the same lock (must_exit,
//         idle, arm_and_check: the mutex orders them) or as a statistic without it (stats);
//         they publish nothing.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include <concurrentqueue.h>

#include <kairos/detail/task.hpp>

#include "cache_line.hpp"

#include "producer_tokens.hpp"

namespace kairos::detail {

class Inbox {
 public:
  static constexpr std::size_t kChunk = 256;           // items per try_dequeue_bulk
  static constexpr std::size_t kWideChunk = 4096;      // ... in drain_through
  static constexpr int kQueryRounds = 16;              // drain_through's bound for a query
  static constexpr int kMaxPasses = 64;                // per drain(): the leader never chases
  static constexpr std::size_t kMaxHeld = 4096;        // confirmed items held back at most (above)
  static constexpr std::uintptr_t kRemoveTag = 1;      // an item with this bit: a remove request
  static constexpr std::uintptr_t kRefileTag = 2;      // this one: a re-arm to an earlier deadline
  static constexpr std::uintptr_t kTags = kRemoveTag | kRefileTag;

  // unconfirmed_ is reserved once for the most one drain() can leave there (kMaxPasses full
  // passes) and a pass more. It grows (doubling, on the leader) when drains in a row leave more:
  // under a flood, and at a shard's first high-water wakes with the long interval (65,536
  // submissions seen before a pass comes back short, leader_wait.hpp); it keeps that room after.
  // Reserving for the long interval up front took that allocation off the leader but cost W5
  // 0.5 byte a timer at a million (the reservation's pages stay resident once a flood filled
  // them), for no throughput measured (PERF.md, sixteenth round).
  Inbox() : queue_(kInitialCapacity), tokens_(queue_), pass_buffer_(new TaskBase*[kWideChunk]) {
    unconfirmed_.reserve(kChunk * (kMaxPasses + 2) + kMaxHeld);
    // Test seam: the sequence starts where a test put it (near 2^32, or a restamp period's
    // end), counted as taken and abandoned, so every count starts at zero as usual.
    const std::uint64_t first = g_first_seq_for_testing.load(std::memory_order_relaxed);  // a test switch
    next_seq_.store(first, std::memory_order_relaxed);
    abandoned_.store(first, std::memory_order_relaxed);
  }
  // Test seams (tests/core/fifo_test.cpp, through Shard::skip_seqs_for_testing): where the next
  // inbox's sequence starts, and n sequence numbers taken at once, as n submissions refused at
  // once would (IN1, IN4).
  static inline std::atomic<std::uint64_t> g_first_seq_for_testing{0};
  std::uint64_t skip_for_testing(std::uint64_t n) noexcept {
    const std::uint64_t s = next_seq_.fetch_add(n, std::memory_order_seq_cst);  // (IN1)
    abandoned_.fetch_add(n, std::memory_order_seq_cst);                         // (IN4)
    return s;
  }

  // -- producers -----------------------------------------------------------------------------
  // (IN1) seq_cst: FIFO (above) and the producer's half of the wait protocol: pairs with the
  // count read (IN5) and the wait's arm (LW2, leader_wait.hpp).
  std::uint64_t take_seq() noexcept { return next_seq_.fetch_add(1, std::memory_order_seq_cst); }
  // (IN2) release inside moodycamel: publishes t's fields; pairs with the dequeue (IN3).
  [[nodiscard]] bool push(TaskBase* t) noexcept {
    try {
      return queue_.enqueue(tokens_.for_this_thread(), t);
    } catch (...) {  // the thread's first token could not be made
      return false;
    }
  }
  // A seq taken by a submission that could not be enqueued (or by a re-arm, after its request).
  // (IN4) seq_cst: pairs with the count read (IN5): a count that sees the seq (IN1) waits for it.
  void abandon() noexcept { abandoned_.fetch_add(1, std::memory_order_seq_cst); }
  // A request about t (kRemoveTag or kRefileTag; the caller holds a reference for it). False if
  // it could not be sent.
  [[nodiscard]] bool post(TaskBase* t, std::uintptr_t tag) noexcept {
    // (IN6) seq_cst, before the item: pairs with removes_sent (IN7): drain_all waits for it.
    posted_.fetch_add(1, std::memory_order_seq_cst);
    if (push(reinterpret_cast<TaskBase*>(reinterpret_cast<std::uintptr_t>(t) | tag))) return true;
    lost_.fetch_add(1, std::memory_order_seq_cst);  // (IN6) as above: the post is undone
    return false;
  }

  // -- counts (any thread) -------------------------------------------------------------------
  // (IN5) seq_cst: the leader's count read of the wait protocol (pairs with IN1 and IN4), and the
  // pending counts (Shard::pending).
  std::uint64_t submitted() const noexcept {
    // abandoned_ first: every abandon it sees gave back a seq taken before it (IN1 before IN4),
    // which the next load then sees too. The other order (C++ leaves the operands' order open)
    // could count the abandons of seqs taken after the seq read: too few submissions, and a
    // re-arm flood could hide a submission from the count read.
    const std::uint64_t abandoned = abandoned_.load(std::memory_order_seq_cst);
    return next_seq_.load(std::memory_order_seq_cst) - abandoned;
  }
  // (IN8) acquire load of the seq count (drain_through's bound): pairs with IN1.
  std::uint64_t seqs_taken() const noexcept { return next_seq_.load(std::memory_order_acquire); }
  std::uint64_t removes_sent() const noexcept {  // (IN7) seq_cst, pairs with (IN6)
    return posted_.load(std::memory_order_seq_cst) - lost_.load(std::memory_order_seq_cst);
  }
  // (IN9) written under the shard lock; atomic so that readers without it get a (stale) value.
  std::uint64_t drained() const noexcept { return drained_.load(std::memory_order_relaxed); }
  std::uint64_t removes_done() const noexcept { return done_.load(std::memory_order_relaxed); }  // (IN9)

  // -- the leader (shard lock held) ----------------------------------------------------------
  // Up to kMaxPasses bulk passes. Requests go to request(t, tag) at once; submissions go to
  // take_in(span) once confirmed (see FIFO), in seq order per producer, a confirmed batch at a
  // time (never empty). True if anything arrived.
  template <class TakeIn, class Request>
  bool drain(TakeIn&& take_in, Request&& request, int max_passes = kMaxPasses, std::size_t chunk = kChunk) {
    return drain_for_leader(take_in, request, [](std::span<TaskBase* const>) { return false; }, max_passes, chunk);
  }
  // drain(), and it ends at the first complete pass whose items may_wait(span of them) lets wait
  // unconfirmed (above), not only at an empty one.
  template <class TakeIn, class Request, class MayWait>
  bool drain_for_leader(TakeIn&& take_in, Request&& request, MayWait&& may_wait, int max_passes = kMaxPasses,
                        std::size_t chunk = kChunk) {
    TaskBase** buf = pass_buffer_.get();
    bool any = false;
    for (int pass = 0; pass < max_passes; ++pass) {
      // Taking in was refused (no memory): leave the rest in the queue until the next drain.
      if (refused_ && pass > 0) break;
      // Room for this pass in unconfirmed_: it grows only under a flood that fills every pass
      // for more than kMaxPasses passes in a row, and not at all when memory is short.
      if (unconfirmed_.size() + chunk > unconfirmed_.capacity() && !compact_or_grow_unconfirmed()) break;
      std::size_t n = queue_.try_dequeue_bulk(buf, chunk);  // (IN3) acquire inside moodycamel, pairs with (IN2)
      if (n < chunk) {  // a complete pass: what was seen before it is confirmed
        ++complete_passes_;
        seen_complete_passes_ += n > 0;
        confirm(take_in);
      }
      may_wait_unconfirmed_ = false;
      const std::size_t pass_begin = unconfirmed_.size();
      for (std::size_t i = 0; i < n; ++i) {
        auto bits = reinterpret_cast<std::uintptr_t>(buf[i]);
        if (bits & kTags) {
          request(reinterpret_cast<TaskBase*>(bits & ~kTags), bits & kTags);
          bump(done_);
        } else {
          bump(drained_);
          unconfirmed_.push_back(buf[i]);
        }
      }
      any |= n > 0;
      if (n == 0) break;
      // A complete pass confirmed everything before it; what it saw itself may wait.
      if (n < chunk && unconfirmed_.size() > pass_begin &&
          may_wait(std::span<TaskBase* const>(unconfirmed_.data() + pass_begin, unconfirmed_.size() - pass_begin))) {
        may_wait_unconfirmed_ = true;
        break;
      }
    }
    return any;
  }
  // Drains until every submission and remove request counted so far has arrived and been
  // confirmed (a submission between its seq and its enqueue is waited for: a few instructions).
  // False if it stopped early because taking in was refused (take_in_refused()).
  template <class TakeIn, class Request>
  bool drain_all(TakeIn&& take_in, Request&& request) {
    for (int i = 0;; ++i) {
      drain(take_in, request);
      if (live() == 0 && drained() == submitted() && removes_done() == removes_sent()) return true;
      if (refused_) return false;  // the timer queue cannot take them in: memory is short
      if (i > 64) std::this_thread::yield();
    }
  }
  // Drains until every submission whose seq was taken before the caller read `seqs_taken` (the
  // seq bound: seqs_taken() at the call's start) and `counted` (submitted() then) has arrived
  // and been confirmed; later submissions may arrive too, but are not waited for. Under steady
  // producers this ends: draining "until empty" would not. What the poller and next_deadline()
  // need (a submission that returned before the call is taken into account by it).
  // The count alone proves nothing about one submission: drained() also counts later items that
  // a pass met first (moodycamel visits producers in no fixed order), so it can reach `counted`
  // while a submission enqueued before the call still sits in its producer's sub-queue. A
  // complete pass begun during the call visited every sub-queue, so it saw every item enqueued
  // before the call: that is what is waited for, beside the count (a counted producer between
  // its seq and its enqueue) and the confirmation of what was seen.
  // `max_rounds` bounds the work of a call that must not chase producers faster than its drain
  // (kQueryRounds: queue_size(), stats(); about 500,000 items): it returns after that many rounds
  // with what it has, which is every item counted before it unless producers outpaced it all
  // along (then the counts it serves are approximate, as they are while producers are busy).
  template <class TakeIn, class Request>
  void drain_through(std::uint64_t counted, std::uint64_t seq_bound, TakeIn&& take_in, Request&& request,
                     int max_rounds = std::numeric_limits<int>::max()) {
    const std::uint64_t passes_before = complete_passes_;
    // First an ordinary drain (the common case: it takes everything in). Then wide passes: a pass
    // confirms only if it comes back short, and under producers nearly as fast as this drain a
    // 256-item pass rarely does; a 4,096-item one does.
    for (int i = 0;; ++i) {
      if (i == 0) drain(take_in, request);
      else drain(take_in, request, kMaxPasses / 8, kWideChunk);
      if (complete_passes_ != passes_before && drained() >= std::min(counted, submitted()) &&
          !holds_unconfirmed_before(seq_bound))
        return;
      if (refused_) return;  // the timer queue cannot take them in: memory is short
      if (i + 1 >= max_rounds) return;
      if (i > 64) std::this_thread::yield();  // a counted producer between its seq and enqueue
    }
  }
  // Items seen but not yet confirmed (not the ones held back on purpose, which are confirmed).
  bool has_unconfirmed() const noexcept { return live() > held_; }
  // The leader must drain again before it waits: items seen and not yet confirmed, unless the
  // last drain ended at a pass whose items may wait (drain_for_leader) and they still may.
  bool needs_confirm_pass(bool may_wait) const noexcept {
    return has_unconfirmed() && !(may_wait && may_wait_unconfirmed_);
  }
  // Anything drained and not taken in: unconfirmed, refused, or held back.
  bool holds_any() const noexcept { return live() != 0; }
  // Confirmed items held back by the last confirm (Shard::take_in_all), at the front.
  std::size_t held() const noexcept { return held_; }
  // During a confirm's take_in: how many of the span's first items the confirm before held back.
  std::size_t previously_held() const noexcept { return previously_held_; }
  // Called by the take_in of a confirm: the last n items of its span are held back on purpose
  // (not taken in, not refused). At most kMaxHeld.
  void hold_back(std::size_t n) noexcept { held_ = std::min(n, kMaxHeld); }
  // The last confirm could not hand over every confirmed item (Shard::take_in_all: the timer
  // queue could not grow). They wait here; the leader retries after a pause, not at once.
  bool take_in_refused() const noexcept { return refused_; }
  std::size_t unconfirmed_count() const noexcept { return live(); }
  // Complete passes that saw items (a test seam's: empty ones come in runs while the leader
  // waits for a counted submission to be enqueued, arm_and_check).
  std::uint64_t seen_complete_passes() const noexcept { return seen_complete_passes_; }
  // Hands every item still here to fn, in order, and forgets them (shutdown_now, settling: they
  // leave without the timer queue).
  template <class Fn>
  void take_unconfirmed(Fn&& fn) {
    for (TaskBase* t : live_span()) fn(t);
    unconfirmed_.clear();
    front_ = 0;
    refused_ = false;
    held_ = 0;
    may_wait_unconfirmed_ = false;
  }
  // An item seen but not confirmed took its seq before `seq_bound`.
  bool holds_unconfirmed_before(std::uint64_t seq_bound) const noexcept {
    for (const TaskBase* t : live_span())
      if (seq_before(t->seq, static_cast<std::uint32_t>(seq_bound))) return true;  // modulo 2^32
    return false;
  }

 private:
  static constexpr std::size_t kInitialCapacity = 1024;

  // take_in(span) returns how many of the span's first tasks it took in; the rest (held back:
  // hold_back(n) during the call; or the timer queue could not grow: Shard::take_in_all) stay
  // here, confirmed, at the front, and are offered again, in order, by the next confirm.
  template <class TakeIn>
  void confirm(TakeIn& take_in) {
    previously_held_ = std::exchange(held_, 0);
    if (live() == 0) return;
    std::size_t taken = take_in(live_span());
    held_ = std::min(held_, live() - taken);
    refused_ = taken + held_ < live();
    front_ += taken;  // the rest stays put: no move of the held block on every confirm
    if (front_ == unconfirmed_.size()) {
      unconfirmed_.clear();
      front_ = 0;
    }
  }
  // unconfirmed_[front_, size()): the items seen and not yet taken in (taken ones before front_
  // are dead). Room at the end: first the dead ones go (the live ones move once), then it grows.
  std::size_t live() const noexcept { return unconfirmed_.size() - front_; }
  std::span<TaskBase* const> live_span() const noexcept { return {unconfirmed_.data() + front_, live()}; }
  bool compact_or_grow_unconfirmed() noexcept {
    if (front_ != 0) {
      unconfirmed_.erase(unconfirmed_.begin(), unconfirmed_.begin() + static_cast<std::ptrdiff_t>(front_));
      front_ = 0;
      if (unconfirmed_.size() + kWideChunk <= unconfirmed_.capacity()) return true;
    }
    return grow_unconfirmed();
  }
  bool grow_unconfirmed() noexcept {
    try {
      unconfirmed_.reserve(2 * unconfirmed_.capacity());
      return true;
    } catch (const std::bad_alloc&) {
      return false;
    }
  }
  static void bump(std::atomic<std::uint64_t>& c) noexcept {  // (IN9) shard lock held: one writer
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // -- written by producers (one line) ---------------------------------------------------------
  alignas(kCacheLine) std::atomic<std::uint64_t> next_seq_{0};
  std::atomic<std::uint64_t> abandoned_{0};
  // -- written by cancellers -----------------------------------------------------------------
  alignas(kCacheLine) std::atomic<std::uint64_t> posted_{0};
  std::atomic<std::uint64_t> lost_{0};
  // -- the queue, then the leader's side ------------------------------------------------------
  alignas(kCacheLine) InboxQueue queue_;
  ProducerTokens tokens_;  // after queue_: destroyed first
  alignas(kCacheLine) std::atomic<std::uint64_t> drained_{0};
  std::atomic<std::uint64_t> done_{0};
  std::vector<TaskBase*> unconfirmed_;  // live from front_ (live_span)
  std::size_t front_ = 0;
  std::unique_ptr<TaskBase*[]> pass_buffer_;  // one pass's items (kWideChunk: drain_through's)
  bool refused_ = false;  // see take_in_refused()
  std::size_t held_ = 0;  // see held(): the first held_ live items
  std::size_t previously_held_ = 0;  // see previously_held()
  bool may_wait_unconfirmed_ = false;  // the last drain stopped at a pass that may wait (above)
  std::uint64_t complete_passes_ = 0;  // passes that came back short (drain_through)
  std::uint64_t seen_complete_passes_ = 0;  // ... with items (seen_complete_passes)
};
// Producers' counters, the requests' counters, the queue and the leader's counters: four lines apart.
static_assert(alignof(Inbox) == kCacheLine);

}  // namespace kairos::detail
