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
// JSON form (to_json / from_json), one line, keys in this order:
//   {"kind":"kairos.latency_histogram","version":1,"count":N,"below_zero":B,"min":MIN,
//    "max":MAX,"mean":MEAN,"buckets":[[index,count],...]}
// count excludes below_zero; min, max and mean are 0 when count is 0; buckets lists the
// non-empty buckets in increasing index order. from_json ignores keys it does not know.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

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

  // Parses the JSON form back. Throws std::invalid_argument, naming what is wrong, for text
  // that is not that form: malformed JSON, another kind or version, a missing field, a bucket
  // index out of range or repeated, bucket counts that do not add up to count, or min, max and
  // mean that do not fit the buckets. mean round-trips exactly while count * mean < 2^52 ns.
  static LatencyHistogram from_json(std::string_view text) {
    LatencyHistogram h;
    h.parse_json(text);
    return h;
  }
  // The same, into an existing histogram (no 57 KiB temporary); on a throw, *this is reset.
  void assign_from_json(std::string_view text) {
    try {
      parse_json(text);
    } catch (...) {
      reset();
      throw;
    }
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

  // A small reader for the one JSON shape above; unknown keys are skipped whatever they hold.
  class Reader {
   public:
    explicit Reader(std::string_view text) : s_(text) {}
    [[noreturn]] void fail(const std::string& what) const {
      throw std::invalid_argument("kairos::LatencyHistogram::from_json: " + what + " at offset " +
                                  std::to_string(pos_));
    }
    void skip_ws() {
      while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
        ++pos_;
    }
    bool at_end() {
      skip_ws();
      return pos_ == s_.size();
    }
    char peek() {
      skip_ws();
      if (pos_ == s_.size()) fail("unexpected end of input");
      return s_[pos_];
    }
    void expect(char c) {
      if (peek() != c) fail(std::string("expected '") + c + "'");
      ++pos_;
    }
    bool consume(char c) {
      if (peek() != c) return false;
      ++pos_;
      return true;
    }
    std::string string() {
      expect('"');
      std::string out;
      while (true) {
        if (pos_ == s_.size()) fail("unterminated string");
        const char c = s_[pos_++];
        if (c == '"') return out;
        if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
        if (c != '\\') {
          out += c;
          continue;
        }
        if (pos_ == s_.size()) fail("unterminated string");
        const char e = s_[pos_++];
        switch (e) {
          case '"': case '\\': case '/': out += e; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u':
            for (int k = 0; k < 4; ++k, ++pos_)
              if (pos_ == s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[pos_])))
                fail("bad \\u escape");
            out += '?';  // keys and kinds are ASCII; the code point itself is not needed
            break;
          default: fail("bad escape in string");
        }
      }
    }
    std::string_view number_text() {
      skip_ws();
      const std::size_t start = pos_;
      if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
      const std::size_t digits = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == digits) fail("expected a number");
      if (s_[digits] == '0' && pos_ - digits > 1) fail("leading zero in number");
      if (pos_ < s_.size() && s_[pos_] == '.') {
        const std::size_t frac = ++pos_;
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
        if (pos_ == frac) fail("expected digits after '.'");
      }
      if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
        ++pos_;
        if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
        const std::size_t exp = pos_;
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
        if (pos_ == exp) fail("expected digits in exponent");
      }
      return s_.substr(start, pos_ - start);
    }
    std::uint64_t uint(const char* what) {
      const std::string_view t = number_text();
      std::uint64_t v = 0;
      const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (r.ec != std::errc{} || r.ptr != t.data() + t.size())
        fail(std::string(what) + " must be an integer in [0, 2^64), got " + std::string(t));
      return v;
    }
    double real(const char* what) {
      const std::string_view t = number_text();
      double v = 0;
      const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (r.ec != std::errc{} || r.ptr != t.data() + t.size() || !std::isfinite(v))
        fail(std::string(what) + " must be a finite number, got " + std::string(t));
      return v;
    }
    void literal(std::string_view word) {
      skip_ws();
      if (s_.substr(pos_, word.size()) != word) fail("unexpected character");
      pos_ += word.size();
    }
    void skip_value(int depth = 0) {
      if (depth > 64) fail("nesting too deep");
      const char c = peek();
      if (c == '"') {
        string();
      } else if (c == '{') {
        ++pos_;
        if (consume('}')) return;
        do {
          string();
          expect(':');
          skip_value(depth + 1);
        } while (consume(','));
        expect('}');
      } else if (c == '[') {
        ++pos_;
        if (consume(']')) return;
        do skip_value(depth + 1);
        while (consume(','));
        expect(']');
      } else if (c == 't') {
        literal("true");
      } else if (c == 'f') {
        literal("false");
      } else if (c == 'n') {
        literal("null");
      } else {
        number_text();
      }
    }

   private:
    std::string_view s_;
    std::size_t pos_ = 0;
  };

  void parse_json(std::string_view text) {
    reset();
    Reader in(text);
    bool has_kind = false, has_version = false, has_count = false, has_min = false, has_max = false,
         has_mean = false, has_buckets = false;
    std::uint64_t count = 0, min_value = 0, max_value = 0, bucket_total = 0;
    double mean_value = 0;
    in.expect('{');
    if (!in.consume('}')) {
      do {
        const std::string key = in.string();
        in.expect(':');
        if (key == "kind") {
          if (in.string() != "kairos.latency_histogram") in.fail("kind is not \"kairos.latency_histogram\"");
          has_kind = true;
        } else if (key == "version") {
          const std::uint64_t version = in.uint("version");
          if (version != 1) in.fail("unsupported version " + std::to_string(version) + " (this reader knows 1)");
          has_version = true;
        } else if (key == "count") {
          count = in.uint("count");
          has_count = true;
        } else if (key == "below_zero") {
          below_zero_ = in.uint("below_zero");
        } else if (key == "min") {
          min_value = in.uint("min");
          has_min = true;
        } else if (key == "max") {
          max_value = in.uint("max");
          has_max = true;
        } else if (key == "mean") {
          mean_value = in.real("mean");
          has_mean = true;
        } else if (key == "buckets") {
          if (has_buckets) in.fail("buckets given twice");
          has_buckets = true;
          in.expect('[');
          if (!in.consume(']')) {
            do {
              in.expect('[');
              const std::uint64_t index = in.uint("bucket index");
              in.expect(',');
              const std::uint64_t n = in.uint("bucket count");
              in.expect(']');
              if (index >= kBucketCount)
                in.fail("bucket index " + std::to_string(index) + " out of range [0, " +
                        std::to_string(kBucketCount) + ")");
              if (counts_[index] != 0) in.fail("bucket index " + std::to_string(index) + " repeated");
              if (n > std::numeric_limits<std::uint64_t>::max() - bucket_total) in.fail("bucket counts overflow");
              counts_[index] = n;
              bucket_total += n;
            } while (in.consume(','));
            in.expect(']');
          }
        } else {
          in.skip_value();
        }
      } while (in.consume(','));
      in.expect('}');
    }
    if (!in.at_end()) in.fail("text after the object");
    if (!has_kind) in.fail("missing \"kind\"");
    if (!has_version) in.fail("missing \"version\"");
    if (!has_count) in.fail("missing \"count\"");
    if (!has_min) in.fail("missing \"min\"");
    if (!has_max) in.fail("missing \"max\"");
    if (!has_mean) in.fail("missing \"mean\"");
    if (!has_buckets) in.fail("missing \"buckets\"");
    if (bucket_total != count)
      in.fail("bucket counts add up to " + std::to_string(bucket_total) + ", count is " + std::to_string(count));
    count_ = count;
    if (count == 0) {
      if (min_value != 0 || max_value != 0 || mean_value != 0) in.fail("min, max and mean must be 0 when count is 0");
      return;
    }
    if (min_value > static_cast<std::uint64_t>(kMaxValue) || max_value > static_cast<std::uint64_t>(kMaxValue))
      in.fail("min and max must be at most 2^63 - 1");
    if (min_value > max_value) in.fail("min is above max");
    std::size_t first = 0, last = kBucketCount - 1;
    while (counts_[first] == 0) ++first;
    while (counts_[last] == 0) --last;
    if (bucket_index(static_cast<std::int64_t>(min_value)) != first)
      in.fail("min " + std::to_string(min_value) + " is not in the lowest non-empty bucket");
    if (bucket_index(static_cast<std::int64_t>(max_value)) != last)
      in.fail("max " + std::to_string(max_value) + " is not in the highest non-empty bucket");
    const double slack = 1e-9 * static_cast<double>(max_value) + 1.0;
    if (mean_value < static_cast<double>(min_value) - slack || mean_value > static_cast<double>(max_value) + slack)
      in.fail("mean is outside [min, max]");
    min_ = min_value;
    max_ = max_value;
    // The exact sum is not part of the form; rebuild it from the mean. Below 2^52 the
    // rounding recovers it exactly, so mean() then prints the same digits again.
    const long double sum = std::round(static_cast<long double>(mean_value) * count);
    sum_ = sum <= 0 ? Sum{0} : static_cast<Sum>(sum);
  }

  std::array<std::uint64_t, kBucketCount> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t below_zero_ = 0;
  Sum sum_ = 0;
  std::uint64_t min_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace kairos
