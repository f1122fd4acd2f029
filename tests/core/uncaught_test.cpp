// uncaught_test.cpp: exceptions nobody can get() in kairos (execute()'d tasks, failed periodic
// tasks) reach Options::on_uncaught; the thread keeps working, even if on_uncaught throws.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::eventually;
using kairos_test::kPatience;
using kairos_test::single_thread;

struct Boom : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class UncaughtLog {
 public:
  void add(std::exception_ptr e) {
    std::lock_guard lock(mu_);
    errors_.push_back(e);
    threads_.push_back(std::this_thread::get_id());
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return errors_.size();
  }
  std::exception_ptr error(std::size_t i) const {
    std::lock_guard lock(mu_);
    return errors_.at(i);
  }
  std::thread::id thread(std::size_t i) const {
    std::lock_guard lock(mu_);
    return threads_.at(i);
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread::id> threads_;
};

TEST(Uncaught, ExecuteExceptionReachesOnUncaughtAndTheThreadKeepsWorking) {
  UncaughtLog log;
  std::exception_ptr thrown;
  std::thread::id task_thread;
  std::mutex mu;
  kairos::Options o = single_thread();
  o.on_uncaught = [&](std::exception_ptr e) { log.add(e); };
  kairos_test::Scheduler s(o);
  s.execute([&] {
    auto e = std::make_exception_ptr(Boom("from execute"));
    {
      std::lock_guard lock(mu);
      thrown = e;
      task_thread = std::this_thread::get_id();
    }
    std::rethrow_exception(e);
  });
  // The single thread survives: a later task runs, after on_uncaught for the first one.
  auto later = s.submit([] { return std::this_thread::get_id(); });
  std::thread::id later_thread = later.get();
  ASSERT_TRUE(eventually([&] { return log.size() == 1; }));
  std::lock_guard lock(mu);
  EXPECT_EQ(log.error(0), thrown) << "on_uncaught must get the task's own exception";
  EXPECT_EQ(log.thread(0), task_thread) << "on_uncaught runs on the thread that ran the task";
  EXPECT_NE(later_thread, std::this_thread::get_id());
  try {
    std::rethrow_exception(log.error(0));
  } catch (const Boom& e) {
    EXPECT_STREQ(e.what(), "from execute");
  }
}

TEST(Uncaught, ManyFailuresAllReported) {
  UncaughtLog log;
  kairos::Options o = kairos_test::threads(2, 2);
  o.on_uncaught = [&](std::exception_ptr e) { log.add(e); };
  kairos_test::Scheduler s(o);
  for (int i = 0; i < 50; ++i) s.execute([i] { throw i; });
  ASSERT_TRUE(eventually([&] { return log.size() == 50; }));
  std::vector<bool> seen(50, false);
  for (std::size_t k = 0; k < 50; ++k) {
    try {
      std::rethrow_exception(log.error(k));
    } catch (int i) {
      seen.at(i) = true;
    }
  }
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(seen[i]) << i;
  EXPECT_EQ(s.submit([] { return 1; }).get(), 1);
}

// A task whose future someone holds does not go to on_uncaught: get() reports it.
TEST(Uncaught, SubmittedTaskExceptionGoesOnlyToGet) {
  std::atomic<int> uncaught{0};
  kairos::Options o = single_thread();
  o.on_uncaught = [&](std::exception_ptr) { ++uncaught; };
  kairos_test::Scheduler s(o);
  auto f = s.submit([]() -> int { throw Boom("for get"); });
  auto g = s.schedule([] { throw Boom("for get too"); }, 1ms);
  EXPECT_THROW(f.get(), Boom);
  EXPECT_THROW(g.get(), Boom);
  // Same single thread: once this runs, any on_uncaught call for f or g has returned.
  s.submit([] {}).get();
  EXPECT_EQ(uncaught, 0);
}

struct NotAnException {  // a thrown type with no std base
  int code;
};

TEST(Uncaught, ThrowingOnUncaughtIsDropped) {
  std::atomic<int> calls{0};
  kairos::Options o = single_thread();
  o.on_uncaught = [&](std::exception_ptr) {
    if (++calls % 2) throw std::logic_error("on_uncaught fails too");
    throw NotAnException{calls};
  };
  kairos_test::Scheduler s(o);
  s.execute([] { throw Boom("first"); });
  EXPECT_EQ(s.submit([] { return 1; }).get(), 1);
  s.execute([] { throw Boom("second"); });
  EXPECT_EQ(s.submit([] { return 2; }).get(), 2);
  ASSERT_TRUE(eventually([&] { return calls == 2; }));
  auto p = s.schedule_at_fixed_rate([] { throw Boom("periodic"); }, 0ms, 1ms);
  EXPECT_THROW(p.get(), Boom);
  ASSERT_TRUE(eventually([&] { return calls == 3; }));
  EXPECT_EQ(s.submit([] { return 3; }).get(), 3);
  s.shutdown();
  ASSERT_TRUE(s.await_termination(kPatience));
}

// With no on_uncaught set, one line per exception goes to stderr (its what(), or "non-std" for
// a type with no std base) and the thread keeps working.
TEST(Uncaught, DefaultWritesOneLineToStderr) {
  testing::internal::CaptureStderr();
  std::string out;
  {
    kairos_test::Scheduler s(single_thread());
    s.execute([] { throw Boom("kairos-stderr-probe"); });
    s.execute([] { throw NotAnException{1}; });
    EXPECT_EQ(s.submit([] { return 4; }).get(), 4);
    // The report is written before the thread takes the next task.
  }
  out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  EXPECT_NE(out.find("kairos-stderr-probe"), std::string::npos) << out;
  EXPECT_NE(out.find("non-std"), std::string::npos) << out;
}

}  // namespace
