// model.hpp: an obviously-correct reference model of one kairos shard with one thread on a
// ManualClock, and the byte encoding of the operations that the model-based tests and the fuzz
// target apply both to kairos and to the model.
//
// The model is a list of queued tasks and a virtual clock; after every operation it runs, in
// (deadline, submission seq) order, each task whose deadline <= now, as kairos promises:
//   - a one-shot task runs once; a fixed-rate task's next deadline is the previous deadline +
//     period (runs missed while the clock jumped run back to back); a fixed-delay task's is the
//     clock's now when the run ends + delay. A re-queued periodic task keeps its seq.
//   - a negative delay means "now"; schedule_at keeps the deadline it is given; arithmetic
//     saturates; a deadline past the clock's range is never due ("hours::max() means never"),
//     while a delay that lands exactly on it is due one nanosecond before, as kairos does today
//     (BadInput.DelayEndingOnTheClocksLastTimePointIsNotEarly asks for the time point itself).
//   - cancel() of a pending task returns true and its future reports cancelled; the task stays
//     counted in queue_size() until its deadline passes, unless remove_on_cancel was on when it
//     was cancelled (the setting is not retroactive).
//   - shutdown() (every call), and setting either shutdown policy to false after it, cancels and
//     removes queued periodic tasks unless continue_existing_periodic_tasks_after_shutdown,
//     delayed one-shot tasks (not due) unless execute_existing_delayed_tasks_after_shutdown,
//     and every cancelled task still retained. Due one-shot tasks always stay. A periodic task
//     that ends a run after shutdown is re-queued only under the continue policy.
//   - submissions after shutdown are rejected: abort throws RejectedExecution, the other
//     policies return a future already cancelled. Over capacity (pending tasks, cancelled-retained
//     included): abort throws, discard cancels the new task, discard_oldest cancels the earliest
//     queued tasks until there is room, caller_runs runs the first run in the caller at once
//     (a periodic task is then queued, with a new seq, for its next deadline).
//   - shutdown_now() returns the queued non-cancelled tasks by (deadline, seq); the test runs
//     or drops each; run(): one run in the caller (a periodic future then reports cancelled, or
//     the run's exception); dropped: cancelled. Nothing runs on the scheduler afterwards.
//   - a failed execute()'d task or a failed periodic task goes to on_uncaught (a periodic one run
//     through Task::run excepted: its future holds the exception); a failed one-shot task with a
//     future does not.
//   - terminated once shut down with an empty queue.
//   - rearm(delay) of a task made by schedule_rearmable that is still pending (queued, not
//     cancelled, not started) moves its deadline to now + delay (the same arithmetic as a
//     schedule) and gives it a new seq, as a submission would take at that moment: among equal
//     deadlines it starts in re-arm order. It returns true then, and false for every other task
//     (not re-armable, started, completed, cancelled, returned). queue_size() does not change.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <kairos/rejection.hpp>

namespace kairos_model {

using i64 = std::int64_t;
inline constexpr i64 kMax = std::numeric_limits<i64>::max();
inline constexpr i64 kMin = std::numeric_limits<i64>::min();
inline constexpr i64 kMs = 1'000'000;
inline constexpr i64 kHour = 3'600'000'000'000;

inline i64 sat_add(i64 a, i64 b) {
  i64 r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kMax : kMin;
  return r;
}

enum class Code : std::uint8_t {
  schedule,              // a: delay (ns)
  schedule_at,           // a: deadline - now at the time of the call (ns)
  submit,
  execute,
  fixed_rate,            // a: initial delay, b: period
  fixed_delay,           // a: initial delay, b: delay
  cancel,                // a: index of the task (modulo the tasks so far), flag: may_interrupt
  set_remove_on_cancel,  // flag
  set_execute_delayed,   // flag
  set_continue_periodic, // flag
  advance,               // a: how far the ManualClock moves
  wait_idle,
  shutdown,
  shutdown_now,          // a: bit (i % 8) set: run the i-th returned task, else drop it
  schedule_rearmable,    // a: delay (ns)
  rearm,                 // a: index of the task (modulo the tasks so far), b: delay (ns)
};

struct Op {
  Code code = Code::wait_idle;
  i64 a = 0;
  i64 b = 0;
  int throw_on = -1;  // the body throws on this run (0-based); -1: never
  bool flag = false;
  bool operator==(const Op&) const = default;
};

struct Config {
  bool remove_on_cancel = false;
  bool execute_delayed = true;
  bool continue_periodic = false;
  kairos::Rejection rejection = kairos::Rejection::abort;
  std::size_t capacity = 0;
  int wait = 0;  // 0 sleep, 1 hybrid, 2 spin, 3 poll mode (the driver's thread polls: no thread)
  unsigned shards = 1;  // one submitting thread: all its tasks go to one shard, the rest idle
  bool operator==(const Config&) const = default;
};

struct Sequence {
  Config config;
  std::vector<Op> ops;
};

inline bool is_submission(Code c) {
  return c == Code::schedule || c == Code::schedule_at || c == Code::schedule_rearmable || c == Code::submit || c == Code::execute ||
         c == Code::fixed_rate || c == Code::fixed_delay;
}

// ---- byte encoding ----------------------------------------------------------------------------
// byte 0: config bits (0 remove_on_cancel, 1 !execute_delayed, 2 continue_periodic,
//         3-4 rejection, 5-6 wait: 0 sleep, 1 poll mode, 2 hybrid, 3 spin, 7 three shards); byte 1:
//         capacity (< 200: none, else 1..8). Then one byte per opcode (modulo kOpcodes' size),
//         followed by its argument bytes.
namespace enc {

inline constexpr Code kOpcodes[18] = {
    Code::schedule, Code::schedule,    Code::schedule_at, Code::submit,
    Code::execute,  Code::fixed_rate,  Code::fixed_delay, Code::cancel,
    Code::cancel,   Code::advance,     Code::advance,     Code::advance,
    Code::set_remove_on_cancel /* a setter: the argument byte says which */,
    Code::shutdown, Code::shutdown_now, Code::wait_idle,
    Code::schedule_rearmable, Code::rearm};
inline constexpr std::size_t kOpcodeCount = sizeof kOpcodes / sizeof kOpcodes[0];

inline i64 delay(std::uint8_t b) {
  static constexpr i64 kSpecial[16] = {kMax, kMin, kHour, 1, 999'999, 1'000'001, -1, kMax - 1,
                                       0,    1,    kMs / 2, 3 * kMs + 1, -kHour, kMax / 2, 2, kMs - 1};
  if (b < 240) return (static_cast<i64>(b % 25) - 3) * kMs;
  return kSpecial[b - 240];
}
inline i64 period(std::uint8_t b) {
  static constexpr i64 kSpecial[16] = {kMax, kHour, 1, 999'999, 1'000'001, 2'500'000, kMax - 1, 7 * kMs,
                                       kMax / 3, kMs + 1, 3 * kMs - 1, 20 * kMs, kMs, 2 * kMs, 5 * kMs, 10 * kMs};
  if (b < 240) return (b % 12 + 1) * kMs;
  return kSpecial[b - 240];
}
inline i64 advance(std::uint8_t b) {
  static constexpr i64 kSpecial[16] = {1, 999'999, 1'000'001, kHour, 10 * kHour, kMax, 0, kMs / 2,
                                       2, kMs - 1, 100 * kMs, 1000 * kMs, kMs, 2 * kMs, 30 * kMs, kMax / 2};
  if (b < 240) return (b % 30) * kMs;
  return kSpecial[b - 240];
}
inline int throw_on(std::uint8_t b) { return b < 232 ? -1 : (b - 232) % 4; }

// Decodes as many whole operations as the bytes hold.
inline Sequence decode(const std::uint8_t* data, std::size_t size, std::size_t max_ops = 64) {
  Sequence s;
  std::size_t i = 0;
  auto next = [&](std::uint8_t& out) {
    if (i >= size) return false;
    out = data[i++];
    return true;
  };
  std::uint8_t c = 0;
  if (!next(c)) return s;
  s.config.remove_on_cancel = c & 1;
  s.config.execute_delayed = !(c & 2);
  s.config.continue_periodic = c & 4;
  s.config.rejection = static_cast<kairos::Rejection>((c >> 3) & 3);
  int w = (c >> 5) & 3;
  s.config.wait = w == 0 ? 0 : w == 1 ? 3 : w - 1;
  s.config.shards = (c & 0x80) ? 3 : 1;
  std::uint8_t cap = 0;
  if (!next(cap)) return s;
  s.config.capacity = cap < 200 ? 0 : (cap - 200) % 8 + 1;
  while (s.ops.size() < max_ops) {
    std::uint8_t b0, b1, b2, b3;
    if (!next(b0)) break;
    Op op;
    op.code = kOpcodes[b0 % kOpcodeCount];
    bool ok = true;
    switch (op.code) {
      case Code::schedule:
      case Code::schedule_at:
      case Code::schedule_rearmable:
        ok = next(b1) && next(b2);
        if (ok) op.a = delay(b1), op.throw_on = throw_on(b2);
        break;
      case Code::submit:
      case Code::execute:
        ok = next(b1);
        if (ok) op.throw_on = throw_on(b1);
        break;
      case Code::fixed_rate:
      case Code::fixed_delay:
        ok = next(b1) && next(b2) && next(b3);
        if (ok) op.a = delay(b1), op.b = period(b2), op.throw_on = throw_on(b3);
        break;
      case Code::cancel:
        ok = next(b1);
        if (ok) op.a = b1 & 63, op.flag = b1 & 64;
        break;
      case Code::rearm:
        ok = next(b1) && next(b2);
        if (ok) op.a = b1 & 63, op.b = delay(b2);
        break;
      case Code::advance:
        ok = next(b1);
        if (ok) op.a = advance(b1);
        break;
      case Code::set_remove_on_cancel:
        ok = next(b1);
        if (ok) {
          static constexpr Code kSetters[3] = {Code::set_remove_on_cancel, Code::set_execute_delayed,
                                               Code::set_continue_periodic};
          op.code = kSetters[(b1 & 3) % 3];
          op.flag = b1 & 4;
        }
        break;
      case Code::shutdown_now:
        ok = next(b1);
        if (ok) op.a = b1;
        break;
      default: break;
    }
    if (!ok) break;
    s.ops.push_back(op);
  }
  return s;
}

// The bytes that decode() turns into s; empty if some value has no byte (not made by decode).
inline std::vector<std::uint8_t> encode(const Sequence& s) {
  std::vector<std::uint8_t> out;
  auto find = [](auto table, i64 v, std::uint8_t& b) {
    for (int x = 0; x < 256; ++x)
      if (table(static_cast<std::uint8_t>(x)) == v) return b = static_cast<std::uint8_t>(x), true;
    return false;
  };
  auto code_byte = [](Code c) {
    for (std::size_t x = 0; x < kOpcodeCount; ++x)
      if (kOpcodes[x] == c) return static_cast<std::uint8_t>(x);
    return static_cast<std::uint8_t>(12);  // setters
  };
  std::uint8_t c = static_cast<std::uint8_t>((s.config.remove_on_cancel ? 1 : 0) | (s.config.execute_delayed ? 0 : 2) |
                                             (s.config.continue_periodic ? 4 : 0) |
                                             (static_cast<int>(s.config.rejection) << 3) |
                                             ((s.config.wait == 0 ? 0 : s.config.wait == 3 ? 1 : s.config.wait + 1) << 5) |
                                             (s.config.shards == 3 ? 0x80 : 0));
  if (s.config.shards != 1 && s.config.shards != 3) return {};
  out.push_back(c);
  if (s.config.capacity > 8) return {};
  out.push_back(s.config.capacity == 0 ? 0 : static_cast<std::uint8_t>(200 + s.config.capacity - 1));
  for (const Op& op : s.ops) {
    std::uint8_t b1 = 0, b2 = 0, b3 = 0;
    out.push_back(code_byte(op.code));
    auto thr = [&](std::uint8_t& b) { return find(enc::throw_on, op.throw_on, b); };
    switch (op.code) {
      case Code::schedule:
      case Code::schedule_at:
      case Code::schedule_rearmable:
        if (!find(enc::delay, op.a, b1) || !thr(b2)) return {};
        out.insert(out.end(), {b1, b2});
        break;
      case Code::submit:
      case Code::execute:
        if (!thr(b1)) return {};
        out.push_back(b1);
        break;
      case Code::fixed_rate:
      case Code::fixed_delay:
        if (!find(enc::delay, op.a, b1) || !find(enc::period, op.b, b2) || !thr(b3)) return {};
        out.insert(out.end(), {b1, b2, b3});
        break;
      case Code::cancel:
        if (op.a < 0 || op.a > 63) return {};
        out.push_back(static_cast<std::uint8_t>(op.a | (op.flag ? 64 : 0)));
        break;
      case Code::rearm:
        if (op.a < 0 || op.a > 63 || !find(enc::delay, op.b, b2)) return {};
        out.insert(out.end(), {static_cast<std::uint8_t>(op.a), b2});
        break;
      case Code::advance:
        if (!find(enc::advance, op.a, b1)) return {};
        out.push_back(b1);
        break;
      case Code::set_remove_on_cancel:
      case Code::set_execute_delayed:
      case Code::set_continue_periodic: {
        int which = op.code == Code::set_remove_on_cancel ? 0 : op.code == Code::set_execute_delayed ? 1 : 2;
        out.push_back(static_cast<std::uint8_t>(which | (op.flag ? 4 : 0)));
        break;
      }
      case Code::shutdown_now: out.push_back(static_cast<std::uint8_t>(op.a)); break;
      default: break;
    }
  }
  return out;
}

}  // namespace enc

// ---- the model --------------------------------------------------------------------------------
enum class State : std::uint8_t { pending, normal, exceptional, cancelled, rejected };

struct Task {
  int id = 0;
  Code kind = Code::schedule;
  bool has_future = true;
  i64 deadline = 0;
  i64 period = 0;
  std::uint64_t seq = 0;
  int throw_on = -1;
  int runs = 0;
  State state = State::pending;
  bool queued = false;  // in the queue: pending, or cancelled and retained
  bool never = false;   // its deadline lies past the clock's range: never due
  bool periodic() const { return kind == Code::fixed_rate || kind == Code::fixed_delay; }
};

struct RunRecord {
  int id = 0;
  int run = 0;
  i64 now = 0;
  bool operator==(const RunRecord&) const = default;
};

// What the model expects of the operation just applied.
struct Expect {
  bool rejected_throw = false;  // the submission throws RejectedExecution
  bool cancel_result = false;
  bool rearm_result = false;
  std::vector<int> orphans;     // ids shutdown_now() returns, in order
};

class Model {
 public:
  static constexpr int kRunLimit = 4000;  // runs one operation may cause; beyond it, skipped

  explicit Model(const Config& c)
      : remove_on_cancel_(c.remove_on_cancel),
        execute_delayed_(c.execute_delayed),
        continue_periodic_(c.continue_periodic),
        rejection_(c.rejection),
        capacity_(c.capacity) {}

  // Applies op. False if it would make more than kRunLimit runs: the model is then unusable
  // and the caller applies op to a copy first.
  bool apply(const Op& op, Expect& ex) {
    ex = Expect{};
    budget_ = kRunLimit;
    switch (op.code) {
      case Code::schedule:
      case Code::schedule_rearmable: submit(op, deadline_after(op.a), 0, ex, never_after(op.a)); break;
      case Code::schedule_at: submit(op, sat_add(now_, op.a), 0, ex); break;
      case Code::submit:
      case Code::execute: submit(op, deadline_after(0), 0, ex); break;
      case Code::fixed_rate:
      case Code::fixed_delay: submit(op, deadline_after(op.a), op.b, ex, never_after(op.a)); break;
      case Code::cancel: {
        if (tasks_.empty()) break;
        Task& t = tasks_[static_cast<std::size_t>(op.a) % tasks_.size()];
        if (!t.has_future || t.state != State::pending) break;
        t.state = State::cancelled;
        ex.cancel_result = true;
        if (remove_on_cancel_) t.queued = false;
        break;
      }
      case Code::rearm: {
        if (tasks_.empty()) break;
        Task& t = tasks_[static_cast<std::size_t>(op.a) % tasks_.size()];
        if (t.kind != Code::schedule_rearmable || !t.has_future || t.state != State::pending || !t.queued) break;
        t.deadline = deadline_after(op.b);
        t.never = never_after(op.b);
        t.seq = next_seq_++;
        ex.rearm_result = true;
        break;
      }
      case Code::set_remove_on_cancel: remove_on_cancel_ = op.flag; break;
      case Code::set_execute_delayed:
        execute_delayed_ = op.flag;
        if (!op.flag && shutdown_) on_shutdown();
        break;
      case Code::set_continue_periodic:
        continue_periodic_ = op.flag;
        if (!op.flag && shutdown_) on_shutdown();
        break;
      case Code::advance: now_ = sat_add(now_, op.a); break;
      case Code::wait_idle: break;
      case Code::shutdown:
        shutdown_ = true;
        on_shutdown();
        break;
      case Code::shutdown_now: shutdown_now(op, ex); break;
    }
    run_due();
    return budget_ >= 0;
  }

  // Which one of the tasks so far op.a names for cancel or rearm (-1: none, or no future).
  int cancel_target(const Op& op) const {
    if (tasks_.empty()) return -1;
    const Task& t = tasks_[static_cast<std::size_t>(op.a) % tasks_.size()];
    return t.has_future ? t.id : -1;
  }

  std::size_t queue_size() const {
    return static_cast<std::size_t>(std::count_if(tasks_.begin(), tasks_.end(), [](const Task& t) { return t.queued; }));
  }
  bool terminated() const { return shutdown_ && queue_size() == 0; }
  bool is_shutdown() const { return shutdown_; }
  i64 now() const { return now_; }
  int uncaught() const { return uncaught_; }
  const std::vector<Task>& tasks() const { return tasks_; }
  const std::vector<RunRecord>& log() const { return log_; }

 private:
  // The deadline of a delay from now: a negative delay is 0; a deadline past the clock's range,
  // or a delay of Duration::max(), is the largest time point and never due; a deadline that
  // lands exactly on the largest time point is due at the end of a ManualClock.
  i64 deadline_after(i64 delay) const {
    i64 d = std::max<i64>(delay, 0);
    i64 r;
    if (__builtin_add_overflow(now_, d, &r) || d == kMax) return kMax;
    return r;
  }
  bool never_after(i64 delay) const {
    i64 d = std::max<i64>(delay, 0);
    i64 r;
    return __builtin_add_overflow(now_, d, &r) || d == kMax;
  }

  void submit(const Op& op, i64 deadline, i64 period, Expect& ex, bool never = false) {
    Task t;
    t.never = never;
    t.id = static_cast<int>(tasks_.size());
    t.kind = op.code;
    t.has_future = op.code != Code::execute;
    t.deadline = deadline;
    t.period = period;
    t.throw_on = op.throw_on;
    if (shutdown_ || (capacity_ && queue_size() >= capacity_ && rejection_ != kairos::Rejection::discard_oldest)) {
      bool over_capacity = !shutdown_;
      if (rejection_ == kairos::Rejection::abort) {
        ex.rejected_throw = true;
        t.state = State::rejected;
        t.has_future = false;
      } else if (rejection_ == kairos::Rejection::caller_runs && over_capacity) {
        tasks_.push_back(t);
        run_in_caller(tasks_.back());
        return;
      } else {
        t.state = State::cancelled;  // discarded: the future reports cancelled at once
      }
      tasks_.push_back(t);
      return;
    }
    while (capacity_ && queue_size() >= capacity_) {  // discard_oldest: make room
      Task* oldest = earliest([](const Task&) { return true; });
      if (oldest->state == State::pending) oldest->state = State::cancelled;
      oldest->queued = false;
    }
    t.seq = next_seq_++;
    t.queued = true;
    tasks_.push_back(t);
  }

  void run_in_caller(Task& t) {
    if (!execute(t)) return;
    if (!t.periodic()) return;
    t.deadline = next_deadline(t);
    t.seq = next_seq_++;
    t.queued = true;
  }

  // One run of t now. Returns true iff a periodic task may be queued again.
  bool execute(Task& t) {
    int run = t.runs++;
    log_.push_back({t.id, run, now_});
    bool threw = run == t.throw_on;
    if (!t.periodic()) {
      t.state = threw ? State::exceptional : State::normal;
      if (threw && !t.has_future) ++uncaught_;
      return false;
    }
    if (threw) {
      t.state = State::exceptional;
      ++uncaught_;
      return false;
    }
    return true;
  }

  // The next run's deadline; past the clock's range: never.
  i64 next_deadline(Task& t) const {
    i64 r;
    if (__builtin_add_overflow(t.kind == Code::fixed_delay ? now_ : t.deadline, t.period, &r)) {
      t.never = true;
      return kMax;
    }
    t.never = false;
    return r;
  }

  template <class Pred>
  Task* earliest(Pred pred) {
    Task* best = nullptr;
    for (Task& t : tasks_) {
      if (!t.queued || !pred(t)) continue;
      if (!best || t.deadline < best->deadline ||
          (t.deadline == best->deadline && (t.never != best->never ? best->never : t.seq < best->seq)))
        best = &t;
    }
    return best;
  }

  void run_due() {
    for (;;) {
      Task* t = earliest([&](const Task& x) { return due(x); });
      if (!t) return;
      if (--budget_ < 0) return;
      t->queued = false;
      if (t->state == State::cancelled) continue;  // a retained cancelled task leaves at its deadline
      if (!execute(*t)) continue;
      if (shutdown_ && !continue_periodic_) {
        t->state = State::cancelled;
        continue;
      }
      t->deadline = next_deadline(*t);
      t->queued = true;
    }
  }

  bool due(const Task& t) const { return t.deadline <= now_ && !t.never; }

  bool allowed_after_shutdown(const Task& t) const {
    if (t.periodic()) return continue_periodic_;
    return due(t) || execute_delayed_;  // a task due "never" is delayed, also at the clock's end
  }

  void on_shutdown() {
    for (Task& t : tasks_) {
      if (!t.queued) continue;
      if (t.state == State::cancelled || !allowed_after_shutdown(t)) {
        t.queued = false;
        t.state = State::cancelled;
      }
    }
  }

  void shutdown_now(const Op& op, Expect& ex) {
    shutdown_ = true;
    std::vector<Task*> list;
    for (Task& t : tasks_) {
      if (!t.queued) continue;
      t.queued = false;
      if (t.state == State::pending) list.push_back(&t);
    }
    std::stable_sort(list.begin(), list.end(), [](const Task* a, const Task* b) {
      // (deadline, seq), a never-due task after one due at the clock's last time point.
      if (a->deadline != b->deadline) return a->deadline < b->deadline;
      if (a->never != b->never) return b->never;
      return a->seq < b->seq;
    });
    for (std::size_t i = 0; i < list.size(); ++i) {
      Task& t = *list[i];
      ex.orphans.push_back(t.id);
      if (!((op.a >> (i % 8)) & 1)) {
        t.state = State::cancelled;
        continue;
      }
      int run = t.runs++;
      log_.push_back({t.id, run, now_});
      bool threw = run == t.throw_on;
      if (threw) {
        t.state = State::exceptional;
        if (!t.has_future) ++uncaught_;
      } else {
        t.state = t.periodic() ? State::cancelled : State::normal;
      }
    }
  }

  i64 now_ = 0;
  bool shutdown_ = false;
  bool remove_on_cancel_, execute_delayed_, continue_periodic_;
  kairos::Rejection rejection_;
  std::size_t capacity_;
  std::uint64_t next_seq_ = 0;
  int uncaught_ = 0;
  int budget_ = kRunLimit;
  std::vector<Task> tasks_;
  std::vector<RunRecord> log_;
};

}  // namespace kairos_model
