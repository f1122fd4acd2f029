// metrics.cpp: kairos/metrics.hpp's SchedulerCollector, compiled into libkairos-metrics, which
// links prometheus-cpp-core (PUBLIC: the header's types are prometheus-cpp's). A scrape reads
// each exposed scheduler's stats() and builds the families here; the contract (names, bucket
// rule, threads, lifetime) is the header's, the table of metrics is kMetrics below.
//
// Locks: mu_ (the collector's list) is held only to copy or change the list; an exposure's own
// mu is held across its scheduler's stats() and by Exposure::reset(). Nobody takes mu_ while
// holding an exposure's mu, so the two never wait on each other in a cycle.
#include <kairos/metrics.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/metric_type.h>

namespace kairos::metrics {

namespace {

using namespace std::chrono_literals;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

double seconds_of_ns(double ns) { return ns / 1e9; }

// One series per shard; the lateness families first, then the counters and gauges of ShardStats.
struct MetricSpec {
  const char* name;
  const char* help;
  MetricType type;
  double (*value)(const ShardStats&);  // null: the lateness histogram
};

constexpr MetricSpec kMetrics[] = {
    {"kairos_task_lateness_seconds",
     "How late executions started (start - deadline), since the scheduler began; kairos's "
     "LatencyHistogram counts: a start counts under le only if its bucket lies wholly at or below le",
     MetricType::Histogram, nullptr},
    {"kairos_task_lateness_max_seconds", "The latest start since the scheduler began (start - deadline)",
     MetricType::Gauge, [](const ShardStats& s) { return seconds_of_ns(double(s.lateness.max())); }},
    {"kairos_task_early_starts_total",
     "Executions that started before their deadline (a bug to report; never in the lateness histogram)",
     MetricType::Counter, [](const ShardStats& s) { return double(s.lateness.below_zero()); }},
    {"kairos_tasks_submitted_total", "Submissions the shard accepted", MetricType::Counter,
     [](const ShardStats& s) { return double(s.submitted); }},
    {"kairos_task_runs_total", "Executions started (each run of a periodic task counts)", MetricType::Counter,
     [](const ShardStats& s) { return double(s.ran); }},
    {"kairos_tasks_cancelled_total", "Tasks that left the shard cancelled", MetricType::Counter,
     [](const ShardStats& s) { return double(s.cancelled); }},
    {"kairos_tasks_rejected_total", "Submissions refused or discarded by the rejection policy",
     MetricType::Counter, [](const ShardStats& s) { return double(s.rejected); }},
    {"kairos_periodic_task_failures_total", "Periodic tasks stopped by an exception", MetricType::Counter,
     [](const ShardStats& s) { return double(s.periodic_failures); }},
    {"kairos_tasks_pending", "Tasks waiting in the shard (queue_size(): cancelled ones it retains count, running ones not)",
     MetricType::Gauge, [](const ShardStats& s) { return double(s.pending); }},
    {"kairos_inbox_entries", "Submissions and remove requests waiting in the shard's inbox for its leader",
     MetricType::Gauge, [](const ShardStats& s) { return double(s.in_inbox); }},
    {"kairos_loop_wakes_total", "Poll mode: wake-ups of the owner's loop this shard signalled", MetricType::Counter,
     [](const ShardStats& s) { return double(s.loop_wakes); }},
    {"kairos_spin_window_seconds", "The leader's spin window before a deadline (hybrid, adaptive); 0 under sleep and spin",
     MetricType::Gauge, [](const ShardStats& s) { return seconds_of_ns(double(s.spin_window_ns)); }},
    {"kairos_wake_overshoot_seconds", "Adaptive wait: the estimated percentile of how late a timed sleep wakes",
     MetricType::Gauge, [](const ShardStats& s) { return seconds_of_ns(double(s.wake_overshoot_ns)); }},
    {"kairos_wake_overshoot_samples_total", "Adaptive wait: timed sleeps measured (kicks excluded)",
     MetricType::Counter, [](const ShardStats& s) { return double(s.wake_overshoot_samples); }},
};

std::vector<MetricFamily> empty_families() {
  std::vector<MetricFamily> families;
  families.reserve(std::size(kMetrics));
  for (const MetricSpec& m : kMetrics) families.push_back(MetricFamily{m.name, m.help, m.type, {}});
  return families;
}

// The header's bucket rule in one pass over the kit's buckets: bucket i counts under le=B when
// min(highest_equivalent(i), max()) <= B. That key never decreases with i, so one sweep serves
// every bound in increasing order.
ClientMetric::Histogram histogram_of(const LatencyHistogram& lateness,
                                     std::span<const std::chrono::nanoseconds> bounds) {
  ClientMetric::Histogram h;
  h.sample_count = lateness.count();
  h.sample_sum = seconds_of_ns(lateness.mean() * double(lateness.count()));
  h.bucket.reserve(bounds.size());
  const std::int64_t top = lateness.max();
  std::size_t index = 0;
  std::uint64_t cumulative = 0;
  for (std::chrono::nanoseconds bound : bounds) {
    while (index < LatencyHistogram::kBucketCount &&
           std::min(LatencyHistogram::highest_equivalent(index), top) <= bound.count()) {
      cumulative += lateness.count_at_index(index);
      ++index;
    }
    h.bucket.push_back(ClientMetric::Bucket{cumulative, seconds_of_ns(double(bound.count()))});
  }
  return h;  // the serializer adds le="+Inf" with sample_count
}

void append_scheduler(std::vector<MetricFamily>& families, const SchedulerStats& stats,
                      const std::string& scheduler_name, std::span<const std::chrono::nanoseconds> bounds) {
  for (std::size_t shard = 0; shard < stats.shards.size(); ++shard) {
    const ShardStats& s = stats.shards[shard];
    for (std::size_t m = 0; m < std::size(kMetrics); ++m) {
      ClientMetric metric;
      metric.label = {{"scheduler", scheduler_name}, {"shard", std::to_string(shard)}};
      switch (kMetrics[m].type) {
        case MetricType::Histogram: metric.histogram = histogram_of(s.lateness, bounds); break;
        case MetricType::Counter: metric.counter.value = kMetrics[m].value(s); break;
        default: metric.gauge.value = kMetrics[m].value(s); break;
      }
      families[m].metric.push_back(std::move(metric));
    }
  }
}

std::vector<std::chrono::nanoseconds> checked_buckets(std::vector<std::chrono::nanoseconds> bounds) {
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (bounds[i] < 0ns)
      throw std::invalid_argument("kairos::metrics: lateness bucket " + std::to_string(i) + " is negative (" +
                                  std::to_string(bounds[i].count()) + " ns)");
    if (i > 0 && bounds[i] <= bounds[i - 1])
      throw std::invalid_argument("kairos::metrics: lateness buckets must increase strictly; bucket " +
                                  std::to_string(i) + " (" + std::to_string(bounds[i].count()) +
                                  " ns) is not above the one before");
  }
  return bounds;
}

}  // namespace

std::vector<std::chrono::nanoseconds> default_lateness_buckets() {
  return {100ns, 250ns, 500ns, 1us,  2500ns, 5us,    10us,   25us,  50us,  100us, 250us, 500us, 1ms,
          2500us, 5ms, 10ms,  25ms, 50ms,   100ms, 250ms, 500ms, 1s,    2500ms, 5s,    10s};
}

std::vector<MetricFamily> to_metric_families(const SchedulerStats& stats, const std::string& scheduler_name,
                                             std::span<const std::chrono::nanoseconds> lateness_buckets) {
  std::vector<MetricFamily> families = empty_families();
  append_scheduler(families, stats, scheduler_name, checked_buckets({lateness_buckets.begin(), lateness_buckets.end()}));
  return families;
}

// ---- Exposure -------------------------------------------------------------------------------

Exposure& Exposure::operator=(Exposure&& other) noexcept {
  if (this != &other) {
    reset();
    exposed_ = std::move(other.exposed_);
  }
  return *this;
}

void Exposure::reset() noexcept {
  if (!exposed_) return;
  {
    std::lock_guard lock(exposed_->mu);  // waits for a scrape reading the scheduler now
    exposed_->exposed = false;
  }
  exposed_.reset();
}

bool Exposure::exposed() const noexcept { return exposed_ != nullptr; }

const std::string& Exposure::name() const noexcept {
  static const std::string kNone;
  return exposed_ ? exposed_->name : kNone;
}

// ---- SchedulerCollector ---------------------------------------------------------------------

SchedulerCollector::SchedulerCollector(std::vector<std::chrono::nanoseconds> lateness_buckets)
    : lateness_buckets_(checked_buckets(std::move(lateness_buckets))) {}

SchedulerCollector::~SchedulerCollector() = default;

Exposure SchedulerCollector::add(std::string name, std::function<SchedulerStats()> read_stats) {
  return add_exposure(std::move(name), std::move(read_stats), {}, false);
}

Exposure SchedulerCollector::add(std::string name, std::function<SchedulerStats()> read_stats,
                                 std::weak_ptr<const void> owner) {
  return add_exposure(std::move(name), std::move(read_stats), std::move(owner), true);
}

Exposure SchedulerCollector::add_exposure(std::string name, std::function<SchedulerStats()> read_stats,
                                          std::weak_ptr<const void> owner, bool owned_elsewhere) {
  if (name.empty()) throw std::invalid_argument("kairos::metrics: a scheduler's name must not be empty");
  if (!read_stats) throw std::invalid_argument("kairos::metrics: no stats source for scheduler '" + name + "'");
  auto added = std::make_shared<detail::ExposedScheduler>(std::move(name), std::move(read_stats), std::move(owner),
                                                         owned_elsewhere);
  std::lock_guard lock(mu_);
  // Sweep the exposures that ended (reset, or owner gone); a live one may not share the name.
  std::erase_if(exposed_, [](const std::shared_ptr<detail::ExposedScheduler>& e) {
    std::lock_guard entry_lock(e->mu);
    return !e->exposed || (e->owned_elsewhere && e->owner.expired());
  });
  for (const auto& e : exposed_)
    if (e->name == added->name)
      throw std::invalid_argument("kairos::metrics: a scheduler named '" + added->name +
                                  "' is already exposed on this collector");
  exposed_.push_back(added);
  return Exposure(std::move(added));
}

std::vector<std::shared_ptr<detail::ExposedScheduler>> SchedulerCollector::snapshot() const {
  std::lock_guard lock(mu_);
  return exposed_;
}

std::vector<MetricFamily> SchedulerCollector::Collect() const {
  std::vector<MetricFamily> families = empty_families();
  bool any = false;
  for (const auto& e : snapshot()) {
    // Shared form: hold the scheduler while reading it. Declared before the lock, so that when
    // this is the last reference the scheduler is destroyed after the lock is released.
    std::shared_ptr<const void> keep;
    if (e->owned_elsewhere && !(keep = e->owner.lock())) continue;
    std::optional<SchedulerStats> stats;
    {
      std::lock_guard lock(e->mu);  // Exposure::reset() waits for this read
      if (!e->exposed) continue;
      stats = e->read_stats();
    }
    append_scheduler(families, *stats, e->name, lateness_buckets_);
    any = true;
  }
  if (!any) return {};
  return families;
}

}  // namespace kairos::metrics
