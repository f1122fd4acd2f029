// driver.hpp: applies a Sequence of operations to kairos (BasicScheduler<ManualClock>, one shard,
// one thread, so the order is deterministic) and to the reference model, and reports the first
// difference. Also: random sequences, shrinking (delta debugging over the operations) and
// printing a failing sequence as a ready-to-paste GoogleTest test.
//
// With more shards, the driver's tasks all go to one of them (one submitting thread) and the
// others stay idle: they must not disturb waiting, termination or shutdown_now().
// After every operation the driver calls wait_idle() (so every operation is complete before the
// next one) and compares: which tasks ran, in what order, at which virtual time (each body reads
// clock.now()); what each submission, cancel() and rearm() returned; queue_size(); every future's
// is_done()/is_cancelled(), get() (the value, or the exception of the planned failure) and
// delay() of pending tasks; the tasks shutdown_now() returned; on_uncaught calls; is_shutdown()
// and termination.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <kairos/kairos.hpp>

#include "model.hpp"
#include "support.hpp"

namespace kairos_model {

// What a planned failure throws: no std::exception base, so get() must rethrow it unchanged.
struct TaskFailure {
  int id;
  int run;
};

inline std::string dur(i64 v) {
  if (v == kMax) return "kMax";
  if (v == kMin) return "kMin";
  if (v == kMax - 1) return "kMax - 1";
  if (v == kMax / 2) return "kMax / 2";
  if (v == kMax / 3) return "kMax / 3";
  if (v == kHour) return "kHour";
  if (v == -kHour) return "-kHour";
  if (v != 0 && v % kMs == 0) return std::to_string(v / kMs) + " * kMs";
  return std::to_string(v);
}

inline std::string op_str(const Op& op) {
  std::string t = op.throw_on >= 0 ? ", /*throw_on=*/" + std::to_string(op.throw_on) : "";
  switch (op.code) {
    case Code::schedule: return "op::schedule(" + dur(op.a) + t + ")";
    case Code::schedule_at: return "op::schedule_at(" + dur(op.a) + t + ")";
    case Code::submit: return "op::submit(" + (t.empty() ? "" : t.substr(2)) + ")";
    case Code::execute: return "op::execute(" + (t.empty() ? "" : t.substr(2)) + ")";
    case Code::fixed_rate: return "op::fixed_rate(" + dur(op.a) + ", " + dur(op.b) + t + ")";
    case Code::fixed_delay: return "op::fixed_delay(" + dur(op.a) + ", " + dur(op.b) + t + ")";
    case Code::cancel: return "op::cancel(" + std::to_string(op.a) + (op.flag ? ", true" : "") + ")";
    case Code::set_remove_on_cancel: return std::string("op::set_remove_on_cancel(") + (op.flag ? "true" : "false") + ")";
    case Code::set_execute_delayed: return std::string("op::set_execute_delayed(") + (op.flag ? "true" : "false") + ")";
    case Code::set_continue_periodic: return std::string("op::set_continue_periodic(") + (op.flag ? "true" : "false") + ")";
    case Code::advance: return "op::advance(" + dur(op.a) + ")";
    case Code::wait_idle: return "op::wait_idle()";
    case Code::shutdown: return "op::shutdown()";
    case Code::shutdown_now: return "op::shutdown_now(" + std::to_string(op.a) + ")";
    case Code::schedule_rearmable: return "op::schedule_rearmable(" + dur(op.a) + t + ")";
    case Code::rearm: return "op::rearm(" + std::to_string(op.a) + ", " + dur(op.b) + ")";
  }
  return "?";
}

// Builders, so that a printed sequence reads as code.
namespace op {
inline Op schedule(i64 delay, int throw_on = -1) { return {Code::schedule, delay, 0, throw_on, false}; }
inline Op schedule_at(i64 offset, int throw_on = -1) { return {Code::schedule_at, offset, 0, throw_on, false}; }
inline Op submit(int throw_on = -1) { return {Code::submit, 0, 0, throw_on, false}; }
inline Op execute(int throw_on = -1) { return {Code::execute, 0, 0, throw_on, false}; }
inline Op fixed_rate(i64 initial, i64 period, int throw_on = -1) { return {Code::fixed_rate, initial, period, throw_on, false}; }
inline Op fixed_delay(i64 initial, i64 delay, int throw_on = -1) { return {Code::fixed_delay, initial, delay, throw_on, false}; }
inline Op cancel(i64 index, bool interrupt = false) { return {Code::cancel, index, 0, -1, interrupt}; }
inline Op set_remove_on_cancel(bool v) { return {Code::set_remove_on_cancel, 0, 0, -1, v}; }
inline Op set_execute_delayed(bool v) { return {Code::set_execute_delayed, 0, 0, -1, v}; }
inline Op set_continue_periodic(bool v) { return {Code::set_continue_periodic, 0, 0, -1, v}; }
inline Op advance(i64 d) { return {Code::advance, d, 0, -1, false}; }
inline Op wait_idle() { return {Code::wait_idle, 0, 0, -1, false}; }
inline Op shutdown() { return {Code::shutdown, 0, 0, -1, false}; }
inline Op shutdown_now(i64 run_mask) { return {Code::shutdown_now, run_mask, 0, -1, false}; }
inline Op schedule_rearmable(i64 delay, int throw_on = -1) { return {Code::schedule_rearmable, delay, 0, throw_on, false}; }
inline Op rearm(i64 index, i64 delay) { return {Code::rearm, index, delay, -1, false}; }
}  // namespace op

inline std::string config_str(const Config& c) {
  static const char* rej[] = {"abort", "caller_runs", "discard", "discard_oldest"};
  std::ostringstream o;
  o << "{.remove_on_cancel = " << (c.remove_on_cancel ? "true" : "false")
    << ", .execute_delayed = " << (c.execute_delayed ? "true" : "false")
    << ", .continue_periodic = " << (c.continue_periodic ? "true" : "false")
    << ", .rejection = kairos::Rejection::" << rej[static_cast<int>(c.rejection)]
    << ", .capacity = " << c.capacity << ", .wait = " << c.wait << ", .shards = " << c.shards << "}";
  return o.str();
}

class Driver {
 public:
  using Clock = kairos::ManualClock;
  using Sched = kairos::BasicScheduler<Clock>;
  static constexpr auto kPatience = kairos_test::kPatience;  // real time; never reached when correct

  explicit Driver(const Sequence& s)
      : seq_(s), model_(s.config), runs_(s.ops.size()), throw_on_(s.ops.size(), -1) {
    kairos::Options o;
    o.shards = s.config.shards;
    o.threads_per_shard = 1;
    o.wait = s.config.wait == 0   ? kairos::WaitPolicy::sleep()
             : s.config.wait == 1 ? kairos::WaitPolicy::hybrid(std::chrono::microseconds(20))
                                  : kairos::WaitPolicy::spin();
    // wait 3: poll mode. The driver's thread is the loop: its wait_idle() after every operation
    // polls until done, so the same sequences check the poller (bursts, re-arm, the policies).
    o.poll_mode = s.config.wait == 3;
    o.rejection = s.config.rejection;
    o.capacity = s.config.capacity;
    o.remove_on_cancel = s.config.remove_on_cancel;
    o.execute_existing_delayed_tasks_after_shutdown = s.config.execute_delayed;
    o.continue_existing_periodic_tasks_after_shutdown = s.config.continue_periodic;
    o.on_uncaught = [this](std::exception_ptr) { uncaught_.fetch_add(1); };
    o.name = "model";
    sched_ = std::make_unique<Sched>(o, clock_);
  }

  // "" if kairos and the model agree on the whole sequence, else the first difference.
  std::string run() {
    for (std::size_t i = 0; i < seq_.ops.size(); ++i) {
      std::string d = step(seq_.ops[i]);
      if (!d.empty()) return "op #" + std::to_string(i) + " " + op_str(seq_.ops[i]) + ": " + d;
    }
    return {};
  }
  std::size_t ops_applied() const { return applied_; }

 private:
  struct Handle {
    kairos::ScheduledFuture<int> one_shot;
    kairos::ScheduledFuture<void> periodic;
    bool has = false;
    bool is_periodic = false;
    bool result_checked = false;
  };

  int body(int id) {
    int run;
    {
      std::lock_guard lock(mu_);
      run = runs_[static_cast<std::size_t>(id)]++;
      log_.push_back({id, run, clock_.now().time_since_epoch().count()});
    }
    if (run == throw_on_[static_cast<std::size_t>(id)]) throw TaskFailure{id, run};
    return id;
  }

  std::string step(const Op& op) {
    Model trial = model_;
    Expect ex;
    if (!trial.apply(op, ex)) return {};  // more runs than the model allows: skipped
    ++applied_;
    std::string d = apply_to_kairos(op, ex);
    model_ = std::move(trial);
    if (!d.empty()) return d;
    return compare(op);
  }

  std::string apply_to_kairos(const Op& op, const Expect& ex) {
    if (is_submission(op.code)) {
      int id = static_cast<int>(handles_.size());
      handles_.emplace_back();
      throw_on_[static_cast<std::size_t>(id)] = op.throw_on;
      Handle& h = handles_.back();
      bool threw = false;
      try {
        i64 now = clock_.now().time_since_epoch().count();
        auto one = [this, id] { return body(id); };
        auto per = [this, id] { body(id); };
        switch (op.code) {
          case Code::schedule: h.one_shot = sched_->schedule(one, std::chrono::nanoseconds(op.a)); break;
          case Code::schedule_rearmable:
            h.one_shot = sched_->schedule_rearmable(one, std::chrono::nanoseconds(op.a));
            break;
          case Code::schedule_at:
            h.one_shot = sched_->schedule_at(one, Clock::time_point(std::chrono::nanoseconds(sat_add(now, op.a))));
            break;
          case Code::submit: h.one_shot = sched_->submit(one); break;
          case Code::execute: sched_->execute(per); break;
          case Code::fixed_rate:
            h.periodic = sched_->schedule_at_fixed_rate(per, std::chrono::nanoseconds(op.a), std::chrono::nanoseconds(op.b));
            break;
          case Code::fixed_delay:
            h.periodic = sched_->schedule_with_fixed_delay(per, std::chrono::nanoseconds(op.a), std::chrono::nanoseconds(op.b));
            break;
          default: break;
        }
        h.has = op.code != Code::execute;
        h.is_periodic = op.code == Code::fixed_rate || op.code == Code::fixed_delay;
      } catch (const kairos::RejectedExecution&) {
        threw = true;
      } catch (const TaskFailure&) {
        return "the task's exception escaped from the submission (caller_runs)";
      } catch (const std::exception& e) {
        return std::string("submission threw ") + e.what();
      }
      if (threw != ex.rejected_throw)
        return threw ? "kairos threw RejectedExecution, the model accepts" : "the model expects RejectedExecution, kairos accepted";
      return {};
    }
    switch (op.code) {
      case Code::cancel: {
        int target = model_.cancel_target(op);
        if (target < 0) return {};
        Handle& h = handles_[static_cast<std::size_t>(target)];
        bool r = h.is_periodic ? h.periodic.cancel(op.flag) : h.one_shot.cancel(op.flag);
        if (r != ex.cancel_result)
          return "cancel() of task " + std::to_string(target) + " returned " + (r ? "true" : "false") +
                 ", the model says " + (ex.cancel_result ? "true" : "false");
        return {};
      }
      case Code::rearm: {
        int target = model_.cancel_target(op);
        if (target < 0) return {};
        Handle& h = handles_[static_cast<std::size_t>(target)];
        std::chrono::nanoseconds delay(op.b);
        bool r = h.is_periodic ? h.periodic.rearm(delay) : h.one_shot.rearm(delay);
        if (r != ex.rearm_result)
          return "rearm() of task " + std::to_string(target) + " returned " + (r ? "true" : "false") +
                 ", the model says " + (ex.rearm_result ? "true" : "false");
        return {};
      }
      case Code::set_remove_on_cancel: sched_->set_remove_on_cancel(op.flag); return {};
      case Code::set_execute_delayed: sched_->set_execute_existing_delayed_tasks_after_shutdown(op.flag); return {};
      case Code::set_continue_periodic: sched_->set_continue_existing_periodic_tasks_after_shutdown(op.flag); return {};
      case Code::advance: clock_.advance(std::chrono::nanoseconds(op.a)); return {};
      case Code::wait_idle: return {};
      case Code::shutdown: sched_->shutdown(); return {};
      case Code::shutdown_now: {
        std::vector<kairos::Task> tasks = sched_->shutdown_now();
        if (tasks.size() != ex.orphans.size())
          return "shutdown_now() returned " + std::to_string(tasks.size()) + " tasks, the model " +
                 std::to_string(ex.orphans.size());
        for (std::size_t i = 0; i < tasks.size(); ++i) {
          bool periodic = handles_[static_cast<std::size_t>(ex.orphans[i])].is_periodic;
          if (tasks[i].is_periodic() != periodic)
            return "shutdown_now() task #" + std::to_string(i) + " is_periodic()=" +
                   (tasks[i].is_periodic() ? "true" : "false") + ", the model expects task " +
                   std::to_string(ex.orphans[i]) + " there";
        }
        for (std::size_t i = 0; i < tasks.size(); ++i) {
          if ((op.a >> (i % 8)) & 1) tasks[i].run();
          else kairos::Task dropped = std::move(tasks[i]);
        }
        return {};
      }
      default: return {};
    }
  }

  static std::string runs_str(const std::vector<RunRecord>& v, std::size_t from) {
    std::string s = "[";
    for (std::size_t i = from; i < v.size() && i < from + 24; ++i) {
      if (i > from) s += ", ";
      s += "task " + std::to_string(v[i].id) + " run " + std::to_string(v[i].run) + " @" + dur(v[i].now);
    }
    if (v.size() > from + 24) s += ", ...";
    return s + "]";
  }

  std::string compare(const Op& op) {
    if (!sched_->wait_idle(kPatience)) return "wait_idle() timed out (kPatience, real time)";
    {
      std::lock_guard lock(mu_);
      const std::vector<RunRecord>& want = model_.log();
      if (log_ != want) {
        std::size_t i = 0;
        while (i < log_.size() && i < want.size() && log_[i] == want[i]) ++i;
        return "runs differ from run #" + std::to_string(i) + ": kairos " + runs_str(log_, i) +
               ", model " + runs_str(want, i);
      }
    }
    if (int u = uncaught_.load(); u != model_.uncaught())
      return "on_uncaught ran " + std::to_string(u) + " times, the model expects " + std::to_string(model_.uncaught());
    std::size_t qs = sched_->queue_size();
    if (qs != model_.queue_size())
      return "queue_size() is " + std::to_string(qs) + ", the model says " + std::to_string(model_.queue_size());
    for (const Task& t : model_.tasks()) {
      Handle& h = handles_[static_cast<std::size_t>(t.id)];
      if (!h.has) continue;
      std::string d = compare_future(t, h);
      if (!d.empty()) return "task " + std::to_string(t.id) + ": " + d;
    }
    if (sched_->is_shutdown() != model_.is_shutdown())
      return std::string("is_shutdown() is ") + (model_.is_shutdown() ? "false" : "true");
    if (model_.terminated()) {
      if (!sched_->await_termination(kPatience)) return "not terminated (shut down, queue empty)";
    } else if (sched_->is_terminated()) {
      return "terminated, but the model still has " + std::to_string(model_.queue_size()) + " queued tasks" +
             (model_.is_shutdown() ? "" : " and is not shut down");
    }
    (void)op;
    return {};
  }

  template <class T>
  std::string check_future(const Task& t, kairos::ScheduledFuture<T>& f, bool& checked) {
    bool done = t.state != State::pending;
    bool cancelled = t.state == State::cancelled;
    if (f.is_done() != done) return std::string("is_done() is ") + (done ? "false" : "true");
    if (f.is_cancelled() != cancelled) return std::string("is_cancelled() is ") + (cancelled ? "false" : "true");
    if (!done) {
      if (t.queued && t.deadline != kMax) {
        i64 want = sat_add(t.deadline, -model_.now());
        i64 got = f.delay().count();
        if (got != want) return "delay() is " + dur(got) + ", the model says " + dur(want);
      }
      return {};
    }
    if (checked) return {};
    checked = true;
    try {
      if constexpr (std::is_void_v<T>) {
        f.get();
      } else {
        int v = f.get();
        if (v != t.id) return "get() returned " + std::to_string(v);
      }
      if (t.state != State::normal) return "get() returned normally";
    } catch (const TaskFailure& e) {
      if (t.state != State::exceptional) return "get() threw the task's failure";
      if (e.id != t.id) return "get() threw the failure of task " + std::to_string(e.id);
    } catch (const kairos::CancelledError&) {
      if (t.state != State::cancelled) return "get() threw CancelledError";
    } catch (const std::exception& e) {
      return std::string("get() threw ") + e.what();
    }
    return {};
  }

  std::string compare_future(const Task& t, Handle& h) {
    return h.is_periodic ? check_future(t, h.periodic, h.result_checked)
                         : check_future(t, h.one_shot, h.result_checked);
  }

  Sequence seq_;
  Model model_;
  kairos::ManualClock clock_;
  std::mutex mu_;
  std::vector<RunRecord> log_;             // guarded by mu_
  std::vector<int> runs_;                  // per task id; guarded by mu_
  std::vector<int> throw_on_;              // per task id; written before the submission
  std::vector<Handle> handles_;
  std::atomic<int> uncaught_{0};
  std::size_t applied_ = 0;
  std::unique_ptr<Sched> sched_;           // destroyed first: no body runs after the rest
};

inline std::string to_gtest(const Sequence& s, const std::string& name, const std::string& failure);

// "" if kairos agrees with the model on s; else the first difference. A hang ends the process
// with the sequence printed.
inline std::string check(const Sequence& s, std::size_t* ops_applied = nullptr) {
  kairos_test::Watchdog dog("this sequence (kairos hangs on it)\n" + to_gtest(s, "Hang", "hangs"),
                            std::chrono::seconds(90));
  Driver d(s);
  std::string r = d.run();
  if (ops_applied) *ops_applied += d.ops_applied();
  return r;
}

// ---- random sequences -------------------------------------------------------------------------
// Random bytes with weighted opcodes, decoded: every random sequence has a byte form.
inline std::vector<std::uint8_t> random_bytes(std::mt19937_64& rng, std::size_t max_ops) {
  std::vector<std::uint8_t> b;
  auto byte = [&] { return static_cast<std::uint8_t>(rng() & 0xFF); };
  std::uint8_t config = byte();
  if (rng() % 4) config &= static_cast<std::uint8_t>(~0x60);  // mostly the sleep wait policy
  if (rng() % 8 == 0) config |= 0x60;                         // sometimes spin
  if (rng() % 4) config &= static_cast<std::uint8_t>(~0x80);  // mostly one shard
  b.push_back(config);
  b.push_back(rng() % 5 == 0 ? static_cast<std::uint8_t>(200 + rng() % 8) : 0);
  // Opcode bytes (see enc::kOpcodes) and their weights.
  static constexpr std::uint8_t kCodes[] = {0, 2, 3, 4, 5, 6, 7, 9, 12, 13, 14, 15, 16, 17};
  static constexpr unsigned kWeights[] = {18, 7, 4, 4, 7, 7, 14, 24, 7, 2, 1, 1, 8, 12};
  unsigned total = 0;
  for (unsigned w : kWeights) total += w;
  std::size_t n = 1 + rng() % max_ops;
  for (std::size_t i = 0; i < n; ++i) {
    unsigned r = static_cast<unsigned>(rng() % total);
    std::size_t k = 0;
    while (r >= kWeights[k]) r -= kWeights[k++];
    b.push_back(kCodes[k]);
    for (int j = 0; j < 3; ++j) b.push_back(byte());  // surplus bytes start the next op
  }
  return b;
}

// ---- shrinking --------------------------------------------------------------------------------
// Delta debugging over the operations, then single removals; keeps any failing sequence.
inline Sequence shrink(Sequence s, std::size_t* checks = nullptr, std::size_t max_checks = 2000) {
  std::size_t used = 0;
  auto fails = [&](const Sequence& c) {
    ++used;
    return !check(c).empty();
  };
  std::size_t n = 2;
  while (s.ops.size() >= 2 && used < max_checks) {
    std::size_t chunk = (s.ops.size() + n - 1) / n;
    bool reduced = false;
    for (std::size_t start = 0; start < s.ops.size() && used < max_checks; start += chunk) {
      Sequence c = s;
      c.ops.erase(c.ops.begin() + static_cast<std::ptrdiff_t>(start),
                  c.ops.begin() + static_cast<std::ptrdiff_t>(std::min(start + chunk, s.ops.size())));
      if (fails(c)) {
        s = std::move(c);
        n = std::max<std::size_t>(n - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (n >= s.ops.size()) break;
      n = std::min(s.ops.size(), n * 2);
    }
  }
  for (std::size_t i = 0; i < s.ops.size() && used < max_checks;) {
    Sequence c = s;
    c.ops.erase(c.ops.begin() + static_cast<std::ptrdiff_t>(i));
    if (fails(c)) s = std::move(c);
    else ++i;
  }
  // Simpler configuration, where it still fails.
  Config simple;
  for (int k = 0; k < 7 && used < max_checks; ++k) {
    Sequence c = s;
    switch (k) {
      case 0: c.config.wait = simple.wait; break;
      case 1: c.config.capacity = simple.capacity; break;
      case 2: c.config.rejection = simple.rejection; break;
      case 3: c.config.remove_on_cancel = simple.remove_on_cancel; break;
      case 4: c.config.execute_delayed = simple.execute_delayed; break;
      case 5: c.config.continue_periodic = simple.continue_periodic; break;
      case 6: c.config.shards = simple.shards; break;
    }
    if (!(c.config == s.config) && fails(c)) s = std::move(c);
  }
  if (checks) *checks += used;
  return s;
}

// A failing sequence as a GoogleTest test to paste into tests/model/model_test.cpp.
inline std::string to_gtest(const Sequence& s, const std::string& name, const std::string& failure) {
  std::ostringstream o;
  o << "// " << failure << "\n";
  std::vector<std::uint8_t> bytes = enc::encode(s);
  if (!bytes.empty()) {
    o << "// bytes (fuzz corpus):";
    for (std::uint8_t b : bytes) {
      char hex[5];
      std::snprintf(hex, sizeof hex, " %02x", b);
      o << hex;
    }
    o << "\n";
  }
  o << "TEST(ModelRegression, " << name << ") {\n"
    << "  using namespace kairos_model;\n"
    << "  Sequence s{" << config_str(s.config) << ", {\n";
  int task = 0;
  for (const Op& op : s.ops) {
    o << "      " << op_str(op) << ",";
    if (is_submission(op.code)) o << "  // task " << task++;
    o << "\n";
  }
  o << "  }};\n"
    << "  EXPECT_EQ(check(s), \"\");\n"
    << "}\n";
  return o.str();
}

}  // namespace kairos_model
