// lat_machine_test.cpp: the host fingerprint every kairos-lat record carries (tools/lat/machine.cpp):
// CPU vendor/family/model, threads per core, clocksource, the clock read's cost and a pinned
// one-way cache-line handoff, and the one line tables are headed with.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <thread>

#include "machine.hpp"

namespace {

TEST(LatMachine, TheHostFingerprintNamesWhatAVerdictDependsOn) {
  const nlohmann::ordered_json h = kairos::lat::host_fingerprint();
  for (const char* k : {"vendor", "family", "model", "clocksource"}) {
    ASSERT_TRUE(h.contains(k)) << k;
    ASSERT_TRUE(h[k].is_string()) << k;
    EXPECT_FALSE(h[k].get<std::string>().empty()) << k;
  }
  std::ifstream cs("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string clocksource;
  if (std::getline(cs, clocksource)) {
    EXPECT_EQ(h["clocksource"].get<std::string>(), clocksource);
  }
  ASSERT_TRUE(h["threads_per_core"].is_number_integer());
  EXPECT_TRUE(h["threads_per_core"].get<int>() >= 1 || h["threads_per_core"].get<int>() == -1);
  ASSERT_TRUE(h["clock_read_ns"].is_number_integer());
  EXPECT_GT(h["clock_read_ns"].get<long>(), 0);
  EXPECT_LT(h["clock_read_ns"].get<long>(), 1'000'000);  // a generous bound: a loaded machine
  ASSERT_TRUE(h["handoff_ns"].is_number_integer());
  const long handoff = h["handoff_ns"].get<long>();
  if (std::thread::hardware_concurrency() >= 2) {
    EXPECT_TRUE(handoff > 0 || handoff == -1) << handoff;
  } else {
    EXPECT_EQ(handoff, -1);
  }
  const std::string line = kairos::lat::host_line(h);
  EXPECT_NE(line.find(h["clocksource"].get<std::string>()), std::string::npos) << line;
  EXPECT_NE(line.find("handoff"), std::string::npos) << line;
}

// A host whose vCPUs moved (a 40 ns handoff becoming 190 ns) is another host; the spread of one
// host's measurements (37-61 ns, 173-210 ns on one VM) is not.
TEST(LatMachine, HandoffsAgreeWithinTheSpreadOfOneHostOnly) {
  using kairos::lat::handoffs_agree;
  EXPECT_TRUE(handoffs_agree(40, 43));
  EXPECT_TRUE(handoffs_agree(37, 61));
  EXPECT_TRUE(handoffs_agree(173, 210));
  EXPECT_TRUE(handoffs_agree(-1, -1));
  EXPECT_FALSE(handoffs_agree(40, 190));
  EXPECT_FALSE(handoffs_agree(190, 40));
  EXPECT_FALSE(handoffs_agree(61, 173));
  EXPECT_FALSE(handoffs_agree(-1, 40));
  EXPECT_FALSE(handoffs_agree(40, -1));
  const std::int64_t now = kairos::lat::handoff_now_ns();
  if (std::thread::hardware_concurrency() >= 2) {
    EXPECT_TRUE(now > 0 || now == -1) << now;
  } else {
    EXPECT_EQ(now, -1);
  }
}

TEST(LatMachine, EveryRecordsMachineCarriesTheHost) {
  const nlohmann::ordered_json m = kairos::lat::machine_json();
  ASSERT_TRUE(m.contains("host"));
  EXPECT_TRUE(m["host"].is_object());
  EXPECT_TRUE(m["host"].contains("handoff_ns"));
}

}  // namespace
