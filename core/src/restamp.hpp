// restamp.hpp: order stamps without a horizon: the arithmetic of the restamp pass
// (shard_restamp.cpp runs it on a shard).
//
// A task's order stamp is the low 32 bits of its shard's 64-bit sequence number (inbox.hpp,
// IN1), compared modulo 2^32 (seq_before, detail/task.hpp). That comparison is exact between two
// stamps whose sequence numbers lie fewer than 2^31 apart, and a task may wait far longer than
// 2^31 submissions of its shard (a schedule_at(market_open) made hours before; a periodic task,
// which keeps the stamp of its submission, as Java's class keeps its sequence number). So the
// stamps that live long are renumbered, in order, before they fall out of the window:
//
//   Every kRestampEvery sequence numbers (the producer that takes the first one of a period posts
//   a restamp request), the shard's leader takes a reference R (the sequence numbers taken so
//   far), takes in every submission stamped before R, and visits every stamp it holds (the timer
//   queue, the runners' batches, a re-armable task's latest key). A stamp older than kYoungSpan
//   (R - stamp > kYoungSpan, modulo 2^32) is old; the D distinct old stamps are renumbered, in
//   their order, to the D values just below R - kYoungSpan. Young stamps stay as they are.
//
// Why the order is kept. Before the pass every live stamp lies within 2^31 of R (the invariant
// below), so seq_before orders them all as their sequence numbers do. The renumbering keeps
// the old stamps' order among themselves (dense ranks in that order), keeps them before every
// young stamp (they end below R - kYoungSpan, where the young ones begin), and never makes two
// different stamps equal; equal stamps (a re-armable task's filed and latest key, before any
// re-arm) stay equal. So every comparison the queue, the runs and the batches made still holds:
// no structure needs re-sorting, only the sorted runs' cached back keys are read again.
//
// The invariant: every live stamp lies within 2^31 of every stamp it may be compared with. After
// a pass at R, the oldest stamp is at least R - kYoungSpan - D. The next pass runs about
// kRestampEvery sequence numbers later, plus however many the leader takes in before it gets to
// the request (at most what the inbox holds). So a comparison meets stamps at most
// kRestampEvery + kYoungSpan + D + (in flight) apart, under 2^31 while a shard holds fewer than
// kMaxHeld tasks (old ones, and those in flight to it, together): 2^30 tasks, 40 GiB of nodes.
//
// Cost: the pass visits every task the shard holds (one node read each) and sorts the old
// stamps (O(D log D)); it runs once every kRestampEvery = 2^28 submissions or re-arms of a shard,
// about every 13 s at 20 M submissions per second, every 3 hours at 25,000. The leader does
// nothing else meanwhile: 2 ms over 100,000 pending tasks, 29 ms over a million (PERF.md).
// (A narrower window could not make it rarer; more stamp bits would: see docs/design.md.)
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace kairos::detail {

inline constexpr std::uint64_t kRestampEvery = std::uint64_t{1} << 28;
inline constexpr std::uint32_t kYoungSpan = std::uint32_t{1} << 29;
inline constexpr std::uint64_t kMaxHeld = std::uint64_t{1} << 30;
static_assert(kRestampEvery + kYoungSpan + kMaxHeld < (std::uint64_t{1} << 31),
              "a pass keeps every stamp a comparison meets within the modular window");

// True if the sequence numbers [first, first + n) hold the first one of a restamp period other
// than the very first (0): whoever takes them asks for a pass (Shard::take_seq, RN1).
constexpr bool restamp_period_begins(std::uint64_t first, std::uint64_t n) noexcept {
  return (first + n - 1) / kRestampEvery > (first == 0 ? 0 : (first - 1) / kRestampEvery);
}
static_assert((kRestampEvery & (kRestampEvery - 1)) == 0, "a power of two");
// The same for one sequence number (n = 1), as a submission asks it: a test of its low 28 bits
// and a branch, the rest only on the first seq of a period.
constexpr bool restamp_period_begins_at(std::uint64_t seq) noexcept {
  return (seq & (kRestampEvery - 1)) == 0 && seq != 0;
}
static_assert(!restamp_period_begins_at(0) && restamp_period_begins_at(kRestampEvery) &&
                  !restamp_period_begins_at(kRestampEvery + 1) && !restamp_period_begins_at(kRestampEvery - 1) &&
                  restamp_period_begins_at(5 * kRestampEvery),
              "restamp_period_begins(seq, 1)");
static_assert(!restamp_period_begins(0, 1) && restamp_period_begins(kRestampEvery, 1) &&
                  !restamp_period_begins(kRestampEvery + 1, 1) && restamp_period_begins(1, kRestampEvery) &&
                  !restamp_period_begins(1, kRestampEvery - 1),
              "a period begins where its first sequence number is taken");

// One stamp the pass visits: where it lives and how far it lies behind the reference.
struct StampRef {
  std::uint32_t* stamp;
  std::uint32_t age;  // reference - *stamp, modulo 2^32: old if in (kYoungSpan, 2^31)
};

// Old: more than kYoungSpan behind the reference, and not ahead of it (a stamp taken after the
// reference, by a re-arm the pass did not hold off, is 2^32 - (its lead) "behind": young).
constexpr bool stamp_is_old(std::uint32_t age) noexcept { return age > kYoungSpan && age < (std::uint32_t{1} << 31); }

// Renumbers the old stamps of `old` (every entry old, relative to `reference`) as above: oldest
// first, distinct stamps to consecutive values ending just below reference - kYoungSpan. Returns
// how many distinct stamps there were. Sorts `old` in place.
inline std::size_t renumber_old(std::vector<StampRef>& old, std::uint32_t reference) noexcept {
  std::sort(old.begin(), old.end(), [](const StampRef& a, const StampRef& b) { return a.age > b.age; });
  std::size_t distinct = 0;
  for (std::size_t i = 0; i < old.size(); ++i)
    if (i == 0 || old[i].age != old[i - 1].age) ++distinct;
  const std::uint32_t first = reference - kYoungSpan - static_cast<std::uint32_t>(distinct);
  std::uint32_t next = first - 1;
  for (std::size_t i = 0; i < old.size(); ++i) {
    if (i == 0 || old[i].age != old[i - 1].age) ++next;
    *old[i].stamp = next;
  }
  return distinct;
}

}  // namespace kairos::detail
