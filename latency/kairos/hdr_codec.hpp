// hdr_codec.hpp: HdrHistogram interchange for kairos::LatencyHistogram: the V2 encoding (plain
// and zlib-compressed), base64, interval logs (.hlog) and percentile-distribution text (.hgrm),
// as HdrHistogram (Java, C, Go, ...), HistogramLogAnalyzer and HdrHistogram's plotter read them.
//
// Mapping: LatencyHistogram's bucket array is, index for index, the counts array of an
//   HdrHistogram with lowestDiscernibleValue 1, highestTrackableValue 2^63 - 1 and 2 significant
//   digits; encode_* writes those parameters. decode() also reads histograms with other
//   parameters: each of their buckets is counted at its middle value (within our resolution).
//   After a decode, min() and max() are the lowest / highest value of the lowest / highest
//   non-empty bucket, and mean() counts every sample at its bucket's middle (HdrHistogram does the
//   same; the exact min, max and sum are not part of the V2 form).
// Negative samples (below_zero()) have no place in HdrHistogram: they are left out of every form
//   written here; count them apart.
// Link: the kairos::latency target (CMake) or `pkg-config --libs kairos-latency`; the codec is
//   compiled there (latency/src/hdr_codec.cpp) and links zlib itself: this header names no zlib.
// Errors: decoders throw std::invalid_argument naming what is wrong (bad cookie, truncated input,
//   inflate error, counts past the end of the range, bad base64, a malformed log line, counts of
//   another layout that add up to more than 2^63 - 1 in one of our buckets). A V2 word is a signed
//   64-bit count: encode_* throws std::invalid_argument for a bucket holding more than 2^63 - 1
//   samples rather than write less (only an assign()ed or merged histogram can hold that many).
// Hostile input: every index and length is checked before it is used (no overflow, no read past
//   the input); a compressed payload is inflated only up to the length its inner header announces,
//   and that length only up to what the largest histogram of its layout can take (every count
//   in its widest, 9-byte form: 66 KiB for kairos's own layout), so a zlib bomb is refused with
//   that reason after at most that much memory.
// Threads: plain functions over values; HlogWriter is one object per stream.
//
// Example: a log that HistogramLogProcessor or HistogramLogAnalyzer reads.
//   std::ofstream file("run.hlog");
//   kairos::hdr::HlogWriter log(file);            // header; start time = now
//   log.write(interval_histogram, 0.0, 1.0);      // start 0 s, length 1 s (relative to start)
//   kairos::hdr::write_hgrm(std::cout, total);    // Value/Percentile/TotalCount/1/(1-Percentile)
#pragma once
#include <cstddef>
#include <cstdint>
#include <istream>
#include <limits>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <kairos/latency_histogram.hpp>

namespace kairos::hdr {

inline constexpr std::uint32_t kV2Cookie = 0x1c849313;            // V2 encoding, 8-byte words
inline constexpr std::uint32_t kV2CompressedCookie = 0x1c849314;  // the same, deflated
inline constexpr int kSignificantDigits = 2;
inline constexpr std::int64_t kLowestDiscernible = 1;
inline constexpr std::int64_t kHighestTrackable = LatencyHistogram::kMaxValue;
inline constexpr std::size_t kV2HeaderBytes = 40;
inline constexpr int kDefaultCompression = -1;  // zlib's Z_DEFAULT_COMPRESSION; 0 (none) .. 9 (best)

// The V2 encoding (uncompressed): a 40-byte big-endian header (cookie, payload length,
// normalizing index offset 0, significant digits, lowest, highest, conversion ratio 1.0), then the
// counts up to the highest non-empty bucket as ZigZag LEB128 words, a run of k > 1 empty buckets
// as the word -k.
std::vector<std::uint8_t> encode_v2(const LatencyHistogram& h);

// The V2 compressed encoding: cookie, length of what follows, then encode_v2() deflated by zlib
// at `level` (kDefaultCompression, or 0 .. 9).
std::vector<std::uint8_t> encode_v2_compressed(const LatencyHistogram& h, int level = kDefaultCompression);

// Reads either encoding into `out` (see Mapping above); on a throw, out is reset.
void decode(std::span<const std::uint8_t> bytes, LatencyHistogram& out);
LatencyHistogram decode(std::span<const std::uint8_t> bytes);

// Standard base64 (RFC 4648, with padding), as HdrHistogram's logs use it.
std::string base64_encode(std::span<const std::uint8_t> bytes);
std::vector<std::uint8_t> base64_decode(std::string_view text);

// base64 of the V2 compressed encoding: the form of an .hlog line and of kairos-lat's records.
std::string to_base64(const LatencyHistogram& h);
void from_base64(std::string_view text, LatencyHistogram& out);
LatencyHistogram from_base64(std::string_view text);

// ---- interval logs (.hlog, "Histogram log format version 1.3") ------------------------------

// HlogWriter(out, start_later): the header waits for start(), when the start time is known
// (kairos::Pacer::hlog_intervals starts such a log at its run's first measured call).
struct StartLater {};
inline constexpr StartLater start_later{};

// Writes a log: the header (StartTime, and BaseTime at the same moment: every line's start is
// relative to it), then one line per interval:
//   [Tag=<tag>,]<start s>,<length s>,<interval max / max_unit_ratio>,<base64 V2 compressed>
// start is seconds relative to the StartTime in the header, as HdrHistogram's writer does;
// Interval_Max is in milliseconds for ns values (max_unit_ratio 1e6, HdrHistogram's default).
// The header is written at construction, or with start_later by start(); comment() and write()
// before it throw std::logic_error, and so does a second start().
class HlogWriter {
 public:
  explicit HlogWriter(std::ostream& out, double start_time_s = now_s(), double max_unit_ratio = 1e6);
  HlogWriter(std::ostream& out, StartLater, double max_unit_ratio = 1e6);
  void start(double start_time_s);  // the header, for a log made with start_later
  bool started() const noexcept { return started_; }
  void comment(std::string_view text);
  // tag: empty or a word without ',', ' ' and newlines (HdrHistogram's rule).
  void write(const LatencyHistogram& h, double start_s, double length_s, std::string_view tag = {});
  static double now_s();

 private:
  std::ostream& out_;
  double ratio_;
  bool started_ = false;
};

struct HlogInterval {
  std::string tag;  // empty when the line has none
  double start_s = 0;
  double length_s = 0;
  LatencyHistogram histogram;
};

struct Hlog {
  double start_time_s = std::numeric_limits<double>::quiet_NaN();  // #[StartTime: ...], if given
  double base_time_s = std::numeric_limits<double>::quiet_NaN();   // #[BaseTime: ...], if given
  std::vector<HlogInterval> intervals;
};

// Reads an interval log written by HlogWriter or by any HdrHistogram implementation. Throws
// std::invalid_argument naming the line for a line that is neither a comment, the column header,
// nor an interval.
Hlog read_hlog(std::istream& in);

// ---- percentile distribution (.hgrm) -------------------------------------------------------

// HdrHistogram's outputPercentileDistribution text: columns Value (ns / value_unit_ratio, so
// microseconds by default), Percentile (a fraction), TotalCount and 1/(1-Percentile); percentile
// steps halve the distance to 100% every ticks_per_half_distance lines; then the #[Mean ...],
// #[Max ...] and #[Buckets ...] footer. HdrHistogram's plotter reads it.
void write_hgrm(std::ostream& out, const LatencyHistogram& h, double value_unit_ratio = 1000.0,
                unsigned ticks_per_half_distance = 5);

}  // namespace kairos::hdr
