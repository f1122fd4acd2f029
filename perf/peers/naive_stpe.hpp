// naive_stpe.hpp: NaiveStpe, a scheduler built by hand the way Java's ScheduledThreadPoolExecutor
// is built (its DelayedWorkQueue and ScheduledFutureTask), the main peer of kairos's workloads.
//
// Design:  one std::mutex guards a binary min-heap of tasks keyed by (deadline, seq); each task
//          keeps its heap index, so remove-on-cancel is O(log n). One std::condition_variable,
//          leader/follower: the worker that becomes leader waits timed for the head's deadline,
//          every other idle worker waits untimed; a submission that becomes the new head clears
//          the leader and signals one waiter. Each submission allocates its task (a shared node
//          holding a std::function) and returns a shared future-like handle with cancel().
// Threads: every member may be called from any thread, also from inside a task. A handle may
//          outlive the scheduler (cancel() then only marks it), but not race its destructor.
// Time:    std::chrono::steady_clock in ns; a task never starts before its deadline. Fixed-rate
//          run n is due at first + n * period (late runs catch up at once, as in Java).
// Shutdown: the destructor drops every pending task (their handles read cancelled) and joins
//          the workers after their current task.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>

namespace kairos::perf {

class NaiveStpe {
 public:
  struct Options {
    unsigned threads = 1;
    bool remove_on_cancel = false;  // Java's setRemoveOnCancelPolicy
    std::vector<int> cpus;          // worker i pinned to cpus[i % size]; empty: not pinned
    unsigned long timer_slack_ns = 1;  // of the workers (Linux default 50 us); 0 leaves it
  };

 private:
  // Java's ScheduledFutureTask.
  struct Node {
    enum : int { kPending = 0, kDone = 1, kCancelled = 2 };
    std::int64_t deadline = 0;    // mu_ while queued; the runner between pop and re-queue
    std::uint64_t seq = 0;        // mu_: submission order, breaks deadline ties
    std::int64_t period = 0;      // 0: one-shot; > 0: fixed rate
    std::ptrdiff_t heap_index = -1;  // mu_: slot in heap_, -1 when not queued
    std::function<void()> fn;
    std::exception_ptr error;     // written before state leaves kPending (release)
    std::atomic<int> state{kPending};
    std::atomic<NaiveStpe*> owner;  // cleared by the destructor

    explicit Node(NaiveStpe* o) : owner(o) {}
    bool complete(int to) noexcept {  // pending -> done | cancelled, wakes get()
      int expected = kPending;
      if (!state.compare_exchange_strong(expected, to, std::memory_order_acq_rel)) return false;
      state.notify_all();
      return true;
    }
  };
  using NodePtr = std::shared_ptr<Node>;

 public:
  class Future {  // Java's ScheduledFuture: copyable, shares the task node
   public:
    Future() = default;
    // True iff the task was still pending (also while a periodic task waits for its next run).
    bool cancel() {
      if (!node_ || !node_->complete(Node::kCancelled)) return false;
      if (NaiveStpe* o = node_->owner.load(std::memory_order_acquire); o && o->remove_on_cancel_)
        o->remove(node_);
      return true;
    }
    void get() const {  // blocks; rethrows the task's exception; throws if cancelled
      node_->state.wait(Node::kPending, std::memory_order_acquire);
      if (node_->state.load(std::memory_order_acquire) == Node::kCancelled)
        throw std::runtime_error("naive-stpe: task cancelled");
      if (node_->error) std::rethrow_exception(node_->error);
    }
    bool is_done() const noexcept { return node_ && node_->state.load() != Node::kPending; }
    bool is_cancelled() const noexcept { return node_ && node_->state.load() == Node::kCancelled; }

   private:
    friend class NaiveStpe;
    explicit Future(NodePtr n) noexcept : node_(std::move(n)) {}
    NodePtr node_;
  };

  explicit NaiveStpe(Options o) : remove_on_cancel_(o.remove_on_cancel) {
    if (o.threads == 0) throw std::invalid_argument("naive-stpe: threads must be >= 1");
    for (unsigned i = 0; i < o.threads; ++i) {
      int cpu = o.cpus.empty() ? -1 : o.cpus[i % o.cpus.size()];
      workers_.emplace_back([this, cpu, slack = o.timer_slack_ns] { work(cpu, slack); });
    }
  }
  NaiveStpe(const NaiveStpe&) = delete;
  NaiveStpe& operator=(const NaiveStpe&) = delete;

  ~NaiveStpe() {
    std::vector<NodePtr> dropped;
    {
      std::lock_guard lock(mu_);
      shutdown_ = true;
      dropped.swap(heap_);
      for (auto& n : dropped) n->heap_index = -1;
    }
    available_.notify_all();
    for (auto& t : workers_) t.join();
    for (auto& n : dropped) {
      n->owner.store(nullptr, std::memory_order_release);
      n->complete(Node::kCancelled);
    }
  }

  template <class F>
  Future schedule(F&& f, std::chrono::nanoseconds delay) {
    return Future(enqueue(std::forward<F>(f), deadline_after(delay.count()), 0));
  }
  template <class F>
  Future schedule_at(F&& f, std::chrono::steady_clock::time_point deadline) {
    return Future(enqueue(std::forward<F>(f), to_ns(deadline), 0));
  }
  template <class F>
  Future schedule_at_fixed_rate(F&& f, std::chrono::nanoseconds initial_delay,
                                std::chrono::nanoseconds period) {
    if (period.count() <= 0) throw std::invalid_argument("naive-stpe: period must be > 0");
    return Future(enqueue(std::forward<F>(f), deadline_after(initial_delay.count()), period.count()));
  }
  template <class F>
  void execute(F&& f) {  // zero delay, no handle kept (Java's execute)
    enqueue(std::forward<F>(f), now_ns(), 0);
  }

  std::size_t queue_size() const {
    std::lock_guard lock(mu_);
    return heap_.size();
  }

 private:
  static std::int64_t to_ns(std::chrono::steady_clock::time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  static std::int64_t now_ns() noexcept { return to_ns(std::chrono::steady_clock::now()); }
  static std::int64_t deadline_after(std::int64_t delay) noexcept {
    std::int64_t now = now_ns(), d;
    if (delay < 0) delay = 0;
    if (__builtin_add_overflow(now, delay, &d)) d = INT64_MAX;
    return d;
  }

  template <class F>
  NodePtr enqueue(F&& f, std::int64_t deadline, std::int64_t period) {
    auto n = std::make_shared<Node>(this);
    n->fn = std::function<void()>(std::forward<F>(f));
    n->deadline = deadline;
    n->period = period;
    offer(n);
    return n;
  }

  // Java's DelayedWorkQueue.offer: the new head clears the leader and wakes one waiter.
  void offer(const NodePtr& n) {
    bool new_head;
    {
      std::lock_guard lock(mu_);
      if (shutdown_) throw std::runtime_error("naive-stpe: shut down");
      n->seq = next_seq_++;
      n->heap_index = static_cast<std::ptrdiff_t>(heap_.size());
      heap_.push_back(n);
      sift_up(heap_.size() - 1);
      new_head = heap_.front() == n;
      if (new_head) leader_ = std::thread::id();
    }
    if (new_head) available_.notify_one();
  }

  void remove(const NodePtr& n) {
    std::lock_guard lock(mu_);
    std::ptrdiff_t i = n->heap_index;
    if (i < 0 || static_cast<std::size_t>(i) >= heap_.size() || heap_[i] != n) return;
    erase_at(static_cast<std::size_t>(i));
  }

  // Java's DelayedWorkQueue.take: returns the head once due, or null after shutdown.
  NodePtr take(std::unique_lock<std::mutex>& lock) {
    const std::thread::id me = std::this_thread::get_id();
    NodePtr out;
    for (;;) {
      if (shutdown_) break;
      if (heap_.empty()) {
        available_.wait(lock);
        continue;
      }
      std::int64_t deadline = heap_.front()->deadline;
      if (deadline - now_ns() <= 0) {
        out = std::move(heap_.front());
        erase_at(0, out);
        break;
      }
      if (leader_ != std::thread::id()) {
        available_.wait(lock);
      } else {
        leader_ = me;
        available_.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline)));
        if (leader_ == me) leader_ = std::thread::id();
      }
    }
    if (leader_ == std::thread::id() && !heap_.empty()) available_.notify_one();
    return out;
  }

  void work(int cpu, unsigned long slack) {
    if (slack) prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }
    for (;;) {
      NodePtr n;
      {
        std::unique_lock lock(mu_);
        n = take(lock);
      }
      if (!n) return;
      run(n);
    }
  }

  void run(const NodePtr& n) {
    if (n->state.load(std::memory_order_acquire) != Node::kPending) return;  // cancelled, retained
    if (n->period == 0) {
      try {
        n->fn();
      } catch (...) {
        n->error = std::current_exception();
      }
      n->complete(Node::kDone);
      return;
    }
    try {
      n->fn();
    } catch (...) {
      n->error = std::current_exception();
      n->complete(Node::kDone);
      return;
    }
    if (n->state.load(std::memory_order_acquire) != Node::kPending) return;
    n->deadline += n->period;  // fixed rate: from the previous due time, never from now
    try {
      offer(n);
    } catch (const std::runtime_error&) {  // shut down meanwhile
      n->complete(Node::kCancelled);
    }
  }

  // -- heap, all under mu_ -------------------------------------------------------------------
  static bool earlier(const Node& a, const Node& b) noexcept {
    return a.deadline < b.deadline || (a.deadline == b.deadline && a.seq < b.seq);
  }
  void place(std::size_t i, NodePtr n) noexcept {
    n->heap_index = static_cast<std::ptrdiff_t>(i);
    heap_[i] = std::move(n);
  }
  void sift_up(std::size_t i) noexcept {
    NodePtr n = std::move(heap_[i]);
    while (i > 0) {
      std::size_t parent = (i - 1) / 2;
      if (!earlier(*n, *heap_[parent])) break;
      place(i, std::move(heap_[parent]));
      i = parent;
    }
    place(i, std::move(n));
  }
  void sift_down(std::size_t i) noexcept {
    NodePtr n = std::move(heap_[i]);
    const std::size_t size = heap_.size();
    for (;;) {
      std::size_t child = 2 * i + 1;
      if (child >= size) break;
      if (child + 1 < size && earlier(*heap_[child + 1], *heap_[child])) ++child;
      if (!earlier(*heap_[child], *n)) break;
      place(i, std::move(heap_[child]));
      i = child;
    }
    place(i, std::move(n));
  }
  // Removes heap_[i] (already moved into `taken` by the caller, or dropped here).
  void erase_at(std::size_t i, const NodePtr& taken = nullptr) noexcept {
    if (taken) taken->heap_index = -1;
    else heap_[i]->heap_index = -1;
    NodePtr last = std::move(heap_.back());
    heap_.pop_back();
    if (i == heap_.size()) return;
    const Node* moved = last.get();
    place(i, std::move(last));
    sift_down(i);
    if (heap_[i].get() == moved) sift_up(i);  // it did not go down: it may have to go up
  }

  mutable std::mutex mu_;
  std::condition_variable available_;
  std::vector<NodePtr> heap_;              // mu_
  std::uint64_t next_seq_ = 0;             // mu_
  std::thread::id leader_;                 // mu_: the worker waiting timed for the head
  bool shutdown_ = false;                  // mu_
  const bool remove_on_cancel_;
  std::vector<std::thread> workers_;
};

}  // namespace kairos::perf
