// w8_heartbeat.hpp, W8 of docs/workloads.md: re-arming idle timeouts.
//   producer --message for session s: re-arm s's timeout to now + 100 ms--> System
// `sessions` sessions each hold one timeout. Messages arrive open loop at `rate` per second in
// total (message i is due at t0 + i / rate; a producer that falls behind sends at once and the
// sustained rate shows it). Messages visit the active sessions in rounds, each round in a fresh
// random order, so no active session is silent for 100 ms by chance (with independent random
// picks some would be: at 100 messages/s per session a 100 ms gap has probability e^-10, about
// 450 times in 10 s). Every `quiet_every` one more random session goes quiet: it gets no more
// messages and must time out `timeout` after its last one.
// A system with re-arm (rearm_mode) moves the timeout in place; one without cancels it and
// schedules a new one. Reported: re-arms/s, the cost of one re-arm (one at a random position in
// each block of 64, p50..max), the timeouts that fired (must be exactly the quiet sessions:
// `wrong_fires` counts others, and a quiet session that never fired is `missed`), their
// lateness against last message + timeout, early fires, and resident memory growth.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "result.hpp"
#include "system.hpp"

namespace kairos::perf {

struct W8Params {
  std::size_t sessions = 10'000;
  double rate = 1'000'000;                    // messages per second, all sessions together
  std::int64_t timeout_ns = 100'000'000;      // 100 ms
  std::int64_t quiet_every_ns = 100'000'000;  // one more session goes quiet this often
  std::int64_t duration_ns = 10'000'000'000;  // 10 s
  std::size_t sample_every = 64;
  std::uint64_t seed = 8;
};

// A system that can move a timeout in place: kairos (schedule_rearmable + ScheduledFuture::rearm).
// Every other system cancels and schedules.
template <class System>
concept Rearmable = requires(System& s, typename System::Handle& h) {
  s.scheduler().schedule_rearmable([] {}, std::chrono::nanoseconds(1));
  { h.rearm(std::chrono::nanoseconds(1)) } -> std::convertible_to<bool>;
};

template <class System>
RunResult run_w8(System& sys, const SystemConfig& cfg, const W8Params& p, bool use_rearm) {
  RunResult r;
  r.param("sessions", static_cast<std::int64_t>(p.sessions));
  r.param("rate", p.rate);
  r.param("timeout_ns", p.timeout_ns);
  r.param("quiet_every_ns", p.quiet_every_ns);
  r.param("duration_ns", p.duration_ns);
  r.param("seed", static_cast<std::int64_t>(p.seed));
  r.figure("mode", std::string(Rearmable<System> && use_rearm ? "rearm" : "cancel+schedule"));
  if (cfg.producer_cpu >= 0) pin_this_thread(cfg.producer_cpu);

  struct Session {
    std::atomic<std::int64_t> fired_at{0};  // written by the timeout task
    std::atomic<int> fires{0};
    std::int64_t last_message = 0;  // producer only
    bool quiet = false;
  };
  std::vector<Session> s(p.sessions);
  std::vector<typename System::Handle> h(p.sessions);
  std::mt19937_64 rng(p.seed);
  std::vector<std::size_t> active(p.sessions);
  for (std::size_t i = 0; i < p.sessions; ++i) active[i] = i;

  std::vector<char> armed(p.sessions, 0);
  auto arm = [&](std::size_t i, std::int64_t now) {
    Session* sp = &s[i];
    auto body = [sp] {
      sp->fired_at.store(now_ns(), std::memory_order_relaxed);
      sp->fires.fetch_add(1, std::memory_order_release);
    };
    if constexpr (Rearmable<System>) {
      if (use_rearm) {
        const std::chrono::nanoseconds timeout(p.timeout_ns);
        if (!armed[i] || !h[i].rearm(timeout)) h[i] = sys.scheduler().schedule_rearmable(body, timeout);
        armed[i] = 1;
        s[i].last_message = now;
        return;
      }
    }
    if (armed[i]) System::cancel(h[i]);  // (a fired timeout's handle: cancel is false)
    h[i] = sys.schedule(body, p.timeout_ns);
    armed[i] = 1;
    s[i].last_message = now;
  };

  std::int64_t rss_before = resident_bytes();
  std::int64_t t0 = now_ns();
  for (std::size_t i = 0; i < p.sessions; ++i) arm(i, t0);  // every session starts armed

  std::vector<std::int64_t> samples;
  samples.reserve(static_cast<std::size_t>(p.rate * static_cast<double>(p.duration_ns) * 1e-9) / p.sample_every + 16);
  SampleClock sampled(p.sample_every, 11);
  const double ns_per_message = 1e9 / p.rate;
  std::size_t round_pos = active.size();
  std::int64_t next_quiet = t0 + p.quiet_every_ns;
  std::uint64_t messages = 0;
  std::int64_t end = t0 + p.duration_ns;
  std::int64_t now = t0;
  while (now < end) {
    std::int64_t due = t0 + static_cast<std::int64_t>(static_cast<double>(messages) * ns_per_message);
    while ((now = now_ns()) < due) {
    }
    if (now >= next_quiet && active.size() > 1) {  // one more session goes quiet
      std::size_t k = rng() % active.size();
      s[active[k]].quiet = true;
      active[k] = active.back();
      active.pop_back();
      round_pos = active.size();  // a fresh round
      next_quiet += p.quiet_every_ns;
    }
    if (round_pos >= active.size()) {
      std::shuffle(active.begin(), active.end(), rng);
      round_pos = 0;
    }
    std::size_t i = active[round_pos++];
    if (sampled(messages)) {
      std::int64_t a = now_ns();
      arm(i, now);
      samples.push_back(now_ns() - a);
    } else {
      arm(i, now);
    }
    ++messages;
  }
  std::int64_t sent_until = now_ns();
  std::int64_t rss_after = resident_bytes();
  // Every quiet session's timeout is due by its last message + timeout; wait that long and more.
  sleep_until_ns(sent_until + p.timeout_ns + 200'000'000);

  std::vector<std::int64_t> lateness;
  std::int64_t quiet = 0, wrong = 0, missed = 0, early = 0;
  for (std::size_t i = 0; i < p.sessions; ++i) {
    int f = s[i].fires.load(std::memory_order_acquire);
    if (!s[i].quiet) {
      // Active to the end: their last timeouts are due after the run; any earlier fire is wrong.
      std::int64_t at = s[i].fired_at.load(std::memory_order_relaxed);
      if (f > 1) wrong += f - 1;
      if (f > 0 && at < s[i].last_message + p.timeout_ns) ++wrong;
      continue;
    }
    ++quiet;
    if (f == 0) { ++missed; continue; }
    if (f > 1) wrong += f - 1;
    std::int64_t late = s[i].fired_at.load(std::memory_order_relaxed) - (s[i].last_message + p.timeout_ns);
    if (late < 0) ++early;
    lateness.push_back(late);
  }
  for (auto& hd : h) System::cancel(hd);

  double secs = static_cast<double>(sent_until - t0) * 1e-9;
  r.figure("rearms_per_s", static_cast<double>(messages) / secs);
  r.figure("messages", static_cast<std::int64_t>(messages));
  add_percentiles(r, samples, false, "rearm_");
  r.figure("quiet_sessions", quiet);
  r.figure("wrong_fires", wrong);
  r.figure("missed", missed);
  r.figure("early_fires", early);
  add_percentiles(r, lateness, false, "lateness_");
  r.figure("rss_growth_bytes", rss_after - rss_before);
  return r;
}

}  // namespace kairos::perf
