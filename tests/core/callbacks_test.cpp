// callbacks_test.cpp: the audit of every place kairos calls user code (docs/api.md, "Where kairos
// calls your code"). Each row of that table is a callback site (a task body, a hook, on_uncaught,
// on_rejected, on_wake, a capture's destructor on each path that drops it, a coroutine resumed on
// each path that resumes it); each column a call on the same scheduler made from inside it. Every
// cell is run here: one fresh scheduler per cell, the callback makes its one call, the test
// checks that the call returned (a Watchdog turns a deadlock into a failure naming the cell
// within kHangLimit), what it returned or threw, on which thread the callback ran, and that the
// scheduler still works afterwards (or terminates, after a call that ends it). The outcome of
// every cell is printed ("[cell] ..."), and the count ("callbacks x calls tested").
//
// Linked twice (tests/core/CMakeLists.txt): callbacks_test against scheduler threads, and
// callbacks_poll_test (kairos_test::kPollMode) against poll mode, where the test's own thread is
// the loop (it polls): not the suite's LoopDriven wrapper, whose destructor joins its loop thread
// and so cannot run inside a task of its own loop (the destructor is one of the calls tested).
// Time is a ManualClock: a task is due when the test advances it; nothing waits for real time
// except the timed calls under test (wait_idle, await_termination, wait_for of 50 ms).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <kairos/coro.hpp>
#include <kairos/kairos.hpp>

#include "detached.hpp"
#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos::ManualClock;
using kairos_test::eventually;
using kairos_test::Gate;
using kairos_test::kHangLimit;
using kairos_test::kPatience;
using kairos_test::kPollMode;
using kairos_test::Watchdog;
using S = kairos::BasicScheduler<ManualClock>;  // poll_mode set in callbacks_poll_test

// ---- the columns: what the callback calls ------------------------------------------------------
enum class Call {
  schedule,           // schedule(f, 0ms) of a new task
  cancel_self,        // cancel() of the callback's own task (where it has one)
  cancel_other,       // cancel() of another pending task
  rearm,              // rearm(2h) of another pending re-armable task
  next_deadline,      // poll mode only
  poll,               // poll mode only
  shutdown,
  shutdown_now,       // the Tasks returned are dropped at once (their futures: cancelled)
  wait_idle,          // wait_idle(50ms)
  await_termination,  // await_termination(50ms)
  close,
  destructor,         // the scheduler deleted from inside
  stats,              // stats(), queue_size(), purge()
  get_own,            // get() of its own task's future: wait_for(50ms) first, get() if ready
};
constexpr Call kCalls[] = {Call::schedule,     Call::cancel_self,   Call::cancel_other, Call::rearm,
                           Call::next_deadline, Call::poll,         Call::shutdown,     Call::shutdown_now,
                           Call::wait_idle,    Call::await_termination, Call::close,   Call::destructor,
                           Call::stats,        Call::get_own};
const char* name(Call c) {
  switch (c) {
    case Call::schedule: return "schedule";
    case Call::cancel_self: return "cancel(self)";
    case Call::cancel_other: return "cancel(other)";
    case Call::rearm: return "rearm(other)";
    case Call::next_deadline: return "next_deadline";
    case Call::poll: return "poll";
    case Call::shutdown: return "shutdown";
    case Call::shutdown_now: return "shutdown_now";
    case Call::wait_idle: return "wait_idle(50ms)";
    case Call::await_termination: return "await_termination(50ms)";
    case Call::close: return "close";
    case Call::destructor: return "destructor";
    case Call::stats: return "stats/queue_size/purge";
    case Call::get_own: return "get(own)";
  }
  return "?";
}
bool ends_it(Call c) {  // after this call the scheduler is shut down (or gone)
  return c == Call::shutdown || c == Call::shutdown_now || c == Call::close || c == Call::destructor;
}

// ---- the rows: where kairos calls the user's code ----------------------------------------------
enum class Row {
  task_body,
  periodic_body,
  on_uncaught,
  on_rejected,
  on_wake,
  before_execute,
  decorate_task,
  after_execute,
  terminated,
  capture_run_ended,
  capture_cancelled,
  capture_shutdown_policy,
  capture_shutdown_now_task,
  capture_destructor,
  sleep_deadline,
  sleep_stop,
  sleep_shutdown,
  sleep_shutdown_now_task,
  sleep_destructor,
  await_completed,
  await_cancelled,
};
constexpr Row kRows[] = {Row::task_body,         Row::periodic_body,           Row::on_uncaught,
                         Row::on_rejected,       Row::on_wake,                 Row::before_execute,
                         Row::decorate_task,     Row::after_execute,           Row::terminated,
                         Row::capture_run_ended, Row::capture_cancelled,       Row::capture_shutdown_policy,
                         Row::capture_shutdown_now_task, Row::capture_destructor, Row::sleep_deadline,
                         Row::sleep_stop,        Row::sleep_shutdown,          Row::sleep_shutdown_now_task,
                         Row::sleep_destructor,  Row::await_completed,         Row::await_cancelled};
const char* name(Row r) {
  switch (r) {
    case Row::task_body: return "task body";
    case Row::periodic_body: return "periodic task body";
    case Row::on_uncaught: return "on_uncaught (a periodic run threw)";
    case Row::on_rejected: return "on_rejected (capacity reached)";
    case Row::on_wake: return "on_wake (a re-arm woke the loop)";
    case Row::before_execute: return "before_execute";
    case Row::decorate_task: return "decorate_task (before run())";
    case Row::after_execute: return "after_execute";
    case Row::terminated: return "terminated";
    case Row::capture_run_ended: return "capture dtor: one-shot run ended";
    case Row::capture_cancelled: return "capture dtor: cancel() won";
    case Row::capture_shutdown_policy: return "capture dtor: shutdown() policy dropped it";
    case Row::capture_shutdown_now_task: return "capture dtor: shutdown_now()'s Task dropped";
    case Row::capture_destructor: return "capture dtor: scheduler destroyed";
    case Row::sleep_deadline: return "sleep resumed: deadline";
    case Row::sleep_stop: return "sleep resumed: request_stop()";
    case Row::sleep_shutdown: return "sleep resumed: shutdown() policy";
    case Row::sleep_shutdown_now_task: return "sleep resumed: shutdown_now()'s Task dropped";
    case Row::sleep_destructor: return "sleep resumed: scheduler destroyed";
    case Row::await_completed: return "co_await future: completed";
    case Row::await_cancelled: return "co_await future: cancelled";
  }
  return "?";
}
// The callback's own task, whose future the row's cancel(self) and get(own) use.
bool has_self(Row r) {
  return r != Row::on_rejected && r != Row::terminated && r != Row::sleep_deadline && r != Row::sleep_stop &&
         r != Row::sleep_shutdown && r != Row::sleep_shutdown_now_task && r != Row::sleep_destructor;
}
// Rows that run inside the scheduler's destructor: a second destructor call would be a double delete.
bool inside_destructor(Row r) { return r == Row::capture_destructor || r == Row::sleep_destructor; }
// Rows whose callback runs inside a run on the thread that runs the shard's tasks.
bool inside_a_run(Row r) {
  return r == Row::task_body || r == Row::periodic_body || r == Row::on_uncaught || r == Row::before_execute ||
         r == Row::decorate_task || r == Row::after_execute || r == Row::capture_run_ended ||
         r == Row::sleep_deadline || r == Row::await_completed;
}

bool applicable(Row r, Call c) {
  if (r == Row::on_wake && !kPollMode) return false;  // no loop to wake
  if ((c == Call::next_deadline || c == Call::poll) && !kPollMode) return false;
  if ((c == Call::cancel_self || c == Call::get_own) && !has_self(r)) return false;
  if (c == Call::destructor && inside_destructor(r)) return false;
  return true;
}

// Cells that found a defect in kairos: skipped by the row (counted apart), kept as tests of their
// own that skip saying why. None now: the audit's one defect (the scheduler destroyed from user
// code that shutdown() runs: a capture its policy drops, a sleep it resumes; Engine::shutdown()
// then read the freed engine) is fixed (shutdown(), shutdown_now(), the policy setters, purge()
// and discard_oldest keep the engine alive across the user code they run), and its two cells run
// in their rows and in the two tests below.
const char* defect(Row, Call) {
  return nullptr;
}

// Clocks outlive every scheduler: a scheduler destroyed from inside one of its tasks lets that
// thread finish its task after the cell ends, and the engine reads its clock until it is gone.
kairos::ManualClock& a_clock() {
  static std::mutex mu;
  static std::deque<kairos::ManualClock> clocks;
  std::lock_guard lock(mu);
  return clocks.emplace_back();
}

// One cell: a scheduler, the tasks the calls act on, and what the callback saw.
struct Cell {
  Cell(Row r, Call c) : row(r), call(c) {}
  Row row;
  Call call;
  ManualClock& clock = a_clock();
  S* s = nullptr;      // what the calls use; stays set while the scheduler is destroyed
  S* owned = nullptr;  // who still has to delete it (null once deleted or being deleted)
  kairos::ScheduledFuture<void> self, other, rearmable;
  std::atomic<bool> armed{false};      // the next callback makes the call (once)
  std::thread::id test_thread = std::this_thread::get_id();
  Gate go;                             // a callback on another thread waits until the trigger returned
  std::string outcome;                 // written by the callback before `performed`
  bool on_test_thread = false;
  bool shut_down_before = false;       // the scheduler was shut down when the callback made the call
  std::atomic<bool> performed{false};  // (CB1) release: the last touch of the cell by the callback
};

void destroy(Cell& x) {
  S* p = std::exchange(x.owned, nullptr);
  delete p;
}

std::string perform(Cell& x) {
  S& s = *x.s;
  try {
    switch (x.call) {
      case Call::schedule: {
        auto f = s.schedule([] {}, 0ms);
        return f.is_cancelled() ? "future, cancelled (rejected)" : "future";
      }
      case Call::cancel_self: return x.self.cancel() ? "true" : "false";
      case Call::cancel_other: return x.other.cancel() ? "true" : "false";
      case Call::rearm: return x.rearmable.rearm(2h) ? "true" : "false";
      case Call::next_deadline: {
        auto d = s.next_deadline();
        return d ? std::to_string(kairos_test::ns(*d) / 1'000'000) + " ms" : "nullopt";
      }
      case Call::poll: return std::to_string(s.poll());
      case Call::shutdown: s.shutdown(); return "returns";
      case Call::shutdown_now: {
        auto tasks = s.shutdown_now();
        std::size_t n = tasks.size();
        tasks.clear();
        return std::to_string(n) + " tasks";
      }
      case Call::wait_idle: return s.wait_idle(50ms) ? "true" : "false";
      case Call::await_termination: return s.await_termination(50ms) ? "true" : "false";
      case Call::close: s.close(); return "returns";
      case Call::destructor: destroy(x); return "returns";
      case Call::stats: {
        auto st = s.stats();
        std::size_t q = s.queue_size();
        std::size_t p = s.purge();
        return "returns (" + std::to_string(st.shards.size()) + " shard, queue " + std::to_string(q) + ", purged " +
               std::to_string(p) + ")";
      }
      case Call::get_own:
        if (x.self.wait_for(50ms) == std::future_status::timeout) return "self-wait (not done after 50 ms)";
        x.self.get();
        return "returns";
    }
  } catch (const kairos::RejectedExecution&) {
    return "throws RejectedExecution";
  } catch (const kairos::CancelledError&) {
    return "throws CancelledError";
  } catch (const std::logic_error& e) {
    return std::string("throws logic_error: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("throws ") + e.what();
  }
  return "?";
}

// Every callback of every row calls this: the first call after the cell is armed makes the call.
void fire(Cell& x) {
  if (!x.armed.exchange(false, std::memory_order_acq_rel)) return;
  x.on_test_thread = std::this_thread::get_id() == x.test_thread;
  if (!x.on_test_thread) x.go.wait();  // the trigger's own call on the scheduler has returned
  x.shut_down_before = x.s->is_shutdown();
  x.outcome = perform(x);
  x.performed.store(true, std::memory_order_release);  // (CB1) pairs with the test's acquire
}

// A capture whose destructor is the callback (the callable itself does nothing).
struct Capture {
  Cell* x;
  explicit Capture(Cell* c) noexcept : x(c) {}
  Capture(Capture&& o) noexcept : x(std::exchange(o.x, nullptr)) {}
  Capture(const Capture&) = delete;
  ~Capture() {
    if (x) fire(*x);
  }
  void operator()() const {}
};

using kairos_test::Detached;  // the smallest coroutine type (tests/support/detached.hpp)
Detached sleeper(Cell& x, kairos::Duration d, std::stop_token token) {
  try {
    co_await kairos::sleep_for(*x.s, d, std::move(token));
  } catch (const kairos::CancelledError&) {
  }
  fire(x);
}
Detached awaiter(Cell& x, kairos::ScheduledFuture<void> f) {
  try {
    co_await f;
  } catch (const kairos::CancelledError&) {
  }
  fire(x);
}

// Counts what was run, for "callbacks x calls tested".
struct Tally {
  std::mutex mu;
  std::vector<Row> rows;
  int cells = 0, not_applicable = 0, defects = 0;
  void add(Row r, int run, int na, int bad) {
    std::lock_guard lock(mu);
    if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
    cells += run;
    not_applicable += na;
    defects += bad;
  }
};
Tally& tally() {
  static Tally t;
  return t;
}
class PrintTally : public ::testing::Environment {
 public:
  void TearDown() override {
    Tally& t = tally();
    std::printf(
        "callbacks x calls tested (%s): %zu callbacks x %zu calls: %d cells run, %d defects skipped, %d not "
        "applicable\n",
        kPollMode ? "poll mode" : "scheduler threads", t.rows.size(), std::size(kCalls), t.cells, t.defects,
        t.not_applicable);
  }
};
[[maybe_unused]] ::testing::Environment* const g_tally = ::testing::AddGlobalTestEnvironment(new PrintTally);

kairos::Options options_for(Cell& x) {
  kairos::Options o;
  o.shards = 1;
  o.threads_per_shard = 1;
  o.poll_mode = kPollMode;
  o.execute_existing_delayed_tasks_after_shutdown = false;  // close() need not wait for the clock
  Cell* c = &x;
  switch (x.row) {
    case Row::on_uncaught: o.on_uncaught = [c](std::exception_ptr) { fire(*c); }; break;
    case Row::on_rejected:
      o.capacity = 2;  // `other` and `rearmable` fill the shard
      o.on_rejected = [c](kairos::Task, const kairos::RejectionInfo&) { fire(*c); };
      break;
    case Row::on_wake: o.on_wake = [c] { fire(*c); }; break;
    case Row::before_execute: o.before_execute = [c](const kairos::ExecutionInfo&) { fire(*c); }; break;
    case Row::decorate_task:
      o.decorate_task = [c](const kairos::ExecutionInfo&, kairos::RunFn run) {
        fire(*c);
        run();
      };
      break;
    case Row::after_execute:
      o.after_execute = [c](const kairos::ExecutionInfo&, std::exception_ptr) { fire(*c); };
      break;
    case Row::terminated: o.terminated = [c] { fire(*c); }; break;
    default: break;
  }
  return o;
}

// In poll mode the test's thread is the loop: it runs what is due.
void drive(Cell& x) {
  if (kPollMode && x.owned) x.s->poll();
}

// Sets up the row's callback and makes kairos call it.
void trigger(Cell& x, std::stop_source& stop) {
  S& s = *x.s;
  auto arm = [&] { x.armed.store(true, std::memory_order_release); };
  auto due = [&] {
    arm();
    x.clock.advance(1ms);
    drive(x);
  };
  switch (x.row) {
    case Row::task_body:
      x.self = s.schedule([c = &x] { fire(*c); }, 1ms);
      due();
      break;
    case Row::periodic_body:
      x.self = s.schedule_at_fixed_rate([c = &x] { fire(*c); }, 1ms, 1h);
      due();
      break;
    case Row::on_uncaught:
      x.self = s.schedule_at_fixed_rate([] { throw std::runtime_error("the run failed"); }, 1ms, 1h);
      due();
      break;
    case Row::on_rejected:
      arm();
      (void)s.schedule([] {}, 1ms);  // over capacity: on_rejected, here
      break;
    case Row::on_wake:
      x.self = s.schedule_rearmable([] {}, 1h);
      s.poll();
      (void)s.next_deadline();  // arms the wake-up at 1h
      arm();
      (void)kairos::ScheduledFuture<void>(x.self).rearm(1ms);  // earlier: wakes the loop, here
      break;
    case Row::before_execute:
    case Row::decorate_task:
    case Row::after_execute:
      x.self = s.schedule([] {}, 1ms);
      due();
      break;
    case Row::terminated:
      arm();
      s.shutdown();
      drive(x);  // poll mode: the poll that finds nothing left terminates
      break;
    case Row::capture_run_ended:
      x.self = s.schedule(Capture(&x), 1ms);
      due();
      break;
    case Row::capture_cancelled:
      x.self = s.schedule(Capture(&x), 1h);
      arm();
      (void)kairos::ScheduledFuture<void>(x.self).cancel();
      break;
    case Row::capture_shutdown_policy:
      x.self = s.schedule(Capture(&x), 1h);
      arm();
      s.shutdown();
      drive(x);
      break;
    case Row::capture_shutdown_now_task:
      x.self = s.schedule(Capture(&x), 1h);
      arm();
      s.shutdown_now().clear();
      break;
    case Row::capture_destructor:
      x.self = s.schedule(Capture(&x), 1h);
      arm();
      destroy(x);
      break;
    case Row::sleep_deadline:
      sleeper(x, kairos::Duration(1ms), {});
      due();
      break;
    case Row::sleep_stop:
      sleeper(x, kairos::Duration(1h), stop.get_token());
      arm();
      stop.request_stop();
      break;
    case Row::sleep_shutdown:
      sleeper(x, kairos::Duration(1h), {});
      arm();
      s.shutdown();
      drive(x);
      break;
    case Row::sleep_shutdown_now_task:
      sleeper(x, kairos::Duration(1h), {});
      arm();
      s.shutdown_now().clear();
      break;
    case Row::sleep_destructor:
      sleeper(x, kairos::Duration(1h), {});
      arm();
      destroy(x);
      break;
    case Row::await_completed:
      x.self = s.schedule([] {}, 1ms);
      awaiter(x, x.self);
      due();
      break;
    case Row::await_cancelled:
      x.self = s.schedule([] {}, 1h);
      awaiter(x, x.self);
      arm();
      (void)kairos::ScheduledFuture<void>(x.self).cancel();
      break;
  }
}

bool allowed_throw(const Cell& x) {
  const std::string& o = x.outcome;
  if (o.rfind("throws", 0) != 0) return true;
  if (x.call == Call::schedule && o == "throws RejectedExecution") return x.shut_down_before;
  if (x.call == Call::get_own) return true;  // the task's own outcome (CancelledError, its exception)
  return false;
}

// One cell: returns its printed line.
void run_cell(Row row, Call call) {
  const std::string what = std::string(name(row)) + " x " + name(call);
  SCOPED_TRACE(what);
  Watchdog watchdog(what, kHangLimit);
  Cell x{row, call};
  x.owned = x.s = new S(options_for(x), x.clock);
  x.other = x.s->schedule([] {}, 1h);
  x.rearmable = x.s->schedule_rearmable([] {}, 1h);
  drive(x);  // poll mode: the test's thread is the loop from here on
  std::stop_source stop;
  trigger(x, stop);
  x.go.open();
  ASSERT_TRUE(eventually([&] { return x.performed.load(std::memory_order_acquire); }))
      << what << ": the callback never made its call";
  std::printf("[cell] %-46s | %-24s | %-15s | %s\n", name(row), name(call),
              x.on_test_thread ? (kPollMode ? "test (loop)" : "test") : "scheduler", x.outcome.c_str());
  EXPECT_TRUE(allowed_throw(x)) << what << ": " << x.outcome;

  // What the table promises of some cells.
  if (inside_a_run(row) && (call == Call::wait_idle || call == Call::await_termination)) {
    EXPECT_EQ(x.outcome, "false") << what;
  }
  if ((row == Row::task_body || row == Row::periodic_body || row == Row::before_execute ||
       row == Row::decorate_task) &&
      call == Call::get_own) {
    EXPECT_EQ(x.outcome, "self-wait (not done after 50 ms)") << what;
  }
  if (call == Call::schedule && !x.shut_down_before && row != Row::on_rejected) {
    EXPECT_EQ(x.outcome, "future") << what;
  }
  if ((call == Call::cancel_other || call == Call::rearm) && !x.shut_down_before) {
    EXPECT_EQ(x.outcome, "true") << what;
  }

  // Afterwards: the scheduler still works, or (a call ended it) terminates.
  if (x.owned) {
    S& s = *x.s;
    if (!s.is_shutdown()) {
      EXPECT_FALSE(ends_it(call)) << what << ": still running after " << name(call);
      if (row != Row::on_rejected) {  // its shard is at capacity
        auto probe = s.schedule([] {}, 0ms);
        drive(x);
        EXPECT_EQ(probe.wait_for(kPatience), std::future_status::ready) << what << ": a task after the call never ran";
      }
    } else {
      EXPECT_TRUE(s.await_termination(kPatience)) << what << ": shut down but never terminated";
    }
    destroy(x);
  }
  EXPECT_TRUE(x.other.is_done() || !ends_it(call)) << what << ": a pending task outlived its scheduler's end";
}

void run_row(Row row) {
  int run = 0, na = 0, bad = 0;
  for (Call c : kCalls) {
    if (!applicable(row, c)) {
      ++na;
      continue;
    }
    if (const char* why = defect(row, c)) {
      std::printf("[cell] %-46s | %-24s | DEFECT, skipped here (its own test): %s\n", name(row), name(c), why);
      ++bad;
      continue;
    }
    run_cell(row, c);
    ++run;
    if (::testing::Test::HasFatalFailure()) return;
  }
  tally().add(row, run, na, bad);
  std::printf("callbacks x calls tested: %s x %d calls (%d defects skipped, %d not applicable)\n", name(row), run,
              bad, na);
}

TEST(Callbacks, TaskBody) { run_row(Row::task_body); }
TEST(Callbacks, PeriodicTaskBody) { run_row(Row::periodic_body); }
TEST(Callbacks, OnUncaught) { run_row(Row::on_uncaught); }
TEST(Callbacks, OnRejected) { run_row(Row::on_rejected); }
TEST(Callbacks, OnWake) {
  if (!kPollMode) GTEST_SKIP() << "on_wake is poll mode's (callbacks_poll_test runs it)";
  run_row(Row::on_wake);
}
TEST(Callbacks, BeforeExecute) { run_row(Row::before_execute); }
TEST(Callbacks, DecorateTask) { run_row(Row::decorate_task); }
TEST(Callbacks, AfterExecute) { run_row(Row::after_execute); }
TEST(Callbacks, Terminated) { run_row(Row::terminated); }
TEST(Callbacks, CaptureDestroyedWhenItsRunEnds) { run_row(Row::capture_run_ended); }
TEST(Callbacks, CaptureDestroyedByCancel) { run_row(Row::capture_cancelled); }
TEST(Callbacks, CaptureDestroyedByShutdownPolicy) { run_row(Row::capture_shutdown_policy); }
TEST(Callbacks, CaptureDestroyedWithShutdownNowTask) { run_row(Row::capture_shutdown_now_task); }
TEST(Callbacks, CaptureDestroyedByTheDestructor) { run_row(Row::capture_destructor); }
TEST(Callbacks, SleepResumedByItsDeadline) { run_row(Row::sleep_deadline); }
TEST(Callbacks, SleepResumedByStop) { run_row(Row::sleep_stop); }
TEST(Callbacks, SleepResumedByShutdownPolicy) { run_row(Row::sleep_shutdown); }
TEST(Callbacks, SleepResumedByShutdownNowTaskDrop) { run_row(Row::sleep_shutdown_now_task); }
TEST(Callbacks, SleepResumedByTheDestructor) { run_row(Row::sleep_destructor); }
TEST(Callbacks, AwaitedFutureResumedByCompletion) { run_row(Row::await_completed); }
TEST(Callbacks, AwaitedFutureResumedByCancel) { run_row(Row::await_cancelled); }

// The audit's defect, kept as tests of its own: the scheduler destroyed from user code that
// shutdown() runs (ASan and TSan reported a use after free of the engine before the fix).
TEST(Callbacks, DestructorFromACaptureThatShutdownPolicyDrops) {
  run_cell(Row::capture_shutdown_policy, Call::destructor);
}
TEST(Callbacks, DestructorFromASleepThatShutdownPolicyResumes) { run_cell(Row::sleep_shutdown, Call::destructor); }

// on_thread_start runs before the constructor returns (the constructor waits for every thread's
// call): the scheduler it starts does not exist yet, so no call of it can be made there.
TEST(Callbacks, OnThreadStartRunsBeforeTheSchedulerExists) {
  if (kPollMode) GTEST_SKIP() << "poll mode has no scheduler thread (on_thread_start must be empty)";
  Watchdog watchdog("on_thread_start", kHangLimit);
  std::atomic<int> started{0};
  std::atomic<S*> seen{nullptr};
  S* built = nullptr;
  kairos::Options o;
  o.threads_per_shard = 2;
  o.on_thread_start = [&](const kairos::ThreadInfo&) {
    seen.store(built, std::memory_order_relaxed);  // still null: the constructor has not returned
    started.fetch_add(1);
  };
  ManualClock& clock = a_clock();
  {
    S s(o, clock);
    built = &s;
    EXPECT_EQ(started.load(), 2);
    EXPECT_EQ(seen.load(), nullptr);
  }
}

}  // namespace
