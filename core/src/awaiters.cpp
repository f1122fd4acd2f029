// awaiters.cpp: protocol AW, coroutines awaiting a task's completion (kairos/coro.hpp).
// Memory:  kBuckets buckets, each a mutex and an intrusive list of AwaitRecord (in the awaiting
//          frames); a record is found by its node's address. Only awaited tasks ever touch it.
// The argument. A coroutine registers (await_register), a completer finishes the task (a CAS of
// `state` to a terminal value) and then wakes (wake_awaiters). Every write of `state` is a
// read-modify-write, so all of them lie in one modification order, and:
//   (AW1) the registrar links its record under the bucket lock, then (AW2) fetch_or's kAwaited
//         into `state`, acq_rel. If the value it replaced was not terminal, the completing CAS
//         comes later in the order: it reads kAwaited (the flag is never cleared), and as an
//         acquire RMW later in the release sequence headed by (AW2) it synchronises with it, so
//         the link (AW1) happens-before the completer's wake, which locks the bucket after the
//         registrar unlocked it and finds the record.
//   (AW3) the completer: finish_completion (core/src/completion.hpp), the one caller of
//         wake_awaiters, with no kairos lock held, for every terminal state: right after the
//         terminal CAS in complete() (a run's end, an orphan's, a discard) and in cancel_task
//         (shard_cancel.cpp, once the pin is clear), and after the unlock for a completion made
//         under a shard's lock (Shard::bury, shard.cpp). Each checks kAwaited in a state it read
//         at or after its terminal CAS.
//   (AW4) the waker unlinks every record of its node under the bucket lock and resumes each one
//         after unlocking. A record is resumed by whoever unlinks it, and it is unlinked once:
//         by a waker, or by the registrar that found the task already terminal at (AW2) (then
//         it resumes itself: await_suspend returns false), or by a frame destroyed while
//         suspended (await_unregister). Several wakers (complete and bury both see kAwaited,
//         or a registrar finds a terminal task whose flag another registrar set) find the list
//         emptied: wake is idempotent, and no record is lost or resumed twice.
// The waker holds a reference to the node until wake returns (its completer's or the scheduler's
// reference), so comparing record->node with it is never a comparison with a reused address of
// a pending registration.
#include <array>
#include <cstdint>
#include <mutex>

#include <kairos/detail/await_table.hpp>

#include "cache_line.hpp"

namespace kairos::detail {
namespace {

constexpr std::size_t kBuckets = 64;

struct alignas(kCacheLine) Bucket {
  std::mutex mu;
  AwaitRecord* head = nullptr;
};
static_assert(sizeof(Bucket) == kCacheLine, "one bucket, one line");

std::array<Bucket, kBuckets>& buckets() noexcept {
  static std::array<Bucket, kBuckets> b;
  return b;
}

Bucket& bucket_of(const TaskBase* t) noexcept {
  auto a = reinterpret_cast<std::uintptr_t>(t);
  return buckets()[(a >> 5) % kBuckets];  // nodes are at least 32 bytes apart
}

// Unlinks r from b's list (b.mu held). True iff it was there.
bool unlink(Bucket& b, AwaitRecord* r) noexcept {
  for (AwaitRecord** p = &b.head; *p != nullptr; p = &(*p)->next)
    if (*p == r) {
      *p = r->next;
      return true;
    }
  return false;
}

}  // namespace

bool await_register(AwaitRecord* r) noexcept {
  TaskBase* t = r->node;
  Bucket& b = bucket_of(t);
  {
    std::lock_guard lk(b.mu);  // (AW1)
    r->next = b.head;
    b.head = r;
  }
  std::uint32_t s = t->state.fetch_or(kAwaited, std::memory_order_acq_rel);  // (AW2)
  if (!is_terminal(s)) return true;
  // Done before we flagged it: its completer may not look. Whoever unlinks r resumes it (AW4).
  std::lock_guard lk(b.mu);
  if (!unlink(b, r)) return true;  // a waker (another awaiter's flag) took it and resumes it
  r->node = nullptr;
  return false;
}

bool await_unregister(AwaitRecord* r) noexcept {
  if (r->node == nullptr) return false;
  Bucket& b = bucket_of(r->node);
  std::lock_guard lk(b.mu);
  if (!unlink(b, r)) return false;
  r->node = nullptr;
  return true;
}

void wake_awaiters(TaskBase* t) noexcept {
  Bucket& b = bucket_of(t);
  AwaitRecord* taken = nullptr;
  {
    std::lock_guard lk(b.mu);  // (AW4)
    for (AwaitRecord** p = &b.head; *p != nullptr;) {
      AwaitRecord* r = *p;
      if (r->node != t) {
        p = &r->next;
        continue;
      }
      *p = r->next;
      r->node = nullptr;
      r->next = taken;
      taken = r;
    }
  }
  // Resumed after unlocking: a resumed coroutine may await again (and lock a bucket). Read
  // `next` first: the resumed frame may end, and the record with it.
  while (taken != nullptr) {
    AwaitRecord* r = taken;
    taken = r->next;
    r->waiter.resume();
  }
}

}  // namespace kairos::detail
