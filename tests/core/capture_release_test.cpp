// Captures are released as soon as a task can no longer run (as Java's FutureTask drops its
// callable on completion, and the JDK's GCRetention test checks cancelled tasks): not when the
// leader next drains, nor when the last copy of the future goes.
#include <gtest/gtest.h>

#include <memory>
#include <stop_token>

#include "support.hpp"

namespace {

using namespace kairos_test;

struct Capture {};

TEST(CaptureRelease, OneShotCallableIsDestroyedWhenItsRunEndsWhileTheFutureLives) {
  kairos_test::Scheduler s(single_thread());
  auto p = std::make_shared<Capture>();
  std::weak_ptr<Capture> w = p;
  auto f = s.schedule([p = std::move(p)] { return 7; }, 0ms);
  EXPECT_EQ(f.get(), 7);
  EXPECT_TRUE(w.expired()) << "the finished task still holds its capture";
  auto copy = f;  // the futures (and the result) live on
  EXPECT_EQ(copy.get(), 7);
}

TEST(CaptureRelease, OneShotThatThrowsReleasesItsCaptureAndKeepsTheException) {
  kairos_test::Scheduler s(single_thread());
  auto p = std::make_shared<Capture>();
  std::weak_ptr<Capture> w = p;
  auto f = s.schedule([p = std::move(p)]() -> int { throw 42; }, 0ms);
  EXPECT_THROW(f.get(), int);
  EXPECT_TRUE(w.expired());
}

// 100 tasks cancelled while the leader sleeps (no wait_idle in between): every capture is gone
// when cancel() returns, with and without remove-on-cancel, whether or not the leader had
// taken the task into its queue yet.
void cancel_releases_at_once(bool remove_on_cancel, bool let_leader_accept_first) {
  kairos::Options o = single_thread();
  o.remove_on_cancel = remove_on_cancel;
  o.wait = kairos::WaitPolicy::sleep();
  kairos_test::Scheduler s(o);
  std::vector<std::weak_ptr<Capture>> weak;
  std::vector<kairos::ScheduledFuture<void>> futures;
  for (int i = 0; i < 100; ++i) {
    auto p = std::make_shared<Capture>();
    weak.push_back(p);
    futures.push_back(s.schedule([p = std::move(p)] {}, 1h));
  }
  if (let_leader_accept_first) {
    ASSERT_TRUE(s.wait_idle(kPatience));
  }
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(futures[i].cancel());
    EXPECT_TRUE(weak[i].expired()) << "task " << i << " still holds its capture after cancel()";
  }
  EXPECT_EQ(s.queue_size(), remove_on_cancel ? 0u : 100u);
}

TEST(CaptureRelease, CancelUnderRemoveOnCancelReleasesBeforeTheLeaderDrains) { cancel_releases_at_once(true, false); }
TEST(CaptureRelease, CancelUnderRemoveOnCancelReleasesQueuedTasks) { cancel_releases_at_once(true, true); }
TEST(CaptureRelease, CancelWithoutRemoveOnCancelReleasesTooThoughTheTaskIsRetained) {
  cancel_releases_at_once(false, false);
  cancel_releases_at_once(false, true);
}

TEST(CaptureRelease, PeriodicCallableGoesWithItsLastRun) {
  Manual s;
  auto p = std::make_shared<Capture>();
  std::weak_ptr<Capture> w = p;
  Gate in_run, release_run;
  std::atomic<int> runs{0};
  auto f = s.schedule_at_fixed_rate(
      [p = std::move(p), &in_run, &release_run, &runs] {
        if (runs.fetch_add(1) == 1) {
          in_run.open();
          release_run.wait();
        }
      },
      1ms, 1ms);
  s.clock.advance(1ms);
  ASSERT_TRUE(eventually([&] { return runs.load() == 1 && s.wait_idle(0ms); }));
  EXPECT_FALSE(w.expired());  // it runs again
  s.clock.advance(1ms);
  ASSERT_TRUE(in_run.wait());
  EXPECT_TRUE(f.cancel());    // during its second run: no run follows
  EXPECT_FALSE(w.expired());  // the run still uses it
  release_run.open();
  EXPECT_TRUE(eventually([&] { return w.expired(); })) << "the last run ended, the capture stayed";
}

TEST(CaptureRelease, TasksReturnedByShutdownNowReleaseWhenRunOrDropped) {
  Manual s;
  auto a = std::make_shared<Capture>(), b = std::make_shared<Capture>();
  std::weak_ptr<Capture> wa = a, wb = b;
  auto fa = s.schedule([a = std::move(a)] {}, 1h);
  auto fb = s.schedule([b = std::move(b)] {}, 2h);
  std::vector<kairos::Task> tasks = s.shutdown_now();
  ASSERT_EQ(tasks.size(), 2u);
  tasks[0].run();
  EXPECT_TRUE(wa.expired());
  EXPECT_FALSE(wb.expired());
  tasks.clear();  // dropped: cancelled
  EXPECT_TRUE(wb.expired());
  EXPECT_TRUE(fb.is_cancelled());
}

}  // namespace
