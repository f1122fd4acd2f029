// The restamp pass's arithmetic (core/src/restamp.hpp): old stamps renumbered in their order,
// below every young one, equal ones kept equal; and a long simulation in which tasks live far
// longer than 2^31 sequence numbers while every comparison keeps matching their true order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <kairos/detail/task.hpp>

#include "restamp.hpp"

namespace {

using kairos::detail::kRestampEvery;
using kairos::detail::kYoungSpan;
using kairos::detail::renumber_old;
using kairos::detail::seq_before;
using kairos::detail::stamp_is_old;
using kairos::detail::StampRef;

TEST(Restamp, OldMeansFartherBehindThanTheYoungSpanAndNotAhead) {
  EXPECT_FALSE(stamp_is_old(0));
  EXPECT_FALSE(stamp_is_old(kYoungSpan));
  EXPECT_TRUE(stamp_is_old(kYoungSpan + 1));
  EXPECT_TRUE(stamp_is_old((std::uint32_t{1} << 31) - 1));
  EXPECT_FALSE(stamp_is_old(std::uint32_t{1} << 31));  // a stamp ahead of the reference
  EXPECT_FALSE(stamp_is_old(0xFFFFFFFFu));
}

TEST(Restamp, OldStampsKeepTheirOrderBelowTheYoungOnesAndEqualOnesStayEqual) {
  const std::uint32_t reference = 5;  // the window wraps below it
  std::vector<std::uint32_t> stamps = {reference - kYoungSpan - 10, reference - kYoungSpan - 1000,
                                       reference - kYoungSpan - 10, reference - (std::uint32_t{1} << 31) + 1};
  const std::uint32_t young = reference - kYoungSpan;  // exactly the span: young
  std::vector<StampRef> old;
  for (std::uint32_t& s : stamps) old.push_back(StampRef{&s, reference - s});
  EXPECT_EQ(renumber_old(old, reference), 3u);
  EXPECT_TRUE(seq_before(stamps[3], stamps[1]));  // oldest first
  EXPECT_TRUE(seq_before(stamps[1], stamps[0]));
  EXPECT_EQ(stamps[0], stamps[2]);  // equal stamps stay equal (a task's filed and latest key)
  EXPECT_EQ(stamps[0], young - 1);  // dense, ending just below the young span
  EXPECT_EQ(stamps[3], young - 3);
  EXPECT_TRUE(seq_before(stamps[0], young));
}

// Tasks with true 64-bit sequence numbers, stamped with their low 32 bits. The sequence runs on
// for 2^36 numbers (16 wraps of the stamps), a restamp period at a time; some tasks live through
// all of it (a market-open timer, a periodic task), others come and go. After each pass, every
// pair of live stamps, and each against the stamp a new submission would get, compares as the
// true sequence numbers do. Without the pass the long-lived ones are misordered after 2^31.
TEST(Restamp, PassesEveryPeriodKeepTheTrueOrderWithoutAHorizon) {
  struct Task {
    std::uint64_t seq;    // true order
    std::uint32_t stamp;  // what the shard stores
  };
  std::mt19937_64 rng(42);
  std::vector<Task> live;
  std::uint64_t next = 0;
  auto submit = [&] {
    live.push_back(Task{next, static_cast<std::uint32_t>(next)});
    ++next;
  };
  for (int i = 0; i < 50; ++i) submit();  // long-lived ones
  for (int period = 0; period < 256; ++period) {
    // Some submissions at random places in the period, some departures (never the first 20).
    next += rng() % (kRestampEvery / 2);
    for (int i = 0; i < 10; ++i) submit();
    for (int i = 0; i < 8 && live.size() > 20; ++i) live.erase(live.begin() + 20 + static_cast<std::ptrdiff_t>(rng() % (live.size() - 20)));
    next = (next / kRestampEvery + 1) * kRestampEvery;  // the next period begins: its pass
    const std::uint32_t reference = static_cast<std::uint32_t>(next);
    std::vector<StampRef> old;
    for (Task& t : live)
      if (stamp_is_old(reference - t.stamp)) old.push_back(StampRef{&t.stamp, reference - t.stamp});
    renumber_old(old, reference);
    const std::uint32_t fresh = static_cast<std::uint32_t>(next + kRestampEvery - 1);  // the period's last
    for (const Task& a : live) {
      ASSERT_TRUE(seq_before(a.stamp, fresh)) << "period " << period;
      for (const Task& b : live) {
        if (a.seq < b.seq) {
          ASSERT_TRUE(seq_before(a.stamp, b.stamp)) << "period " << period;
        }
      }
    }
  }
  EXPECT_GE(next, std::uint64_t{1} << 36);
}

}  // namespace
