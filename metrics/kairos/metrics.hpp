// metrics.hpp: kairos's schedulers in Prometheus (the optional component kairos::metrics, built
// on prometheus-cpp). A SchedulerCollector is a prometheus::Collectable: each scrape calls
// stats() of every scheduler exposed on it and turns the snapshots into metric families, one
// series per shard, labelled scheduler="<name>" and shard="<index>". Nothing runs between
// scrapes: no thread, no timer, nothing on kairos's submit or run path.
//
//   prometheus::Exposer exposer{"127.0.0.1:9464"};                         // prometheus-cpp-pull
//   auto metrics = std::make_shared<kairos::metrics::SchedulerCollector>();
//   exposer.RegisterCollectable(metrics);
//   auto exposed = kairos::metrics::expose(scheduler, *metrics, "orders");  // keep it
//
// One collector holds any number of schedulers: every family then appears once in a scrape (two
// collectables on one endpoint that emit the same family name would repeat its TYPE line, which
// Prometheus refuses). prometheus-cpp 1.0's Registry holds only the metrics its builders make,
// not a Collectable: register the collector with the Exposer (or a Gateway) beside the Registry.
// Metric names, types and units: docs/metrics.md.
//
// Lateness is a Prometheus *histogram*, kairos_task_lateness_seconds, not a summary, because
//   - LatencyHistogram counts every start since the scheduler began, and so do le buckets: then
//     rate(kairos_task_lateness_seconds_bucket[5m]) is the lateness of the last five minutes and
//     histogram_quantile(0.99, ...) its p99. A summary's quantiles would be since the start: an
//     incident an hour into the run would hardly move them.
//   - buckets add up across shards, schedulers and hosts (sum by (le)); quantiles never do.
// Its buckets are the kit's counts, never re-estimated. A start counts under le="B" when the
// whole LatencyHistogram bucket holding it lies at or below B (up to the bucket's highest value,
// or max() for the top one): exact when B is a bucket edge or at least max(); otherwise the
// count leaves out at most the starts of the one bucket that straddles B (values within 1/128
// of B), so the histogram never counts a start later than B as within B. Consequently, for every
// le B and percentile p: bucket{le=B} >= rank_at_percentile(p, count) implies
// value_at_percentile(p) <= B, and value_at_percentile(p) < the straddling bucket's lowest value
// implies bucket{le=B} >= that rank. _count is count() (starts with lateness >= 0), _sum the
// exact sum of their lateness (to double rounding). Beside it, gauge
// kairos_task_lateness_max_seconds gives the exact max() since the start (no histogram can),
// and counter kairos_task_early_starts_total the early starts (below_zero(): a correctness bug,
// counted apart as the kit does, never inside the histogram).
//
// Threads: Collect() may run on any thread, concurrently with itself, with expose() and with an
//          Exposure's end. stats() may be called from any thread at any time (docs/api.md,
//          "Where each call is safe"); a scrape costs each shard one brief hold of its lock
//          while stats() copies the 57 KiB lateness histogram, once per scrape, never per task.
// Lifetime: expose() returns an Exposure; while it lives, scrapes read the scheduler. Its end
//          (destructor or reset()) waits for a scrape reading that scheduler, after which no
//          scrape touches it again. So:
//   - expose(Scheduler&, ...): the scheduler must outlive the Exposure: declare the Exposure
//     after the scheduler (destroyed first), or reset() it before the scheduler goes.
//   - expose(std::shared_ptr<Scheduler>, ...): the collector keeps a weak reference, and a
//     scheduler destroyed while still exposed simply drops out of the next scrape. A scrape holds
//     its own reference while it reads: when the owner lets go during a scrape, the scheduler's
//     destructor runs on the scraping thread as that scrape ends.
//   The collector and the Exposure may end in either order; an Exposer keeps only a weak
//   reference to the collector (prometheus-cpp skips collectables that are gone).
#pragma once
#include <chrono>
#include <concepts>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <kairos/stats.hpp>

namespace kairos::metrics {

// The default le bounds of kairos_task_lateness_seconds: 100 ns to 10 s in 1-2.5-5 steps.
std::vector<std::chrono::nanoseconds> default_lateness_buckets();

// The metric families of one stats() snapshot, one series per shard labelled
// scheduler=`scheduler_name`, shard=index; what a scrape of a collector holding only this
// scheduler returns. `lateness_buckets` as SchedulerCollector's.
std::vector<prometheus::MetricFamily> to_metric_families(
    const SchedulerStats& stats, const std::string& scheduler_name,
    std::span<const std::chrono::nanoseconds> lateness_buckets);

namespace detail {
// One exposed scheduler, shared by its Exposure and the collector's list.
struct ExposedScheduler {
  ExposedScheduler(std::string name_, std::function<SchedulerStats()> read_stats_, std::weak_ptr<const void> owner_,
                   bool owned_elsewhere_)
      : name(std::move(name_)), read_stats(std::move(read_stats_)), owner(std::move(owner_)),
        owned_elsewhere(owned_elsewhere_) {}
  const std::string name;
  const std::function<SchedulerStats()> read_stats;  // calls the scheduler's stats()
  const std::weak_ptr<const void> owner;              // shared form: the scheduler's owner
  const bool owned_elsewhere;                         // shared form: read only while owner lives
  std::mutex mu;                                      // held across read_stats(); reset() takes it
  bool exposed = true;                                // guarded by mu: false once reset()
};
}  // namespace detail

// What expose() returns: the scheduler stays in the collector's scrapes while this lives.
// Move-only. Its end (destructor, reset(), move-assignment over it) waits for a scrape reading the
// scheduler; when it returns no scrape reads it again.
class [[nodiscard]] Exposure {
 public:
  Exposure() = default;  // exposes nothing
  Exposure(Exposure&& other) noexcept = default;
  Exposure& operator=(Exposure&& other) noexcept;
  Exposure(const Exposure&) = delete;
  Exposure& operator=(const Exposure&) = delete;
  ~Exposure() { reset(); }

  void reset() noexcept;          // the scheduler leaves the scrapes (idempotent)
  bool exposed() const noexcept;  // true until reset()
  const std::string& name() const noexcept;  // the scheduler label; empty once reset()

 private:
  friend class SchedulerCollector;
  explicit Exposure(std::shared_ptr<detail::ExposedScheduler> exposed) noexcept
      : exposed_(std::move(exposed)) {}
  std::shared_ptr<detail::ExposedScheduler> exposed_;
};

// A prometheus::Collectable of named schedulers. Register it with a prometheus::Exposer (or a
// Gateway) by shared_ptr; add schedulers with expose(). Collect() returns, for each metric, one
// family holding the series of every scheduler exposed (in the order they were exposed) and
// every shard; no family at all while none is exposed.
class SchedulerCollector : public prometheus::Collectable {
 public:
  // lateness_buckets: the le bounds of kairos_task_lateness_seconds (the +Inf bucket is added).
  // Throws std::invalid_argument unless they are >= 0 and strictly increasing.
  explicit SchedulerCollector(std::vector<std::chrono::nanoseconds> lateness_buckets = default_lateness_buckets());
  ~SchedulerCollector() override;
  SchedulerCollector(const SchedulerCollector&) = delete;
  SchedulerCollector& operator=(const SchedulerCollector&) = delete;

  std::vector<prometheus::MetricFamily> Collect() const override;

  // The general form behind expose(): scrapes call `read_stats` (from any thread, one call at a
  // time) until the Exposure ends; with `owner`, only while a reference locked from it lives (the
  // scrape holds it across the call). Throws std::invalid_argument for an empty name, an empty
  // read_stats, or a name that another live exposure on this collector has.
  Exposure add(std::string name, std::function<SchedulerStats()> read_stats);
  Exposure add(std::string name, std::function<SchedulerStats()> read_stats, std::weak_ptr<const void> owner);

  const std::vector<std::chrono::nanoseconds>& lateness_buckets() const noexcept { return lateness_buckets_; }

 private:
  std::vector<std::shared_ptr<detail::ExposedScheduler>> snapshot() const;  // a copy of exposed_
  Exposure add_exposure(std::string name, std::function<SchedulerStats()> read_stats,
                        std::weak_ptr<const void> owner, bool owned_elsewhere);
  const std::vector<std::chrono::nanoseconds> lateness_buckets_;
  mutable std::mutex mu_;  // guards exposed_; never held while a scheduler is read
  // The exposures in the order they were added, plus ended ones (reset, or owner gone) that no
  // add() has swept yet: scrapes skip those.
  std::vector<std::shared_ptr<detail::ExposedScheduler>> exposed_;
};

// Anything with `SchedulerStats stats() const`: kairos::Scheduler, BasicScheduler<ManualClock>,
// and classes derived from them.
template <class S>
concept HasStats = requires(const S& s) {
  { s.stats() } -> std::same_as<SchedulerStats>;
};

// Exposes `scheduler` on `collector` as scheduler="<name>". The scheduler must outlive the
// returned Exposure (see Lifetime above). Throws std::invalid_argument as add().
template <HasStats S>
Exposure expose(const S& scheduler, SchedulerCollector& collector, std::string name) {
  return collector.add(std::move(name), [&scheduler] { return scheduler.stats(); });
}

// The same, with a weak reference: a scheduler destroyed while exposed drops out of the scrapes.
template <HasStats S>
Exposure expose(const std::shared_ptr<S>& scheduler, SchedulerCollector& collector, std::string name) {
  // The raw pointer is read only while a scrape holds a reference locked from `owner`.
  const S* raw = scheduler.get();
  return collector.add(std::move(name), [raw] { return raw->stats(); },
                       std::weak_ptr<const void>(scheduler));
}

}  // namespace kairos::metrics
