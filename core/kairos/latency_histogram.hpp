// latency_histogram.hpp: a fixed-size log-linear histogram of latencies in nanoseconds.
// Threads: not thread-safe; record() from one thread at a time. Keep one histogram per
//          thread, then merge() them on one thread once the recording threads are done.
// Error:   value_at_percentile() is within 0.4% of the exact percentile (nearest-rank, see
//          rank_at_percentile()) for every value in [0, INT64_MAX] ns; values below 256 ns
//          are exact. min(), max() and count() are exact; mean() is exact up to double rounding.
// Memory:  one fixed array of kBucketCount counters inside the object (about 57 KiB); nothing
//          is allocated after construction, so a histogram can live in a preallocated slot.
// Cost:    record() is a handful of integer instructions, one counter increment and one
//          well-predicted branch (the sign); no atomics, no allocation: about 3 ns.
// Negative values (a task that started before its deadline, for a lateness) are not part of
//          the distribution: record() counts them in below_zero() only, because they are a
//          correctness bug to be reported on their own, never averaged away.
//
// Layout (what the bucket indices of the JSON form mean, version 1): a value v >= 0 goes to
//   shift = max(0, bit_width(v) - 8);  index = shift * 128 + (v >> shift)
// so values below 256 each have their own bucket, and every power-of-two range [2^k, 2^(k+1))
// above that is cut into 128 equal buckets of width 2^(k-7). Bucket i holds the values
// [lowest_equivalent(i), highest_equivalent(i)]; its width is at most 1/128 of its lowest value.
//
// JSON form (to_json), one line, keys in this order:
//   {"kind":"kairos.latency_histogram","version":1,"count":N,"below_zero":B,"min":MIN,
//    "max":MAX,"mean":MEAN,"buckets":[[index,count],...]}
// count excludes below_zero; min, max and mean are 0 when count is 0; buckets lists the
// non-empty buckets in increasing index order. Readers: tools/hdr/histogram_json.hpp (nlohmann/json,
// ignores keys it does not know) rebuilds a histogram through assign(Parts); kairos/hdr_codec.hpp
// converts to and from HdrHistogram's V2 encoding, interval logs (.hlog) and .hgrm text.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace kairos {

class LatencyHistogram {
 public:
  static constexpr unsigned kSubBucketBits = 7;                      // 128 buckets per octave
  static constexpr std::size_t kSubBuckets = std::size_t{1} << kSubBucketBits;
  static constexpr std::size_t kBucketCount = (64 - kSubBucketBits) * kSubBuckets;  // 7296
  static constexpr std::int64_t kMaxValue = std::numeric_limits<std::int64_t>::max();

  LatencyHistogram() noexcept { reset(); }

  // Counts one sample of ns nanoseconds; ns < 0 only increments below_zero().
  void record(std::int64_t ns) noexcept {
    if (ns < 0) [[unlikely]] {
      ++below_zero_;
      return;
    }
    const auto v = static_cast<std::uint64_t>(ns);
    ++counts_[bucket_index(ns)];
    ++count_;
    sum_ += v;
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }

  // Counts `times` samples of ns nanoseconds at once.
  void record(std::int64_t ns, std::uint64_t times) noexcept {
    if (times == 0) return;
    if (ns < 0) {
      below_zero_ += times;
      return;
    }
    const auto v = static_cast<std::uint64_t>(ns);
    counts_[bucket_index(ns)] += times;
    count_ += times;
    sum_ += static_cast<Sum>(v) * times;
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }

  // Counts each value of ns, as record() would one after another; count, sum, min and max are
  // kept in registers across the values and stored once. A runner files a batch's lateness so
  // (core/src/shard_leader.cpp): ~7 instructions a value fewer than a loop of record() (W6).
  void record_all(std::span<const std::int64_t> ns) noexcept {
    std::uint64_t n = 0;
    std::uint64_t below = 0;
    std::uint64_t sum = 0;    // the sum's low 64 bits ...
    std::uint64_t carries = 0;  // ... and how often they wrapped
    std::uint64_t lo = min_;
    std::uint64_t hi = max_;
    for (const std::int64_t x : ns) {
      if (x < 0) [[unlikely]] {
        ++below;
        continue;
      }
      const auto v = static_cast<std::uint64_t>(x);
      ++counts_[bucket_index(x)];
      ++n;
      carries += __builtin_add_overflow(sum, v, &sum);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    count_ += n;
    below_zero_ += below;
    sum_ += (static_cast<Sum>(carries) << 64) + sum;
    min_ = lo;
    max_ = hi;
  }

  // Any std::chrono duration; converted to whole nanoseconds (truncated toward zero).
  template <class Rep, class Period>
  void record(std::chrono::duration<Rep, Period> d) noexcept {
    record(static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()));
  }

  // Adds other's samples to this one: the result equals recording both sets of samples here.
  void merge(const LatencyHistogram& other) noexcept {
    for (std::size_t i = 0; i < kBucketCount; ++i) counts_[i] += other.counts_[i];
    count_ += other.count_;
    below_zero_ += other.below_zero_;
    sum_ += other.sum_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }

  void reset() noexcept {
    counts_.fill(0);
    count_ = 0;
    below_zero_ = 0;
    sum_ = 0;
    min_ = std::numeric_limits<std::uint64_t>::max();
    max_ = 0;
  }

  // Same samples recorded (bucket by bucket), same count, below_zero, min, max and sum.
  bool operator==(const LatencyHistogram&) const = default;

  std::uint64_t count() const noexcept { return count_; }            // samples >= 0
  std::uint64_t below_zero() const noexcept { return below_zero_; }  // samples < 0
  bool empty() const noexcept { return count_ == 0; }
  std::int64_t min() const noexcept { return count_ ? static_cast<std::int64_t>(min_) : 0; }
  std::int64_t max() const noexcept { return static_cast<std::int64_t>(max_); }
  double mean() const noexcept {
    return count_ ? static_cast<double>(static_cast<long double>(sum_) / count_) : 0.0;
  }

  // The value at percentile p in [0, 100]: a value in the bucket holding the sample of rank
  // rank_at_percentile(p, count()) in sorted order, clamped to [min(), max()]. p = 0 gives
  // min(), p = 100 gives max(), exactly. 0 when empty. Throws std::invalid_argument for a p
  // outside [0, 100] (NaN included). Cost: one pass over the buckets.
  std::int64_t value_at_percentile(double p) const {
    check_percentile(p);
    if (count_ == 0) return 0;
    const std::uint64_t rank = rank_at_percentile(p, count_);
    if (rank <= 1) return min();
    if (rank >= count_) return max();
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBucketCount; ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        const std::int64_t lo = lowest_equivalent(i);
        const std::int64_t mid = lo + (highest_equivalent(i) - lo) / 2;
        return std::clamp(mid, min(), max());
      }
    }
    return max();  // unreachable while count_ equals the sum of counts_
  }

  // Nearest rank: the 1-based rank in sorted order of the sample that is the p-th percentile
  // of `count` samples, ceil(p / 100 * count) clamped to [1, count]; 0 when count is 0. The
  // exact percentile of a sorted vector s is s[rank_at_percentile(p, s.size()) - 1].
  static std::uint64_t rank_at_percentile(double p, std::uint64_t count) {
    check_percentile(p);
    if (count == 0) return 0;
    const long double exact = static_cast<long double>(p) * count / 100.0L;
    // p arrives as a binary double (99.9 is 99.9000000000000057): shave that representation
    // error off so that p = 99.9 of 1000 samples is rank 999, not 1000.
    const long double shaved = exact - exact * 1e-15L;
    const long double r = std::ceil(shaved);
    if (r <= 1.0L) return 1;
    if (r >= static_cast<long double>(count)) return count;
    return static_cast<std::uint64_t>(r);
  }

  // Bucket geometry, for tests and for readers of the JSON form.
  static constexpr std::size_t bucket_index(std::int64_t ns) noexcept {  // ns >= 0
    const auto v = static_cast<std::uint64_t>(ns);
    const unsigned width = static_cast<unsigned>(std::bit_width(v));
    const unsigned shift = width > kSubBucketBits + 1 ? width - (kSubBucketBits + 1) : 0;
    return (static_cast<std::size_t>(shift) << kSubBucketBits) + static_cast<std::size_t>(v >> shift);
  }
  static constexpr std::int64_t lowest_equivalent(std::size_t index) noexcept {
    if (index < 2 * kSubBuckets) return static_cast<std::int64_t>(index);
    const std::size_t shift = (index >> kSubBucketBits) - 1;
    const std::uint64_t sub = (index & (kSubBuckets - 1)) + kSubBuckets;
    return static_cast<std::int64_t>(sub << shift);
  }
  static constexpr std::int64_t highest_equivalent(std::size_t index) noexcept {
    if (index < 2 * kSubBuckets) return static_cast<std::int64_t>(index);
    const std::size_t shift = (index >> kSubBucketBits) - 1;
    const auto width = std::uint64_t{1} << shift;
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(lowest_equivalent(index)) + (width - 1));
  }
  std::uint64_t count_at_index(std::size_t index) const noexcept {
    return index < kBucketCount ? counts_[index] : 0;
  }

  // The JSON form described at the top of this file; one line, no trailing newline.
  std::string to_json() const {
    std::string out;
    out.reserve(160);
    out += R"({"kind":"kairos.latency_histogram","version":1,"count":)";
    append_uint(out, count_);
    out += R"(,"below_zero":)";
    append_uint(out, below_zero_);
    out += R"(,"min":)";
    append_uint(out, static_cast<std::uint64_t>(min()));
    out += R"(,"max":)";
    append_uint(out, max_);
    out += R"(,"mean":)";
    append_double(out, mean());
    out += R"(,"buckets":[)";
    bool first = true;
    for (std::size_t i = 0; i < kBucketCount; ++i) {
      if (counts_[i] == 0) continue;
      if (!first) out += ',';
      first = false;
      out += '[';
      append_uint(out, i);
      out += ',';
      append_uint(out, counts_[i]);
      out += ']';
    }
    out += "]}";
    return out;
  }

  // The parts a stored form carries, for readers of such forms (the JSON form is read by
  // tools/hdr/histogram_json.hpp, HdrHistogram's encoding by kairos/hdr_codec.hpp): the non-empty
  // buckets by index, below_zero, and min, max and the sum of the samples >= 0.
  struct Parts {
    std::vector<std::pair<std::size_t, std::uint64_t>> buckets;  // (index, count), any order
    std::uint64_t below_zero = 0;
    std::uint64_t min = 0;   // 0 when there is no sample >= 0
    std::uint64_t max = 0;
    long double sum = 0;     // rounded to a whole number of ns
  };
  // Replaces this histogram's contents with `parts`. Throws std::invalid_argument, naming what is
  // wrong, and leaves *this reset, when the parts do not fit together: a bucket index out of
  // range or repeated, counts that overflow, min or max not in the lowest / highest non-empty
  // bucket, min above max, or a sum outside [min * count, max * count] (plus a 1e-9 slack).
  void assign(const Parts& parts) {
    try {
      assign_parts(parts);
    } catch (...) {
      reset();
      throw;
    }
  }

  // Standard deviation of the samples >= 0: each bucket's samples counted at the middle of the
  // bucket (clamped to [min(), max()]), so it is exact below 256 ns and within the bucket
  // resolution (1/128 of the value) above; 0 when empty. Cost: one pass over the buckets.
  double stddev() const noexcept {
    if (count_ == 0) return 0.0;
    const long double m = static_cast<long double>(sum_) / count_;
    long double acc = 0;
    for (std::size_t i = 0; i < kBucketCount; ++i) {
      if (counts_[i] == 0) continue;
      const std::int64_t lo = lowest_equivalent(i);
      const std::int64_t mid = std::clamp(lo + (highest_equivalent(i) - lo) / 2, min(), max());
      const long double d = static_cast<long double>(mid) - m;
      acc += d * d * counts_[i];
    }
    return static_cast<double>(std::sqrt(acc / count_));
  }

 private:
  // Exact sum of the samples: INT64_MAX times 2^64 samples still fits.
  __extension__ typedef unsigned __int128 Sum;

  static void check_percentile(double p) {
    if (!(p >= 0.0 && p <= 100.0))
      throw std::invalid_argument("kairos::LatencyHistogram: percentile must be in [0, 100], got " +
                                  std::to_string(p));
  }
  static void append_uint(std::string& out, std::uint64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }
  static void append_double(std::string& out, double v) {
    char buf[40];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that reads back
    out.append(buf, r.ptr);
  }

  [[noreturn]] static void fail(const std::string& what) {
    throw std::invalid_argument("kairos::LatencyHistogram::assign: " + what);
  }
  void assign_parts(const Parts& p) {
    reset();
    std::uint64_t total = 0;
    for (const auto& [index, n] : p.buckets) {
      if (index >= kBucketCount)
        fail("bucket index " + std::to_string(index) + " out of range [0, " + std::to_string(kBucketCount) + ")");
      if (counts_[index] != 0) fail("bucket index " + std::to_string(index) + " repeated");
      if (n > std::numeric_limits<std::uint64_t>::max() - total) fail("bucket counts overflow");
      counts_[index] = n;
      total += n;
    }
    below_zero_ = p.below_zero;
    count_ = total;
    if (total == 0) {
      if (p.min != 0 || p.max != 0 || p.sum != 0) fail("min, max and mean must be 0 when count is 0");
      return;
    }
    if (p.min > static_cast<std::uint64_t>(kMaxValue) || p.max > static_cast<std::uint64_t>(kMaxValue))
      fail("min and max must be at most 2^63 - 1");
    if (p.min > p.max) fail("min is above max");
    std::size_t first = 0, last = kBucketCount - 1;
    while (counts_[first] == 0) ++first;
    while (counts_[last] == 0) --last;
    if (bucket_index(static_cast<std::int64_t>(p.min)) != first)
      fail("min " + std::to_string(p.min) + " is not in the lowest non-empty bucket");
    if (bucket_index(static_cast<std::int64_t>(p.max)) != last)
      fail("max " + std::to_string(p.max) + " is not in the highest non-empty bucket");
    const long double lo = static_cast<long double>(p.min) * total, hi = static_cast<long double>(p.max) * total;
    const long double slack = 1e-9L * hi + total;
    if (!(p.sum >= lo - slack && p.sum <= hi + slack)) fail("mean is outside [min, max]");
    min_ = p.min;
    max_ = p.max;
    const long double sum = std::round(std::clamp(p.sum, lo, hi));
    sum_ = static_cast<Sum>(sum);
  }

  std::array<std::uint64_t, kBucketCount> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t below_zero_ = 0;
  Sum sum_ = 0;
  std::uint64_t min_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace kairos
