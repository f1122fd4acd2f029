// hdr_codec.cpp: kairos/hdr_codec.hpp's HdrHistogram interchange, compiled once into the
// kairos::latency library, which links zlib (PRIVATE: a program using the codec needs neither
// zlib's headers nor a -lz of its own with a shared library; a static one declares it in
// kairos-latency.pc's Requires.private and kairosConfig.cmake's find_dependency(ZLIB)).
// The contract (mapping, errors, hostile input) is the header's.
#include <kairos/hdr_codec.hpp>

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <istream>
#include <limits>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kairos::hdr {


namespace detail {
namespace {  // internal linkage: not part of the library's interface

void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(v >> s));
}
void put64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(v >> s));
}
void set32(std::uint8_t* at, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) at[k] = static_cast<std::uint8_t>(v >> (24 - 8 * k));
}

// ZigZag, then LEB128 in at most 9 bytes: the 9th byte carries 8 bits (HdrHistogram's form).
void put_zigzag(std::vector<std::uint8_t>& out, std::int64_t value) {
  std::uint64_t v = (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
  for (int k = 0; k < 8; ++k) {
    if (v < 0x80) {
      out.push_back(static_cast<std::uint8_t>(v));
      return;
    }
    out.push_back(static_cast<std::uint8_t>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("kairos::hdr: " + what);
}

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : b_(bytes) {}
  std::size_t left() const { return b_.size() - pos_; }
  std::uint32_t u32() {
    need(4);
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v = (v << 8) | b_[pos_++];
    return v;
  }
  std::uint64_t u64() {
    need(8);
    std::uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v = (v << 8) | b_[pos_++];
    return v;
  }
  std::int64_t zigzag() {
    std::uint64_t v = 0;
    for (int k = 0; k < 9; ++k) {
      need(1);
      const std::uint8_t byte = b_[pos_++];
      if (k == 8) {
        v |= static_cast<std::uint64_t>(byte) << 56;
        break;
      }
      v |= static_cast<std::uint64_t>(byte & 0x7f) << (7 * k);
      if ((byte & 0x80) == 0) break;
    }
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
  }
  std::span<const std::uint8_t> rest() const { return b_.subspan(pos_); }

 private:
  void need(std::size_t n) const {
    if (left() < n) fail("truncated input");
  }
  std::span<const std::uint8_t> b_;
  std::size_t pos_ = 0;
};

// The geometry of an HdrHistogram with the given parameters (HdrHistogram's own arithmetic).
struct Layout {
  unsigned unit_magnitude = 0;
  unsigned sub_bucket_half_count_magnitude = 0;
  std::int64_t sub_bucket_half_count = 0;
  Layout(std::int64_t lowest, int digits) {
    if (lowest < 1) fail("lowestDiscernibleValue must be >= 1, got " + std::to_string(lowest));
    if (digits < 0 || digits > 5)
      fail("numberOfSignificantValueDigits must be in [0, 5], got " + std::to_string(digits));
    unit_magnitude = static_cast<unsigned>(std::bit_width(static_cast<std::uint64_t>(lowest)) - 1);
    std::int64_t single_unit = 2;
    for (int k = 0; k < digits; ++k) single_unit *= 10;
    const unsigned mag = static_cast<unsigned>(std::bit_width(static_cast<std::uint64_t>(single_unit - 1)));
    sub_bucket_half_count_magnitude = (mag > 1 ? mag : 1) - 1;
    sub_bucket_half_count = std::int64_t{1} << sub_bucket_half_count_magnitude;
    if (unit_magnitude + sub_bucket_half_count_magnitude > 61) fail("lowestDiscernibleValue too large");
  }
  // The number of counts indexes whose values fit in 63 bits: the buckets b = 0 .. 62 - unit -
  // half magnitude (their lowest value sub << (b + unit) with sub < 2 * half count) plus bucket 0's
  // lower half.
  std::uint64_t counts_length() const {
    return static_cast<std::uint64_t>(64 - unit_magnitude - sub_bucket_half_count_magnitude) *
           static_cast<std::uint64_t>(sub_bucket_half_count);
  }
  // The most bytes the V2 counts of this layout take: each index one word of at most 9 bytes.
  std::uint64_t max_payload_bytes() const { return counts_length() * 9; }
  // [lowest, highest] value of counts index i; false past 2^63.
  bool range(std::uint64_t i, std::int64_t& lo, std::int64_t& hi) const {
    if (i >= counts_length()) return false;  // also keeps the bucket number below in range
    std::int64_t bucket = static_cast<std::int64_t>(i >> sub_bucket_half_count_magnitude) - 1;
    std::int64_t sub = static_cast<std::int64_t>(i & static_cast<std::uint64_t>(sub_bucket_half_count - 1)) +
                       sub_bucket_half_count;
    if (bucket < 0) {
      sub -= sub_bucket_half_count;
      bucket = 0;
    }
    const std::int64_t shift = bucket + unit_magnitude;
    if (shift >= 63 || std::bit_width(static_cast<std::uint64_t>(sub)) + shift > 63) return false;
    lo = sub << shift;
    hi = lo + ((std::int64_t{1} << shift) - 1);
    return true;
  }
};

}  // namespace
}  // namespace detail

// The V2 encoding (uncompressed): a 40-byte big-endian header (cookie, payload length,
// normalizing index offset 0, significant digits, lowest, highest, conversion ratio 1.0), then the
// counts up to the highest non-empty bucket as ZigZag LEB128 words, a run of k > 1 empty buckets
// as the word -k.
std::vector<std::uint8_t> encode_v2(const LatencyHistogram& h) {
  std::vector<std::uint8_t> out;
  out.reserve(kV2HeaderBytes + 64);
  detail::put32(out, kV2Cookie);
  detail::put32(out, 0);  // payload length, set below
  detail::put32(out, 0);
  detail::put32(out, static_cast<std::uint32_t>(kSignificantDigits));
  detail::put64(out, static_cast<std::uint64_t>(kLowestDiscernible));
  detail::put64(out, static_cast<std::uint64_t>(kHighestTrackable));
  double ratio = 1.0;
  std::uint64_t ratio_bits = 0;
  std::memcpy(&ratio_bits, &ratio, sizeof ratio);
  detail::put64(out, ratio_bits);
  if (!h.empty()) {
    const std::size_t limit = LatencyHistogram::bucket_index(h.max()) + 1;
    for (std::size_t i = 0; i < limit;) {
      const std::uint64_t c = h.count_at_index(i++);
      if (c > static_cast<std::uint64_t>(INT64_MAX))
        detail::fail("bucket " + std::to_string(i - 1) + " holds " + std::to_string(c) +
                     " samples, more than the 2^63 - 1 a V2 word can carry");
      if (c != 0) {
        detail::put_zigzag(out, static_cast<std::int64_t>(c));
        continue;
      }
      std::int64_t zeros = 1;
      while (i < limit && h.count_at_index(i) == 0) ++zeros, ++i;
      detail::put_zigzag(out, zeros > 1 ? -zeros : 0);
    }
  }
  detail::set32(out.data() + 4, static_cast<std::uint32_t>(out.size() - kV2HeaderBytes));
  return out;
}

// The V2 compressed encoding: cookie, length of what follows, then encode_v2() deflated by zlib.
std::vector<std::uint8_t> encode_v2_compressed(const LatencyHistogram& h, int level) {
  static_assert(kDefaultCompression == Z_DEFAULT_COMPRESSION);
  const std::vector<std::uint8_t> plain = encode_v2(h);
  uLongf size = compressBound(static_cast<uLong>(plain.size()));
  std::vector<std::uint8_t> out(8 + size);
  if (compress2(out.data() + 8, &size, plain.data(), static_cast<uLong>(plain.size()), level) != Z_OK)
    detail::fail("zlib compress2 failed");
  out.resize(8 + size);
  detail::set32(out.data(), kV2CompressedCookie);
  detail::set32(out.data() + 4, static_cast<std::uint32_t>(size));
  return out;
}

namespace detail {
namespace {  // internal linkage: not part of the library's interface

// zlib's inflate over one compressed payload, ended on every path.
class Inflater {
 public:
  explicit Inflater(std::span<const std::uint8_t> z) {
    if (inflateInit(&s_) != Z_OK) fail("zlib inflateInit failed");
    s_.next_in = const_cast<Bytef*>(z.data());
    s_.avail_in = static_cast<uInt>(z.size());
  }
  ~Inflater() { inflateEnd(&s_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  // Inflates into out until out.size() bytes in all are produced, the stream ends or zlib
  // cannot go on; the bytes produced so far.
  std::size_t fill(std::vector<std::uint8_t>& out) {
    while (s_.total_out < out.size() && status_ == Z_OK) {
      s_.next_out = out.data() + s_.total_out;
      s_.avail_out = static_cast<uInt>(out.size() - s_.total_out);
      status_ = inflate(&s_, Z_NO_FLUSH);  // Z_BUF_ERROR: no progress possible (input ended)
    }
    return s_.total_out;
  }
  bool ended() const { return status_ == Z_STREAM_END; }
  bool failed() const { return status_ != Z_OK && status_ != Z_STREAM_END; }

 private:
  z_stream s_{};
  int status_ = Z_OK;
};

std::uint32_t be32(const std::uint8_t* at) {
  return static_cast<std::uint32_t>(at[0]) << 24 | static_cast<std::uint32_t>(at[1]) << 16 |
         static_cast<std::uint32_t>(at[2]) << 8 | static_cast<std::uint32_t>(at[3]);
}

}  // namespace
}  // namespace detail

// Reads either encoding into `out` (see Mapping above); on a throw, out is reset.
void decode(std::span<const std::uint8_t> bytes, LatencyHistogram& out) {
  out.reset();
  detail::Reader in(bytes);
  const std::uint32_t cookie = in.u32();
  if ((cookie & ~0xf0u) == (kV2CompressedCookie & ~0xf0u)) {
    const std::uint32_t length = in.u32();
    if (in.left() < length) detail::fail("truncated compressed payload");
    detail::Inflater z(in.rest().first(length));
    // First the inner header: it announces the payload's length and its layout's largest one.
    std::vector<std::uint8_t> plain(kV2HeaderBytes);
    const std::size_t header_bytes = z.fill(plain);
    if (header_bytes < kV2HeaderBytes) {
      if (!z.ended()) detail::fail("zlib could not inflate the payload (corrupt or truncated)");
      plain.resize(header_bytes);
      decode(plain, out);  // names what is missing
      return;
    }
    if ((detail::be32(plain.data()) & ~0xf0u) == (kV2CompressedCookie & ~0xf0u))
      detail::fail("nested compressed encoding");
    if ((detail::be32(plain.data()) & ~0xf0u) == (kV2Cookie & ~0xf0u)) {
      const std::uint64_t announced = detail::be32(plain.data() + 4);
      std::int64_t lowest = 0;
      for (std::size_t k = 0; k < 8; ++k)
        lowest = static_cast<std::int64_t>(static_cast<std::uint64_t>(lowest) << 8 | plain[16 + k]);
      const std::uint32_t digits = detail::be32(plain.data() + 12);
      if (digits > 5) detail::fail("numberOfSignificantValueDigits must be in [0, 5], got " + std::to_string(digits));
      const detail::Layout layout(lowest, static_cast<int>(digits));
      if (announced > layout.max_payload_bytes())
        detail::fail("the compressed payload's header announces " + std::to_string(announced) +
                     " bytes of counts, more than the " + std::to_string(layout.max_payload_bytes()) +
                     " the largest histogram of its layout takes (refused before inflating it)");
      // One byte more than announced: producing it shows the payload is longer than it says.
      plain.resize(kV2HeaderBytes + static_cast<std::size_t>(announced) + 1);
      const std::size_t produced = z.fill(plain);
      if (produced == plain.size())
        detail::fail("the compressed payload inflates past the " + std::to_string(announced + kV2HeaderBytes) +
                     " bytes its header announces (refused there)");
      if (!z.ended()) detail::fail("zlib could not inflate the payload (corrupt or truncated)");
      plain.resize(produced);
    }
    decode(plain, out);  // another cookie: decode names it
    return;
  }
  if ((cookie & ~0xf0u) != (kV2Cookie & ~0xf0u)) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", cookie);
    detail::fail(std::string("not an HdrHistogram V2 encoding (cookie ") + buf + ")");
  }
  const std::uint32_t payload = in.u32();
  const std::uint32_t normalizing = in.u32();
  const std::uint32_t digits = in.u32();
  const auto lowest = static_cast<std::int64_t>(in.u64());
  (void)in.u64();  // highestTrackableValue: values beyond it cannot occur in the counts
  const std::uint64_t ratio_bits = in.u64();
  double ratio = 0;
  std::memcpy(&ratio, &ratio_bits, sizeof ratio);
  if (normalizing != 0) detail::fail("a normalizing index offset is not supported");
  if (ratio != 1.0) detail::fail("a DoubleHistogram (conversion ratio != 1) is not supported");
  if (in.left() < payload) detail::fail("truncated counts payload");
  if (digits > 5) detail::fail("numberOfSignificantValueDigits must be in [0, 5], got " + std::to_string(digits));
  const detail::Layout layout(lowest, static_cast<int>(digits));
  const bool same = layout.unit_magnitude == 0 && layout.sub_bucket_half_count == LatencyHistogram::kSubBuckets;
  detail::Reader counts(in.rest().first(payload));
  LatencyHistogram::Parts parts;
  std::vector<std::uint64_t> by_index;  // only for another layout: our buckets
  std::uint64_t index = 0;
  std::int64_t first_lo = -1, last_hi = 0;
  std::uint64_t total = 0;
  while (counts.left() > 0) {
    const std::int64_t word = counts.zigzag();
    if (word < 0) {
      const std::uint64_t zeros = 0 - static_cast<std::uint64_t>(word);  // -INT64_MIN has no int64
      if (index > layout.counts_length() || zeros > layout.counts_length() - index)
        detail::fail("a run of empty buckets past the end of the 63-bit range");
      index += zeros;
      continue;
    }
    const auto c = static_cast<std::uint64_t>(word);
    const std::uint64_t i = index++;
    if (c == 0) continue;
    std::int64_t lo = 0, hi = 0;
    if (!layout.range(i, lo, hi)) detail::fail("counts past the end of the 63-bit range");
    if (first_lo < 0) first_lo = lo;
    last_hi = hi;
    const std::int64_t mid = lo + (hi - lo) / 2;
    total += c;
    parts.sum += static_cast<long double>(mid) * c;
    if (same) {
      parts.buckets.emplace_back(static_cast<std::size_t>(i), c);
    } else {
      const std::size_t ours = LatencyHistogram::bucket_index(mid);
      if (by_index.empty()) by_index.assign(LatencyHistogram::kBucketCount, 0);
      // Several of its buckets can fall into one of ours; what lands there must still fit a V2
      // word, or what decodes could not be written back (encode_v2 refuses it).
      if (by_index[ours] > static_cast<std::uint64_t>(INT64_MAX) - c)
        detail::fail("counts that fall into kairos's bucket " + std::to_string(ours) +
                     " add up to more than the 2^63 - 1 a V2 word can carry");
      by_index[ours] += c;
    }
  }
  for (std::size_t k = 0; k < by_index.size(); ++k)
    if (by_index[k]) parts.buckets.emplace_back(k, by_index[k]);
  if (total > 0) {
    // min and max stay in the lowest / highest non-empty bucket of our layout.
    std::size_t lo_bucket = LatencyHistogram::kBucketCount, hi_bucket = 0;
    for (const auto& [k, c] : parts.buckets) lo_bucket = std::min(lo_bucket, k), hi_bucket = std::max(hi_bucket, k);
    parts.min = static_cast<std::uint64_t>(std::clamp(first_lo, LatencyHistogram::lowest_equivalent(lo_bucket),
                                                      LatencyHistogram::highest_equivalent(lo_bucket)));
    parts.max = static_cast<std::uint64_t>(std::clamp(last_hi, LatencyHistogram::lowest_equivalent(hi_bucket),
                                                      LatencyHistogram::highest_equivalent(hi_bucket)));
    parts.sum = std::clamp(parts.sum, static_cast<long double>(parts.min) * total,
                           static_cast<long double>(parts.max) * total);
  }
  out.assign(parts);
}

LatencyHistogram decode(std::span<const std::uint8_t> bytes) {
  LatencyHistogram h;
  decode(bytes, h);
  return h;
}

// Standard base64 (RFC 4648, with padding), as HdrHistogram's logs use it.
std::string base64_encode(std::span<const std::uint8_t> bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = bytes[i] << 16 | bytes[i + 1] << 8 | bytes[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    std::uint32_t v = bytes[i] << 16;
    if (i + 1 < bytes.size()) v |= bytes[i + 1] << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::vector<std::uint8_t> base64_decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  if (text.size() % 4 != 0) detail::fail("base64 text length is not a multiple of 4");
  std::vector<std::uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad) detail::fail("base64 padding in the middle");
      v[k] = value(c);
      if (v[k] < 0) detail::fail(std::string("bad base64 character '") + c + "'");
    }
    const std::uint32_t w = static_cast<std::uint32_t>(v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3]);
    out.push_back(static_cast<std::uint8_t>(w >> 16));
    if (pad < 2) out.push_back(static_cast<std::uint8_t>(w >> 8));
    if (pad < 1) out.push_back(static_cast<std::uint8_t>(w));
  }
  return out;
}

// base64 of the V2 compressed encoding: the form of an .hlog line and of kairos-lat's records.
std::string to_base64(const LatencyHistogram& h) { return base64_encode(encode_v2_compressed(h)); }
void from_base64(std::string_view text, LatencyHistogram& out) {
  out.reset();
  decode(base64_decode(text), out);
}
LatencyHistogram from_base64(std::string_view text) {
  LatencyHistogram h;
  from_base64(text, h);
  return h;
}

// ---- interval logs (.hlog, "Histogram log format version 1.3") ------------------------------

HlogWriter::HlogWriter(std::ostream& out, double start_time_s, double max_unit_ratio)
    : out_(out), ratio_(max_unit_ratio) {
  start(start_time_s);
}

HlogWriter::HlogWriter(std::ostream& out, StartLater, double max_unit_ratio) : out_(out), ratio_(max_unit_ratio) {}

void HlogWriter::start(double start_time_s) {
  if (started_) throw std::logic_error("kairos::hdr::HlogWriter: start() on a log that has its header");
  started_ = true;
  char buf[160];
  std::snprintf(buf, sizeof buf, "#[StartTime: %.3f (seconds since epoch)]\n#[BaseTime: %.3f (seconds since epoch)]\n",
                start_time_s, start_time_s);
  out_ << "#[Histogram log format version 1.3]\n" << buf;
  out_ << "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";
}

void HlogWriter::comment(std::string_view text) {
  if (!started_) throw std::logic_error("kairos::hdr::HlogWriter: comment() before start()");
  out_ << "#" << text << "\n";
}

void HlogWriter::write(const LatencyHistogram& h, double start_s, double length_s, std::string_view tag) {
  if (!started_) throw std::logic_error("kairos::hdr::HlogWriter: write() before start()");
  if (tag.find_first_of(", \r\n") != std::string_view::npos)
    detail::fail("an hlog tag may not contain ',', spaces or newlines");
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.3f,%.3f,%.3f,", start_s, length_s, static_cast<double>(h.max()) / ratio_);
  if (!tag.empty()) out_ << "Tag=" << tag << ',';
  out_ << buf << to_base64(h) << '\n';
  out_.flush();
}

double HlogWriter::now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Reads an interval log written by HlogWriter or by any HdrHistogram implementation. Throws
// std::invalid_argument naming the line for a line that is neither a comment, the column header,
// nor an interval.
Hlog read_hlog(std::istream& in) {
  Hlog log;
  std::string line;
  std::size_t number = 0;
  // "#[StartTime: 1700000000.123 (seconds since epoch), ...]": a finite number of seconds, >= 0.
  auto header_value = [&](const std::string& l, std::string_view key, double& v) {
    if (l.rfind(key, 0) != 0) return false;
    char* end = nullptr;
    v = std::strtod(l.c_str() + key.size(), &end);
    if (end == l.c_str() + key.size() || !std::isfinite(v) || v < 0 || (*end != ' ' && *end != ']'))
      detail::fail("hlog line " + std::to_string(number) + ": " + std::string(key.substr(2, key.size() - 4)) +
                   " is not a number of seconds: " + l);
    return true;
  };
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (header_value(line, "#[StartTime: ", log.start_time_s) || header_value(line, "#[BaseTime: ", log.base_time_s))
      continue;
    if (line[0] == '#' || line.rfind("\"StartTimestamp\"", 0) == 0 || line.rfind("StartTimestamp", 0) == 0) continue;
    auto bad = [&](const std::string& why) {
      detail::fail("hlog line " + std::to_string(number) + ": " + why);
    };
    HlogInterval iv;
    std::string_view rest = line;
    if (rest.rfind("Tag=", 0) == 0) {
      const std::size_t comma = rest.find(',');
      if (comma == std::string_view::npos) bad("a tag without fields");
      iv.tag = std::string(rest.substr(4, comma - 4));
      rest.remove_prefix(comma + 1);
    }
    std::string_view fields[4];
    for (int k = 0; k < 3; ++k) {
      const std::size_t comma = rest.find(',');
      if (comma == std::string_view::npos) bad("expected 4 comma-separated fields");
      fields[k] = rest.substr(0, comma);
      rest.remove_prefix(comma + 1);
    }
    fields[3] = rest;
    auto number_of = [&](std::string_view f, const char* what) {
      const std::string s(f);
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) bad(std::string(what) + " is not a number");
      return v;
    };
    iv.start_s = number_of(fields[0], "StartTimestamp");
    iv.length_s = number_of(fields[1], "Interval_Length");
    if (iv.length_s < 0) bad("Interval_Length is negative");
    (void)number_of(fields[2], "Interval_Max");
    try {
      from_base64(fields[3], iv.histogram);
    } catch (const std::invalid_argument& e) {
      bad(e.what());
    }
    log.intervals.push_back(std::move(iv));
  }
  return log;
}

// ---- percentile distribution (.hgrm) -------------------------------------------------------

// HdrHistogram's outputPercentileDistribution text: columns Value (ns / value_unit_ratio, so
// microseconds by default), Percentile (a fraction), TotalCount and 1/(1-Percentile); percentile
// steps halve the distance to 100% every ticks_per_half_distance lines; then the #[Mean ...],
// #[Max ...] and #[Buckets ...] footer. HdrHistogram's plotter reads it.
void write_hgrm(std::ostream& out, const LatencyHistogram& h, double value_unit_ratio,
                unsigned ticks_per_half_distance) {
  if (!(value_unit_ratio > 0)) detail::fail("value_unit_ratio must be > 0");
  if (ticks_per_half_distance == 0) detail::fail("ticks_per_half_distance must be > 0");
  char buf[160];
  std::snprintf(buf, sizeof buf, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
  out << buf;
  const std::uint64_t n = h.count();
  if (n > 0) {
    // The value at each reported percentile is the highest value of the bucket where the
    // cumulative count reaches it (HdrHistogram's convention), clamped to max().
    std::size_t index = 0;
    std::uint64_t cumulative = h.count_at_index(0);
    auto bucket_for = [&](std::uint64_t rank) {
      while (cumulative < rank && index + 1 < LatencyHistogram::kBucketCount) cumulative += h.count_at_index(++index);
    };
    double p = 0;
    while (true) {
      const std::uint64_t rank =
          std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(p / 100.0 * n - 1e-9)));
      bucket_for(rank);
      const double value =
          static_cast<double>(std::min(LatencyHistogram::highest_equivalent(index), h.max())) / value_unit_ratio;
      if (cumulative >= n) {
        std::snprintf(buf, sizeof buf, "%12.3f %1.12f %10llu\n", value, 1.0, static_cast<unsigned long long>(n));
        out << buf;
        break;
      }
      std::snprintf(buf, sizeof buf, "%12.3f %1.12f %10llu %14.2f\n", value, p / 100.0,
                    static_cast<unsigned long long>(cumulative), 1.0 / (1.0 - p / 100.0));
      out << buf;
      // Next level: the step halves each time the distance to 100% halves.
      const double half_distances = std::floor(std::log2(100.0 / (100.0 - p))) + 1;
      const double step = 100.0 / (ticks_per_half_distance * std::pow(2.0, half_distances));
      p += step;
      if (p >= 100.0 || step < 1e-12) p = 100.0;
    }
  }
  std::snprintf(buf, sizeof buf, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", h.mean() / value_unit_ratio,
                h.stddev() / value_unit_ratio);
  out << buf;
  std::snprintf(buf, sizeof buf, "#[Max     = %12.3f, Total count    = %12llu]\n",
                static_cast<double>(h.max()) / value_unit_ratio, static_cast<unsigned long long>(n));
  out << buf;
  std::snprintf(buf, sizeof buf, "#[Buckets = %12zu, SubBuckets     = %12zu]\n",
                LatencyHistogram::kBucketCount / LatencyHistogram::kSubBuckets, 2 * LatencyHistogram::kSubBuckets);
  out << buf;
}

}  // namespace kairos::hdr
