// PageArray: contents survive growth in place, new slots of resize_zeroed are null, and growing
// to a million elements leaves no old copy resident.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include <unistd.h>

#include "page_array.hpp"

namespace kairos::detail {
namespace {

std::int64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long size = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<std::int64_t>(resident) * sysconf(_SC_PAGESIZE) : -1;
}

TEST(PageArray, ContentsSurviveGrowthAndMoves) {
  PageArray<std::uintptr_t> a;
  for (std::uintptr_t i = 0; i < 300'000; ++i) a.push_back(i * 7);
  ASSERT_EQ(a.size(), 300'000u);
  for (std::uintptr_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], i * 7);
  EXPECT_EQ(a.back(), 299'999u * 7);
  a.pop_back();
  EXPECT_EQ(a.size(), 299'999u);
  PageArray<std::uintptr_t> b(std::move(a));
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(b[12345], 12345u * 7);
  std::vector<std::uintptr_t> few{1, 2, 3};
  b.assign(few);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(b.front(), 1u);
  a = std::move(b);
  EXPECT_EQ(a.items().size(), 3u);
  EXPECT_EQ(a.items()[2], 3u);
}

TEST(PageArray, ResizeZeroedGivesNullSlotsAndKeepsTheOldOnes) {
  PageArray<void*> a;
  a.resize_zeroed(1024);
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], nullptr);
  int x = 0;
  a[5] = &x;
  a.resize_zeroed(1 << 20);
  EXPECT_EQ(a[5], &x);
  for (std::size_t i = 1024; i < a.size(); i += 4099) ASSERT_EQ(a[i], nullptr);
}

// A std::vector doubling to 8 MB leaves its freed copies to malloc, which keeps them resident
// for reuse; a PageArray grows in place, so the resident growth is the 8 MB written.
TEST(PageArray, GrowingToAMillionLeavesNoCopyResident) {
#if defined(KAIROS_SANITIZED) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow pages count in the resident set";
#endif
  const std::int64_t before = resident_bytes();
  ASSERT_GT(before, 0);
  PageArray<void*> a;
  for (std::size_t i = 0; i < 1'000'000; ++i) a.push_back(&a);
  const std::int64_t growth = resident_bytes() - before;
  std::printf("[ pages    ] resident growth %.2f MB for 8.00 MB of pointers (capacity %zu)\n", growth / 1e6,
              a.capacity());
  EXPECT_LE(growth, 8'000'000 + 256 * 1024);
}

}  // namespace
}  // namespace kairos::detail
