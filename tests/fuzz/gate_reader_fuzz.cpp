// gate_reader_fuzz.cpp: libFuzzer over kairos-gate's reader (gate::parse_runs): any text is either
// runs or gate::BadInput (kairos-gate exits 2); any other exception, a crash, a sanitizer report
// or a hang is a defect. Runs that parse are grouped and judged against themselves, so what the
// reader lets through is also safe for the comparison.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace gate = kairos::gate;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const std::vector<gate::Run> runs = gate::parse_runs(text, "fuzz.jsonl");
    gate::GateOptions options;
    options.min_runs = 1;
    options.resamples = 20;
    options.allow_machine_mismatch = true;
    options.tolerances["all"] = gate::parse_limit("10%");
    const gate::Comparison c = gate::compare_to_baseline(runs, runs, options);
    (void)gate::render_table({c});
  } catch (const gate::BadInput&) {
  }
  return 0;
}
