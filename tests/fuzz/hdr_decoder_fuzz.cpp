// hdr_decoder_fuzz.cpp: libFuzzer over kairos/hdr_codec.hpp's readers and the histogram JSON
// reader (tools/hdr/histogram_json.hpp). The first byte picks the reader, the rest is its input:
//   0: decode() of V2 bytes (plain or compressed)   2: read_hlog() of .hlog text
//   1: from_base64() of text                       3: histogram_from_json_text()
// Every reader either returns or throws std::invalid_argument. What decodes must encode and decode
// again to the same buckets (the decoder's output is a valid histogram of kairos's layout).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <sstream>
#include <string>

#include <kairos/hdr_codec.hpp>

#include <histogram_json.hpp>

namespace {

void check_round_trip(const kairos::LatencyHistogram& h) {
  const kairos::LatencyHistogram back = kairos::hdr::decode(kairos::hdr::encode_v2_compressed(h));
  for (std::size_t i = 0; i < kairos::LatencyHistogram::kBucketCount; ++i)
    if (back.count_at_index(i) != h.count_at_index(i)) std::abort();
  if (back.count() != h.count()) std::abort();
  if (!h.empty()) (void)h.value_at_percentile(99.9);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace hdr = kairos::hdr;
  if (size == 0) return 0;
  const std::span<const std::uint8_t> bytes(data + 1, size - 1);
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 4) {
      case 0:
        check_round_trip(hdr::decode(bytes));
        break;
      case 1:
        check_round_trip(hdr::from_base64(text));
        break;
      case 2: {
        std::istringstream in(text);
        for (const hdr::HlogInterval& iv : hdr::read_hlog(in).intervals) check_round_trip(iv.histogram);
        break;
      }
      default:
        check_round_trip(kairos::tools::histogram_from_json_text(text));
        break;
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
