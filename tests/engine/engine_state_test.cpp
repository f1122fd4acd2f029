// engine_state_test.cpp: the engine's clock read (core/src/engine_state.hpp, edge MC1): now_ns
// follows a ManualClock until release_clock, then answers the time of the release without
// reading the clock again (the clock may be gone); on the steady clock release_clock changes
// nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>

#include <kairos/clock.hpp>
#include <kairos/detail/steady_clock.hpp>  // steady_now_ns
#include <kairos/options.hpp>

#include "engine_state.hpp"
#include "support.hpp"

namespace kairos::detail {
namespace {

using namespace std::chrono_literals;

// Before the release, every read is the clock's time at that moment.
TEST(EngineState, NowFollowsTheManualClockBeforeTheRelease) {
  ManualClock clock;
  EngineState state(Options{}, &clock);
  EXPECT_EQ(state.now_ns(), 0);
  clock.advance(5ms);
  EXPECT_EQ(state.now_ns(), 5'000'000);
  clock.advance(1ns);
  EXPECT_EQ(state.now_ns(), 5'000'001);
  EXPECT_FALSE(state.clock_released.load());
}

// (MC1) After release_clock, now_ns answers the clock's time at the release and never reads
// the clock again: an advance is not seen, and a read after the clock is destroyed (heap: ASan
// reports a read of it) still answers.
TEST(EngineState, AfterTheReleaseNowAnswersTheReleaseTimeWithoutTheClock) {
  auto clock = std::make_unique<ManualClock>();
  EngineState state(Options{}, clock.get());
  clock->advance(7ms);
  state.release_clock();
  EXPECT_EQ(state.now_ns(), 7'000'000);
  clock->advance(1h);
  EXPECT_EQ(state.now_ns(), 7'000'000) << "now_ns read the clock after the release";
  clock.reset();
  EXPECT_EQ(state.now_ns(), 7'000'000);
}

// A steady-clock state (no ManualClock) has nothing to release: now_ns still reads the steady
// clock, never going back and moving on.
TEST(EngineState, ReleaseOnTheSteadyClockChangesNothing) {
  EngineState state(Options{}, nullptr);
  state.release_clock();
  EXPECT_FALSE(state.clock_released.load());
  const std::int64_t first = state.now_ns();
  std::int64_t last = first;
  bool monotone = true;
  auto moved = [&] {
    const std::int64_t now = state.now_ns();
    monotone = monotone && now >= last;
    last = now;
    return now > first;
  };
  EXPECT_TRUE(kairos_test::eventually(moved)) << "now_ns stood still after release_clock";
  EXPECT_TRUE(monotone);
  EXPECT_GE(steady_now_ns(), last);
}

}  // namespace
}  // namespace kairos::detail
