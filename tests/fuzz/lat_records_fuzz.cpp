// lat_records_fuzz.cpp: libFuzzer over what kairos-lat --from does with a file: records.hpp's
// reader, then the tables (text and Markdown), the W3/W4 series, the W3 pacing notes and the
// percentile-spectrum charts; or, for a histogram JSON, .hlog or .hgrm text, spectrum.hpp's
// readers and chart. Each step either succeeds or throws the error kairos-lat turns into exit 2
// (RecordError, std::invalid_argument); anything else is a defect.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "records.hpp"
#include "report.hpp"
#include "spectrum.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace lat = kairos::lat;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    if (lat::detect_input_kind(text, "fuzz") != lat::InputKind::records) {
      for (const lat::SpectrumChart& chart : lat::spectrum_charts(text, "fuzz.hgrm")) (void)lat::spectrum_svg(chart);
      return 0;
    }
  } catch (const std::invalid_argument&) {
    return 0;
  }
  try {
    std::istringstream in{std::string(text)};
    const auto records = lat::read_records(in, "fuzz.jsonl");
    const auto groups = lat::group_runs(records);
    std::ostringstream out;
    lat::print_tables(out, groups, false);
    lat::print_tables(out, groups, true);
    for (const char* w : {"W3", "W4"}) (void)lat::lateness_series(groups, w);
    for (const auto& chart : lat::spectrum_charts(records)) (void)lat::spectrum_svg(chart);
  } catch (const lat::RecordError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
