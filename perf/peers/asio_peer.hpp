// asio_peer.hpp: AsioPeer, timers the way a Boost.Asio program writes them: one io_context run by
// one thread, a steady_timer per task, the callback in async_wait's handler.
//
// Design:  schedule() computes the deadline on the caller's thread, allocates the task (a timer
//          and a std::function) and posts the arming to the io_context thread, because a timer
//          object may only be touched by the thread that runs its io_context. cancel() marks the
//          task cancelled (an atomic CAS decides the race with the firing) and posts
//          timer.cancel(), which takes the timer out of asio's queue at once (remove-on-cancel).
//          Fixed rate re-arms from the previous due time (expires_at(due + period)).
//          execute() is a plain post(): asio's way to run something as soon as possible.
// Threads: every member may be called from any thread. Handles must not outlive the AsioPeer.
// Time:    std::chrono::steady_clock; asio's epoll reactor arms a timerfd for the earliest timer.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>

namespace kairos::perf {

struct AsioPeerOptions {
  int cpu = -1;                      // the io_context thread; -1: not pinned
  unsigned long timer_slack_ns = 1;  // of the io_context thread (Linux default 50 us); 0 leaves it
};

class AsioPeer {
 public:
  using Options = AsioPeerOptions;

 private:
  using Clock = std::chrono::steady_clock;
  struct Op {
    enum : int { kPending = 0, kDone = 1, kCancelled = 2 };
    explicit Op(boost::asio::io_context& io) : timer(io) {}
    boost::asio::steady_timer timer;  // io_context thread only (and the last owner's destructor)
    std::function<void()> fn;
    Clock::time_point due;            // set before the arming is posted; then io thread only
    Clock::duration period{0};        // zero: one-shot
    std::atomic<int> state{kPending};
  };
  using OpPtr = std::shared_ptr<Op>;

 public:
  class Handle {
   public:
    Handle() = default;
    // True iff the task was still pending (a periodic task: had not been cancelled before).
    bool cancel() {
      if (!op_) return false;
      int expected = Op::kPending;
      if (!op_->state.compare_exchange_strong(expected, Op::kCancelled, std::memory_order_acq_rel))
        return false;
      boost::asio::post(owner_->io_, [op = op_] { op->timer.cancel(); });
      return true;
    }

   private:
    friend class AsioPeer;
    Handle(OpPtr op, AsioPeer* owner) noexcept : op_(std::move(op)), owner_(owner) {}
    OpPtr op_;
    AsioPeer* owner_ = nullptr;
  };

  explicit AsioPeer(Options o = {}) : work_(boost::asio::make_work_guard(io_)) {
    thread_ = std::thread([this, o] {
      if (o.timer_slack_ns) prctl(PR_SET_TIMERSLACK, o.timer_slack_ns, 0, 0, 0);
      if (o.cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(o.cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
      }
      io_.run();
    });
  }
  AsioPeer(const AsioPeer&) = delete;
  AsioPeer& operator=(const AsioPeer&) = delete;
  ~AsioPeer() {
    work_.reset();
    io_.stop();  // pending timers are dropped with the io_context
    thread_.join();
  }

  template <class F>
  Handle schedule(F&& f, std::chrono::nanoseconds delay) {
    return arm(std::forward<F>(f), Clock::now() + delay, Clock::duration::zero());
  }
  template <class F>
  Handle schedule_at(F&& f, Clock::time_point deadline) {
    return arm(std::forward<F>(f), deadline, Clock::duration::zero());
  }
  template <class F>
  Handle schedule_at_fixed_rate(F&& f, std::chrono::nanoseconds initial_delay, std::chrono::nanoseconds period) {
    return arm(std::forward<F>(f), Clock::now() + initial_delay, period);
  }
  template <class F>
  void execute(F&& f) {
    boost::asio::post(io_, std::forward<F>(f));
  }

  // Timers armed or waiting to be armed, and not yet fired or taken out by a cancel.
  std::size_t pending() const noexcept {
    return static_cast<std::size_t>(pending_.load(std::memory_order_relaxed));
  }
  // Waits until everything posted before the call has run, including the completions that
  // those handlers queued (a cancelled timer's aborted wait): two hops through the queue.
  bool drain(std::chrono::nanoseconds timeout) {
    auto done = std::make_shared<std::promise<void>>();
    auto f = done->get_future();
    boost::asio::post(io_, [this, done] { boost::asio::post(io_, [done] { done->set_value(); }); });
    return f.wait_for(timeout) == std::future_status::ready;
  }

 private:
  template <class F>
  Handle arm(F&& f, Clock::time_point due, Clock::duration period) {
    auto op = std::make_shared<Op>(io_);
    op->fn = std::function<void()>(std::forward<F>(f));
    op->due = due;
    op->period = period;
    pending_.fetch_add(1, std::memory_order_relaxed);
    boost::asio::post(io_, [this, op] {
      if (op->state.load(std::memory_order_acquire) != Op::kPending) return finish();
      op->timer.expires_at(op->due);
      wait(op);
    });
    return Handle(std::move(op), this);
  }

  void wait(const OpPtr& op) {
    op->timer.async_wait([this, op](const boost::system::error_code& ec) { fire(op, ec); });
  }

  void fire(const OpPtr& op, const boost::system::error_code& ec) {  // io thread
    if (ec) return finish();  // operation_aborted: cancelled
    if (op->period == Clock::duration::zero()) {
      int expected = Op::kPending;
      if (op->state.compare_exchange_strong(expected, Op::kDone, std::memory_order_acq_rel)) op->fn();
      return finish();
    }
    if (op->state.load(std::memory_order_acquire) != Op::kPending) return finish();
    op->fn();
    if (op->state.load(std::memory_order_acquire) != Op::kPending) return finish();
    op->due += op->period;
    op->timer.expires_at(op->due);
    wait(op);
  }

  void finish() noexcept { pending_.fetch_sub(1, std::memory_order_relaxed); }

  boost::asio::io_context io_{1};  // concurrency hint 1: one thread runs it
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::atomic<std::int64_t> pending_{0};
  std::thread thread_;
};

}  // namespace kairos::perf
