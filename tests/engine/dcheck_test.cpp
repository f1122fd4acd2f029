// KAIROS_DCHECK (core/src/dcheck.hpp): a failed precondition aborts with its text in debug and
// sanitizer builds; a release build does not evaluate it.
#include <gtest/gtest.h>

#include "dcheck.hpp"

namespace {

#if !defined(NDEBUG) || defined(KAIROS_DEBUG_CHECKS)
TEST(DCheckDeathTest, AFailedCheckAbortsNamingTheCondition) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int held = 0;
  EXPECT_DEATH(KAIROS_DCHECK(held == 1), "check failed: held == 1");
}

TEST(DCheck, APassingCheckIsEvaluatedOnce) {
  int n = 0;
  KAIROS_DCHECK(++n == 1);
  EXPECT_EQ(n, 1);
}
#else
TEST(DCheck, AReleaseBuildDoesNotEvaluateTheCondition) {
  int n = 0;
  KAIROS_DCHECK(++n == 1);
  EXPECT_EQ(n, 0);
}
#endif

}  // namespace
