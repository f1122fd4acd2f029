// model_test.cpp: model-based random testing of kairos against the reference model (model.hpp).
//   KAIROS_MODEL_SECONDS     time spent on random sequences (default 20; if unset and
//                            KAIROS_STRESS_SECONDS is set, 5x that, at most 20)
//   KAIROS_STRESS_SEED       replay one seed
//   KAIROS_MODEL_KEEP_GOING  report up to 5 failing sequences instead of stopping at the first
// A failing sequence is shrunk and printed as a GoogleTest test; paste it below (ModelRegression).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>

#include "driver.hpp"
#include "model.hpp"
#include "support.hpp"

namespace kairos_model {
namespace {

double model_seconds() {
  if (std::getenv("KAIROS_MODEL_SECONDS")) return kairos_test::env_seconds("KAIROS_MODEL_SECONDS", 20);
  if (std::getenv("KAIROS_STRESS_SECONDS"))
    return std::min(20.0, 5 * kairos_test::env_seconds("KAIROS_STRESS_SECONDS", 4));
  return 20;
}

TEST(Model, RandomSequencesAgreeWithKairos) {
  std::uint64_t seed = kairos_test::stress_seed();
  bool replay = std::getenv("KAIROS_STRESS_SEED") != nullptr;
  bool keep_going = std::getenv("KAIROS_MODEL_KEEP_GOING") != nullptr;
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(model_seconds());
  std::mt19937_64 rng(seed);
  std::size_t sequences = 0, ops = 0, failures = 0;
  std::set<std::string> seen;
  while (std::chrono::steady_clock::now() < end || (replay && sequences == 0)) {
    std::uint64_t sequence_seed = rng();
    std::mt19937_64 one(sequence_seed);
    std::vector<std::uint8_t> bytes = random_bytes(one, 48);
    Sequence s = enc::decode(bytes.data(), bytes.size());
    std::string r = check(s, &ops);
    ++sequences;
    if (r.empty()) continue;
    std::size_t checks = 0;
    Sequence small = shrink(s, &checks);
    std::string why = check(small);
    if (why.empty()) why = r;  // flaky while shrinking: keep the original failure text
    std::string kind = why.substr(why.find(':') == std::string::npos ? 0 : why.find(':'));
    if (!seen.insert(kind.substr(0, 40)).second && keep_going) continue;
    ++failures;
    char name[64];
    std::snprintf(name, sizeof name, "Seed%016llx", static_cast<unsigned long long>(sequence_seed));
    ADD_FAILURE() << "kairos differs from the model (KAIROS_STRESS_SEED=" << seed << ", sequence "
                  << sequences << ", " << s.ops.size() << " ops, shrunk to " << small.ops.size()
                  << " in " << checks << " runs):\n  " << r << "\nShrunk:\n"
                  << to_gtest(small, name, why);
    if (!keep_going || failures >= 5 || replay) break;
  }
  std::printf("[ model    ] seed=%llu: %zu sequences, %zu operations applied, %zu failing\n",
              static_cast<unsigned long long>(seed), sequences, ops, failures);
}

TEST(Model, ByteEncodingRoundTrips) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::uint8_t> bytes = random_bytes(rng, 48);
    Sequence s = enc::decode(bytes.data(), bytes.size());
    std::vector<std::uint8_t> again = enc::encode(s);
    ASSERT_FALSE(again.empty());
    Sequence t = enc::decode(again.data(), again.size());
    ASSERT_EQ(t.config, s.config);
    ASSERT_EQ(t.ops, s.ops);
  }
}

// The model itself, on sequences whose outcome is worked out by hand.
TEST(Model, ReferenceModelCatchesUpFixedRateRunsBackToBack) {
  Model m{Config{}};
  Expect ex;
  m.apply(op::fixed_rate(1 * kMs, 1 * kMs), ex);
  m.apply(op::advance(10 * kMs), ex);
  ASSERT_EQ(m.log().size(), 10u);
  for (const RunRecord& r : m.log()) EXPECT_EQ(r.now, 10 * kMs);
  EXPECT_EQ(m.tasks()[0].deadline, 11 * kMs);
}

TEST(Model, ReferenceModelOrdersEqualDeadlinesBySubmission) {
  Model m{Config{}};
  Expect ex;
  m.apply(op::fixed_rate(1, 2 * kMs), ex);  // task 0: due at 1 ns, then every 2 ms
  m.apply(op::schedule(2 * kMs + 1), ex);    // task 1: due with task 0's second run
  m.apply(op::advance(5 * kMs), ex);
  std::vector<RunRecord> want = {{0, 0, 5 * kMs}, {0, 1, 5 * kMs}, {1, 0, 5 * kMs}, {0, 2, 5 * kMs}};
  EXPECT_EQ(m.log(), want);
}

TEST(Model, ReferenceModelRetainsCancelledTasksUntilTheirDeadline) {
  Model m{Config{}};
  Expect ex;
  m.apply(op::schedule(5 * kMs), ex);
  m.apply(op::cancel(0), ex);
  EXPECT_TRUE(ex.cancel_result);
  EXPECT_EQ(m.queue_size(), 1u);
  m.apply(op::advance(5 * kMs), ex);
  EXPECT_EQ(m.queue_size(), 0u);
  EXPECT_TRUE(m.log().empty());
}

// ---- regressions: shrunk sequences that once failed ---------------------------------------------

// A ManualClock driven to its largest time point: the leader spun holding its lock, and
// wait_idle() did not return (the driver's watchdog ended the run).
TEST(ModelRegression, IdleSchedulerAtTheEndOfTime) {
  Sequence s{{}, {
      op::advance(kMax),
      op::submit(),  // task 0
  }};
  EXPECT_EQ(check(s), "");
}

// The same with a fixed-rate task whose next deadline saturates: it ran again and again.
TEST(ModelRegression, SaturatedFixedRateDeadlineAtTheEndOfTime) {
  Sequence s{{}, {
      op::fixed_rate(0, kMax),  // task 0
      op::schedule(kMax),       // task 1
      op::advance(kMax),
      op::cancel(0),
  }};
  EXPECT_EQ(check(s), "");
}

// A task re-armed to a later deadline and then cancelled (remove-on-cancel off) is retained, as
// every cancelled task is, until its deadline: the newest one. It left at the deadline it was
// filed at (4 ms): queue_size() was 0 at 20 ms, the model says 1 until 21 ms.
TEST(ModelRegression, CancelledAfterRearmIsRetainedUntilTheNewestDeadline) {
  Sequence s{{}, {
      op::schedule_rearmable(4 * kMs),  // task 0
      op::rearm(0, 21 * kMs),
      op::cancel(0),
      op::advance(20 * kMs),
      op::advance(1 * kMs),
  }};
  EXPECT_EQ(check(s), "");
}

// discard_oldest cancels the task that is earliest now. It took the head of the heap by the key
// a re-armed task was filed at: task 0, re-armed from 3 ms to 14 ms, was cancelled instead of
// task 1 (10 ms).
TEST(ModelRegression, DiscardOldestTakesTheEarliestDeadlineAfterARearm) {
  Sequence s{{.rejection = kairos::Rejection::discard_oldest, .capacity = 2}, {
      op::schedule_rearmable(3 * kMs),  // task 0
      op::schedule(10 * kMs),           // task 1
      op::rearm(0, 14 * kMs),
      op::schedule(12 * kMs),           // task 2: discards task 1
      op::advance(20 * kMs),
  }};
  EXPECT_EQ(check(s), "");
}

}  // namespace
}  // namespace kairos_model
