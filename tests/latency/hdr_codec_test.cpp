// hdr_codec_test.cpp: kairos/hdr_codec.hpp: the V2 encoding against vectors written by
// HdrHistogram Java 2.1.11, round trips in-process (plain, compressed, base64, .hlog), .hgrm
// text, histograms from stats(), bad input, and a cross-check with HdrHistogram Java at test time
// (HdrCrossCheck.java; skipped when no JDK or no hdrhistogram.jar is installed); hostile input to
// the decoder, the .hlog reader and the histogram JSON reader (tools/hdr/json_input.hpp's bounds).
#include <kairos/hdr_codec.hpp>
#include <kairos/kairos.hpp>

#include <gtest/gtest.h>

#include <histogram_json.hpp>
#include <json_input.hpp>

#include "scratch_dir.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>
#include <zlib.h>  // the hostile payloads below are deflated here, apart from the codec

namespace {

using kairos::LatencyHistogram;
namespace hdr = kairos::hdr;

std::string hex(const std::vector<std::uint8_t>& b) {
  std::string s;
  char buf[4];
  for (std::uint8_t x : b) std::snprintf(buf, sizeof buf, "%02x", x), s += buf;
  return s;
}

bool same_buckets(const LatencyHistogram& a, const LatencyHistogram& b) {
  for (std::size_t i = 0; i < LatencyHistogram::kBucketCount; ++i)
    if (a.count_at_index(i) != b.count_at_index(i)) return false;
  return a.count() == b.count();
}

// Written by HdrHistogram Java 2.1.11 (Debian libhdrhistogram-java): Histogram(1, Long.MAX_VALUE, 2)
// holding 1, 300, 300, 1000000: encodeIntoByteBuffer (hex) and encodeIntoCompressedByteBuffer (base64).
constexpr const char* kJavaPlainHex =
    "1c84931300000008000000000000000200000000000000017fffffffffffffff3ff00000000000000002a70404b91702";
constexpr const char* kJavaCompressed = "HISTFAAAACR4nJNpmSzMwMDAwQABTFCasf4/BNh/gMksZ2HZKc4EAOzjC3w=";
constexpr const char* kJavaEmptyPlainHex =
    "1c84931300000000000000000000000200000000000000017fffffffffffffff3ff0000000000000";
// Histogram(1000, 3600000000000, 3) holding 5000, 5000, 123456, 2000000000 (another layout).
constexpr const char* kJavaThreeDigits = "HISTFAAAACp4nJNpmSzMwMDAyQABzFDqBRC7GexYwGD/ASIiyHKWmanxFCMTAJjzB3M=";

TEST(HdrCodec, PlainEncodingMatchesHdrHistogramJavaByteForByte) {
  LatencyHistogram h;
  for (std::int64_t v : {1, 300, 300, 1'000'000}) h.record(v);
  EXPECT_EQ(hex(hdr::encode_v2(h)), kJavaPlainHex);
  EXPECT_EQ(hex(hdr::encode_v2(LatencyHistogram{})), kJavaEmptyPlainHex);
}

TEST(HdrCodec, DecodesWhatHdrHistogramJavaWrote) {
  const LatencyHistogram h = hdr::from_base64(kJavaCompressed);
  LatencyHistogram expected;
  for (std::int64_t v : {1, 300, 300, 1'000'000}) expected.record(v);
  EXPECT_TRUE(same_buckets(h, expected));
  EXPECT_EQ(h.count(), 4u);
  EXPECT_EQ(h.min(), 1);
  EXPECT_EQ(h.max(), LatencyHistogram::highest_equivalent(LatencyHistogram::bucket_index(1'000'000)));

  // Another layout: each of its buckets lands in ours at its middle value.
  const LatencyHistogram three = hdr::from_base64(kJavaThreeDigits);
  EXPECT_EQ(three.count(), 4u);
  EXPECT_GE(three.value_at_percentile(50), 4608);  // Java's bucket of 5000 is [4608, 5119]
  EXPECT_LE(three.value_at_percentile(50), 5119 + 5119 / 128);
  EXPECT_NEAR(static_cast<double>(three.max()), 2e9, 2e9 / 100);
}

TEST(HdrCodec, RoundTripsInProcess) {
  std::mt19937_64 rng(21);
  std::lognormal_distribution<double> d(9.0, 2.5);
  for (int trial = 0; trial < 20; ++trial) {
    auto h = std::make_unique<LatencyHistogram>();
    const int n = trial == 0 ? 0 : 1 + static_cast<int>(rng() % 20'000);
    for (int i = 0; i < n; ++i) h->record(static_cast<std::int64_t>(std::min(d(rng), 9e18)));
    if (trial == 1) h->record(LatencyHistogram::kMaxValue, 3);
    if (trial == 2) h->record(0, 1'000'000'000'000ull);  // a count that needs a long varint
    for (const auto& bytes : {hdr::encode_v2(*h), hdr::encode_v2_compressed(*h)}) {
      const LatencyHistogram back = hdr::decode(bytes);
      EXPECT_TRUE(same_buckets(back, *h)) << trial;
      for (double p : {50.0, 99.0, 99.9}) EXPECT_EQ(back.value_at_percentile(p), h->value_at_percentile(p)) << p;
      EXPECT_EQ(hdr::encode_v2(back), hdr::encode_v2(*h));
    }
    EXPECT_TRUE(same_buckets(hdr::from_base64(hdr::to_base64(*h)), *h));
  }
}

TEST(HdrCodec, NegativeSamplesAreLeftOut) {
  LatencyHistogram h;
  h.record(-10);
  h.record(500);
  const LatencyHistogram back = hdr::from_base64(hdr::to_base64(h));
  EXPECT_EQ(back.count(), 1u);
  EXPECT_EQ(back.below_zero(), 0u);
}

TEST(HdrCodec, Base64KnownVectorsAndErrors) {
  const std::vector<std::uint8_t> bytes = {'f', 'o', 'o', 'b', 'a', 'r'};
  EXPECT_EQ(hdr::base64_encode(std::span(bytes).first(0)), "");
  EXPECT_EQ(hdr::base64_encode(std::span(bytes).first(1)), "Zg==");
  EXPECT_EQ(hdr::base64_encode(std::span(bytes).first(2)), "Zm8=");
  EXPECT_EQ(hdr::base64_encode(bytes), "Zm9vYmFy");
  EXPECT_EQ(hdr::base64_decode("Zm9vYg=="), std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 4));
  for (const char* bad : {"Zm9", "Zm9v!mFy", "Zg==Zg==", "=Zg="})
    EXPECT_THROW(hdr::base64_decode(bad), std::invalid_argument) << bad;
}

TEST(HdrCodec, RejectsWhatIsNotAnEncoding) {
  LatencyHistogram h;
  h.record(1234);
  std::vector<std::uint8_t> plain = hdr::encode_v2(h), packed = hdr::encode_v2_compressed(h);
  for (std::size_t n = 0; n < plain.size(); ++n)
    EXPECT_THROW(hdr::decode(std::span(plain).first(n)), std::invalid_argument) << n;
  for (std::size_t n = 0; n < packed.size(); ++n)
    EXPECT_THROW(hdr::decode(std::span(packed).first(n)), std::invalid_argument) << n;
  std::vector<std::uint8_t> cookie = plain;
  cookie[3] = 0x11;  // V1's cookie base
  EXPECT_THROW(hdr::decode(cookie), std::invalid_argument);
  std::vector<std::uint8_t> corrupt = packed;
  corrupt[10] ^= 0xff;
  EXPECT_THROW(hdr::decode(corrupt), std::invalid_argument);
  LatencyHistogram target;
  target.record(5);
  EXPECT_THROW(hdr::decode(cookie, target), std::invalid_argument);
  EXPECT_TRUE(target.empty());
}

TEST(HdrCodec, IntervalLogRoundTripsWithTags) {
  std::stringstream log;
  hdr::HlogWriter writer(log, 1'700'000'000.0);
  std::vector<LatencyHistogram> written(3);
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i <= k * 100; ++i) written[k].record(1000 + 37 * i);
    writer.write(written[k], k * 1.0, 1.0, k == 2 ? "order-send" : "");
  }
  EXPECT_THROW(writer.write(written[0], 0, 1, "a,b"), std::invalid_argument);
  const std::string text = log.str();
  EXPECT_EQ(text.rfind("#[Histogram log format version 1.3]\n#[StartTime: 1700000000.000", 0), 0u) << text;
  EXPECT_NE(text.find("\nTag=order-send,2.000,1.000,"), std::string::npos) << text;
  std::istringstream in(text);
  const hdr::Hlog back = hdr::read_hlog(in);
  EXPECT_DOUBLE_EQ(back.start_time_s, 1'700'000'000.0);
  ASSERT_EQ(back.intervals.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_TRUE(same_buckets(back.intervals[k].histogram, written[k])) << k;
    EXPECT_DOUBLE_EQ(back.intervals[k].start_s, k * 1.0);
  }
  EXPECT_EQ(back.intervals[2].tag, "order-send");
  EXPECT_EQ(back.intervals[0].tag, "");
  for (const char* bad : {"1.0,2.0\n", "x,1.0,2.0,HISTFAAA\n", "0.0,1.0,0.1,notbase64!\n"}) {
    std::istringstream b(bad);
    EXPECT_THROW(hdr::read_hlog(b), std::invalid_argument) << bad;
  }
}

TEST(HdrCodec, PercentileDistributionText) {
  LatencyHistogram h;
  for (int i = 1; i <= 1000; ++i) h.record(i * 1000);  // 1 us .. 1 ms
  std::ostringstream out;
  hdr::write_hgrm(out, h);
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("       Value     Percentile TotalCount 1/(1-Percentile)\n\n", 0), 0u) << text;
  // Each line: the highest value of the bucket where the cumulative count reaches the percentile.
  auto line = [&](std::int64_t value, double fraction, int cumulative) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%12.3f %1.12f %10d %14.2f\n",
                  LatencyHistogram::highest_equivalent(LatencyHistogram::bucket_index(value)) / 1000.0, fraction,
                  cumulative, 1 / (1 - fraction));
    return std::string(buf);
  };
  EXPECT_NE(text.find(line(1000, 0.0, 1)), std::string::npos) << line(1000, 0.0, 1) << text;
  EXPECT_NE(text.find(line(500'000, 0.5, 501)), std::string::npos) << line(500'000, 0.5, 501) << text;  // 500..503 us share a bucket
  // The last line is 100% with every sample, at max.
  EXPECT_NE(text.find("1000.000 1.000000000000       1000\n#[Mean"), std::string::npos) << text;
  char footer[200];
  std::snprintf(footer, sizeof footer, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n#[Max     = %12.3f, Total count    = %12d]\n",
                h.mean() / 1000, h.stddev() / 1000, 1000.0, 1000);
  EXPECT_NE(text.find(footer), std::string::npos) << text;
  // Percentile steps shrink as they near 100%: 10% apart below 50%, 5% up to 75%, ... so far more
  // than 5 lines fall between 99% and 100%.
  EXPECT_NE(text.find(" 0.550000000000 "), std::string::npos) << text;
  int above_99 = 0;
  for (std::size_t at = text.find(" 0.99"); at != std::string::npos; at = text.find(" 0.99", at + 1)) ++above_99;
  EXPECT_GT(above_99, 5) << text;
}

TEST(HdrCodec, StatsLatenessEncodes) {
  kairos::Scheduler s;
  std::vector<kairos::ScheduledFuture<void>> fs;
  for (int i = 0; i < 50; ++i) fs.push_back(s.schedule([] {}, std::chrono::microseconds(100 + i)));
  for (auto& f : fs) f.get();
  ASSERT_TRUE(s.wait_idle(std::chrono::seconds(20)));  // lateness is recorded after a run completes its future
  const LatencyHistogram lateness = s.stats().total().lateness;
  ASSERT_EQ(lateness.count() + lateness.below_zero(), 50u);
  EXPECT_TRUE(same_buckets(hdr::from_base64(hdr::to_base64(lateness)), lateness));
}

// ---- across to HdrHistogram Java -----------------------------------------------------------

struct Java {
  std::filesystem::path dir;
  std::string classpath;
  std::string why_not;  // empty when usable
};

Java& java() {
  static Java j = [] {
    Java r;
    std::string jar;
    for (const char* p : {"/usr/share/java/hdrhistogram.jar", "/usr/share/java/HdrHistogram.jar"})
      if (std::filesystem::exists(p)) jar = p;
    if (jar.empty()) {
      r.why_not = "no hdrhistogram.jar (apt-get install libhdrhistogram-java)";
      return r;
    }
    if (std::system("javac -version > /dev/null 2>&1") != 0 || std::system("java -version > /dev/null 2>&1") != 0) {
      r.why_not = "no JDK (javac, java)";
      return r;
    }
    static const kairos_test::ScratchDir scratch("kairos-hdr-java-");  // removed at exit
    r.dir = scratch.path();
    const std::string cmd = "javac -cp " + jar + " -d " + r.dir.string() + " " + KAIROS_HDR_JAVA_SOURCE + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      r.why_not = "javac could not compile HdrCrossCheck.java";
      return r;
    }
    r.classpath = jar + ":" + r.dir.string();
    return r;
  }();
  return j;
}

std::string run_java(const std::string& args) {
  const std::string cmd = "java -cp " + java().classpath + " HdrCrossCheck " + args;
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    EXPECT_EQ(::pclose(p), 0) << cmd;
  }
  return out;
}

std::string figures(const LatencyHistogram& h) {
  // What HdrCrossCheck prints: count min max mean p50 p99 p99.9, with HdrHistogram's conventions
  // (values at the highest value of their bucket).
  auto at = [&](double p) {
    const auto v = h.value_at_percentile(p);
    return LatencyHistogram::highest_equivalent(LatencyHistogram::bucket_index(v));
  };
  double mean = 0;
  for (std::size_t i = 0; i < LatencyHistogram::kBucketCount; ++i) {
    const auto lo = LatencyHistogram::lowest_equivalent(i), hi = LatencyHistogram::highest_equivalent(i);
    mean += static_cast<double>(h.count_at_index(i)) * static_cast<double>(lo + (hi - lo + 1) / 2);
  }
  mean /= static_cast<double>(h.count());
  char buf[256];
  std::snprintf(buf, sizeof buf, "%llu %lld %lld %.3f %lld %lld %lld\n", static_cast<unsigned long long>(h.count()),
                static_cast<long long>(LatencyHistogram::lowest_equivalent(LatencyHistogram::bucket_index(h.min()))),
                static_cast<long long>(LatencyHistogram::highest_equivalent(LatencyHistogram::bucket_index(h.max()))),
                mean, static_cast<long long>(at(50)), static_cast<long long>(at(99)), static_cast<long long>(at(99.9)));
  return buf;
}

TEST(HdrCodecJava, JavaReadsKairosEncodingAndLogAndKairosReadsJava) {
  if (!java().why_not.empty()) GTEST_SKIP() << "HdrHistogram Java cross-check skipped: " << java().why_not;
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> d(8.0, 1.5);
  std::vector<LatencyHistogram> parts(3);
  LatencyHistogram all;
  std::string values;
  for (auto& h : parts)
    for (int i = 0; i < 2000; ++i) {
      const auto v = static_cast<std::int64_t>(d(rng));
      h.record(v);
      all.record(v);
    }
  // One histogram, V2 compressed base64, decoded by Java.
  EXPECT_EQ(run_java("decode " + hdr::to_base64(parts[0])), figures(parts[0]));
  // An interval log read by HistogramLogReader: every interval, their sum and the tag.
  const auto path = java().dir / "kairos.hlog";
  {
    std::ofstream f(path);
    hdr::HlogWriter w(f);
    for (std::size_t k = 0; k < parts.size(); ++k) w.write(parts[k], static_cast<double>(k), 1.0, k == 1 ? "order-send" : "");
  }
  EXPECT_EQ(run_java("log " + path.string()), figures(all) + "3 order-send\n");
  // Java's encoding of values, read here.
  std::string args;
  LatencyHistogram small;
  for (int i = 0; i < 200; ++i) {
    const auto v = static_cast<std::int64_t>(d(rng));
    small.record(v);
    args += " " + std::to_string(v);
  }
  std::string b64 = run_java("encode" + args);
  while (!b64.empty() && b64.back() == '\n') b64.pop_back();
  EXPECT_TRUE(same_buckets(hdr::from_base64(b64), small));
  std::string plain = run_java("plain" + args);
  EXPECT_EQ(plain, hex(hdr::encode_v2(small)) + "\n");
}

}  // namespace

// ---- hostile input: refused with a reason, no undefined behaviour, bounded memory -----------

namespace hostile {

// The V2 form's words, written here apart from the codec's own writer: big-endian 32 and 64 bits,
// and ZigZag LEB128 in at most 9 bytes (the 9th byte carries 8 bits).
void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(v >> s));
}
void put64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(v >> s));
}
void set32(std::uint8_t* at, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) at[k] = static_cast<std::uint8_t>(v >> (24 - 8 * k));
}
void put_zigzag(std::vector<std::uint8_t>& out, std::int64_t value) {
  std::uint64_t v = (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
  for (int k = 0; k < 8 && v >= 0x80; ++k, v >>= 7) out.push_back(static_cast<std::uint8_t>((v & 0x7f) | 0x80));
  out.push_back(static_cast<std::uint8_t>(v));
}

std::vector<std::uint8_t> v2_header(std::uint32_t payload, std::uint32_t digits) {
  std::vector<std::uint8_t> b;
  for (std::uint32_t w : {hdr::kV2Cookie, payload, 0u, digits}) put32(b, w);
  put64(b, 1);                      // lowest
  put64(b, 0x7fffffffffffffffULL);  // highest
  put64(b, 0x3ff0000000000000ULL);  // ratio 1.0
  return b;
}

std::vector<std::uint8_t> compressed(const std::vector<std::uint8_t>& plain) {
  uLongf size = compressBound(static_cast<uLong>(plain.size()));
  std::vector<std::uint8_t> out(8 + size);
  EXPECT_EQ(compress2(out.data() + 8, &size, plain.data(), static_cast<uLong>(plain.size()), 9), Z_OK);
  out.resize(8 + size);
  set32(out.data(), hdr::kV2CompressedCookie);
  set32(out.data() + 4, static_cast<std::uint32_t>(size));
  return out;
}

std::string error_of(std::span<const std::uint8_t> bytes) {
  try {
    hdr::decode(bytes);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace hostile

// A run of -INT64_MIN empty buckets: negating the word, and then the bucket number of an index
// past 2^63 (INT64_MIN - 1 with 0 significant digits), were undefined behaviour.
TEST(HdrCodecHostile, RunOfEmptyBucketsPastTheRangeIsRefusedWithoutOverflow) {
  for (std::uint32_t digits : {0u, 2u}) {
    std::vector<std::uint8_t> counts;
    hostile::put_zigzag(counts, INT64_MIN);  // a run of 2^63 empty buckets
    hostile::put_zigzag(counts, 1);          // then one count
    std::vector<std::uint8_t> bytes = hostile::v2_header(static_cast<std::uint32_t>(counts.size()), digits);
    bytes.insert(bytes.end(), counts.begin(), counts.end());
    EXPECT_NE(hostile::error_of(bytes).find("run of empty buckets past the end"), std::string::npos)
        << digits << ": " << hostile::error_of(bytes);
  }
}

// Counts of another layout that fall into one of kairos's buckets were added up past 2^63 - 1;
// encode_v2 then wrote 2^63 - 1 for that bucket, so what decoded did not encode to itself.
// (Found by hdr_decoder_fuzz.) Now the decoder refuses the sum, and the encoder a bucket it
// cannot carry, each naming it.
TEST(HdrCodecHostile, CountsAddingUpPastAV2WordAreRefusedNotClamped) {
  // 3 significant digits: values 2048 and 2050 (indexes 2048 and 2049) are two buckets there and
  // one of kairos's (16 ns wide at 2048).
  ASSERT_EQ(LatencyHistogram::bucket_index(2048), LatencyHistogram::bucket_index(2050));
  std::vector<std::uint8_t> counts;
  hostile::put_zigzag(counts, -2048);  // indexes 0 .. 2047 empty
  hostile::put_zigzag(counts, std::int64_t{1} << 62);
  hostile::put_zigzag(counts, std::int64_t{1} << 62);  // together 2^63
  std::vector<std::uint8_t> bytes = hostile::v2_header(static_cast<std::uint32_t>(counts.size()), 3);
  bytes.insert(bytes.end(), counts.begin(), counts.end());
  EXPECT_NE(hostile::error_of(bytes).find("add up to more than the 2^63 - 1 a V2 word can carry"), std::string::npos)
      << hostile::error_of(bytes);
  // One less fits, and round-trips.
  bytes.resize(bytes.size() - 9);
  hostile::put_zigzag(bytes, (std::int64_t{1} << 62) - 1);
  hostile::set32(bytes.data() + 4, static_cast<std::uint32_t>(bytes.size() - hdr::kV2HeaderBytes));
  const LatencyHistogram h = hdr::decode(bytes);
  EXPECT_EQ(h.count_at_index(LatencyHistogram::bucket_index(2048)), static_cast<std::uint64_t>(INT64_MAX));
  EXPECT_TRUE(same_buckets(hdr::decode(hdr::encode_v2_compressed(h)), h));
  // A bucket past 2^63 - 1 (assign() allows up to 2^64 - 1) is refused by the encoder.
  LatencyHistogram big;
  LatencyHistogram::Parts parts;
  parts.buckets = {{LatencyHistogram::bucket_index(2048), std::uint64_t{1} << 63}};
  parts.min = 2048;
  parts.max = 2048;
  parts.sum = 2048.0L * static_cast<long double>(std::uint64_t{1} << 63);
  big.assign(parts);
  try {
    (void)hdr::encode_v2(big);
    ADD_FAILURE() << "encode_v2 accepted a bucket of 2^63 samples";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("more than the 2^63 - 1 a V2 word can carry"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)hdr::encode_v2_compressed(big), std::invalid_argument);
}

// A zlib bomb: 8 MiB of zeros behind a header that announces 2 bytes of counts was inflated
// whole (up to 512 MiB) and then accepted or refused as "corrupt or truncated".
TEST(HdrCodecHostile, ZlibBombIsRefusedAtTheAnnouncedLengthWithTheReason) {
  std::vector<std::uint8_t> plain = hostile::v2_header(2, 2);
  plain.resize(plain.size() + (8u << 20), 0);
  plain[hdr::kV2HeaderBytes] = 2;  // one count of 1 at index 0, then zeros
  EXPECT_NE(hostile::error_of(hostile::compressed(plain)).find("inflates past the 42 bytes its header announces"),
            std::string::npos)
      << hostile::error_of(hostile::compressed(plain));
  // A header that announces more than any histogram of its layout can hold is refused before
  // anything else is inflated.
  std::vector<std::uint8_t> huge = hostile::v2_header(0xffffffffu, 2);
  huge.resize(huge.size() + 1024, 0);
  EXPECT_NE(hostile::error_of(hostile::compressed(huge)).find("more than the 65664 the largest histogram"),
            std::string::npos)
      << hostile::error_of(hostile::compressed(huge));
  // What kairos writes still decodes: its payload is exactly as long as announced.
  LatencyHistogram h;
  for (std::int64_t v = 1; v < (std::int64_t{1} << 62); v = v * 3 + 1) h.record(v);
  EXPECT_TRUE(same_buckets(hdr::decode(hdr::encode_v2_compressed(h)), h));
}

// A log made with start_later writes its header at start(): StartTime and BaseTime both that
// moment. Nothing may be written before it, and a log has one header.
TEST(HdrLog, StartLaterWritesTheHeaderAtStart) {
  std::ostringstream text;
  hdr::HlogWriter log(text, hdr::start_later);
  EXPECT_FALSE(log.started());
  EXPECT_EQ(text.str(), "");
  LatencyHistogram h;
  h.record(1000);
  EXPECT_THROW(log.write(h, 0, 1), std::logic_error);
  EXPECT_THROW(log.comment("early"), std::logic_error);
  log.start(1'700'000'000.25);
  EXPECT_TRUE(log.started());
  EXPECT_THROW(log.start(1'700'000'001.0), std::logic_error);
  log.write(h, 0.5, 1);
  std::istringstream in(text.str());
  const hdr::Hlog back = hdr::read_hlog(in);
  EXPECT_DOUBLE_EQ(back.start_time_s, 1'700'000'000.25);
  EXPECT_DOUBLE_EQ(back.base_time_s, 1'700'000'000.25);
  ASSERT_EQ(back.intervals.size(), 1u);
  EXPECT_EQ(back.intervals[0].histogram.count(), 1u);
}

TEST(HdrCodecHostile, HlogNegativeIntervalLengthAndUnparsableStartTimeAreRefused) {
  for (const char* bad : {"#[StartTime: soon (seconds since epoch)]\n", "#[StartTime: ]\n",
                          "#[BaseTime: 12abc (seconds since epoch)]\n", "#[StartTime: nan (seconds since epoch)]\n",
                          "0.000,-1.000,0.001,HISTFAAAACR4nJNpmSzMwMDAwQABTFCasf4/BNh/gMksZ2HZKc4EAOzjC3w=\n"}) {
    std::istringstream in(bad);
    EXPECT_THROW(hdr::read_hlog(in), std::invalid_argument) << bad;
  }
  std::istringstream good("#[StartTime: 1700000000.123 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]\n"
                          "#[BaseTime: 0.000 (seconds since epoch)]\n"
                          "0.000,1.000,0.001,HISTFAAAACR4nJNpmSzMwMDAwQABTFCasf4/BNh/gMksZ2HZKc4EAOzjC3w=\n");
  const hdr::Hlog log = hdr::read_hlog(good);
  EXPECT_DOUBLE_EQ(log.start_time_s, 1700000000.123);
  EXPECT_EQ(log.intervals.size(), 1u);
}

// One histogram JSON value nested 200,000 levels deep overflowed the stack; now the depth is
// checked before nlohmann parses (or copies, dumps or destroys) anything.
TEST(HdrJsonInput, DeeplyNestedHistogramJsonIsRefusedBeforeParsing) {
  const std::string deep = R"({"kind":"kairos.latency_histogram","version":1,"buckets":)" +
                           std::string(200'000, '[') + std::string(200'000, ']') + "}";
  try {
    kairos::tools::histogram_from_json_text(deep);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 64 levels"), std::string::npos) << e.what();
  }
  // Brackets inside strings do not count; 64 levels are read.
  EXPECT_NO_THROW(kairos::tools::check_json_bounds(R"({"a":"[[[[\"[[[[["})", 1));
  EXPECT_NO_THROW(kairos::tools::check_json_bounds(std::string(64, '[') + std::string(64, ']')));
  EXPECT_THROW(kairos::tools::check_json_bounds(std::string(65, '[') + std::string(65, ']')), std::invalid_argument);
  EXPECT_THROW(kairos::tools::check_json_bounds("[1]", 64, 2), std::invalid_argument);
  std::istringstream endless(std::string(3000, 'x'));
  EXPECT_THROW(kairos::tools::read_bounded(endless, 2048), std::invalid_argument);
}

// HdrHistogram Java's HistogramLogProcessor reads only untagged lines unless given -tag: on the
// tagged .hlog kairos writes (Pacer::hlog_intervals(log, "tag")) it reads nothing without it
// (its .hgrm holds no distribution and it dies with a NullPointerException, exit 0), and every
// interval with it. docs/latency-tools.md says so; this pins both halves.
TEST(HdrCodecJava, HistogramLogProcessorNeedsTagForATaggedKairosLog) {
  if (!java().why_not.empty()) GTEST_SKIP() << "HistogramLogProcessor check skipped: " << java().why_not;
  const std::filesystem::path dir = java().dir;
  const std::string log_path = (dir / "tagged.hlog").string();
  {
    std::ofstream file(log_path);
    hdr::HlogWriter log(file, 1'700'000'000.0);
    for (int k = 0; k < 3; ++k) {
      LatencyHistogram h;
      for (int i = 1; i <= 1000; ++i) h.record(1000 * i);
      log.write(h, k * 1.0, 1.0, "paced");
    }
  }
  const std::string jar = java().classpath.substr(0, java().classpath.find(':'));
  auto process = [&](const std::string& extra, const std::string& out) {
    const std::string cmd = "java -cp " + jar + " org.HdrHistogram.HistogramLogProcessor -i " + log_path + " -o " +
                            (dir / out).string() + " " + extra + " > " + (dir / (out + ".log")).string() + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(dir / (out + ".hgrm"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string with_tag = process("-tag paced", "with-tag");
  EXPECT_NE(with_tag.find("Total count    =         3000]"), std::string::npos) << with_tag;
  const std::string without = process("", "without-tag");
  EXPECT_EQ(without.find("Total count"), std::string::npos) << without;
}
