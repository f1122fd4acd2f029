// lat_records_test.cpp: tools/lat/records.hpp, kairos-lat's records read back (--from): hostile
// lines (too deep, a field missing or of another type) are a RecordError naming the line, never
// an out-of-bounds read or a JSON exception in the report; and report.hpp's flag for a W3 run
// whose producer fell behind its schedule.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "records.hpp"
#include "report.hpp"

namespace {

namespace lat = kairos::lat;
using json = nlohmann::ordered_json;

const std::string kGood =
    R"({"workload":"W3","name":"lateness","system":"kairos-hybrid","config":{"shards":1,"threads_per_shard":1,)"
    R"("pinned":false,"warm":false},"parameters":{"count":20000,"interval_ns":50000},"p50_ns":5000,)"
    R"("machine":{"cpu":"X","nproc":2,"kernel":"6.1"},"repeat":1})";

std::string error_of(const std::string& line) {
  try {
    lat::parse_record(line, "runs.jsonl:7");
  } catch (const lat::RecordError& e) {
    return e.what();
  }
  return "(accepted)";
}

// Each edit of the good record, as (key, replacement JSON); "" removes the key.
json edited(const std::string& key, const std::string& value) {
  json rec = json::parse(kGood);
  if (value.empty()) rec.erase(key);
  else rec[key] = json::parse(value);
  return rec;
}

TEST(LatRecords, AGoodRecordIsReadAndTabulated) {
  std::istringstream in(kGood + "\n\n" + kGood + "\n");
  const std::vector<json> records = lat::read_records(in, "runs.jsonl");
  ASSERT_EQ(records.size(), 2u);
  std::ostringstream table;
  lat::print_tables(table, lat::group_runs(records), false);
  EXPECT_NE(table.str().find("kairos-hybrid"), std::string::npos) << table.str();
}

// A record without "parameters" was read out of bounds by the report (ASan: heap-buffer-overflow).
TEST(LatRecords, RecordWithoutParametersIsRefusedByLine) {
  const std::string e = error_of(edited("parameters", "").dump());
  EXPECT_NE(e.find("runs.jsonl:7: not a kairos-lat record (no \"parameters\")"), std::string::npos) << e;
}

// Types the report reads with .value() or get<>() threw json::type_error (or converted a float to
// unsigned: undefined behaviour) instead of naming the field.
TEST(LatRecords, MistypedFieldsAreRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"parameters", "[1]"}, {"config", "\"x\""}, {"machine", "5"}, {"workload", "3"}, {"system", "\"\""},
      {"name", "{}"}, {"mode", "1"}, {"repeat", "1.5"}, {"histogram", "[]"},
  };
  for (const auto& [key, value] : bad)
    EXPECT_NE(error_of(edited(key, value).dump()).find("\"" + key + "\""), std::string::npos)
        << key << "=" << value << ": " << error_of(edited(key, value).dump());
  for (const char* config : {R"({"shards":-1})", R"({"shards":1.5e30})", R"({"threads_per_shard":"2"})",
                             R"({"shards":4294967296})", R"({"percentile":"p99"})", R"({"pinned":1})",
                             R"({"warm":"yes"})", R"({"record_lateness":0})"})
    EXPECT_NE(error_of(edited("config", config).dump()).find("config"), std::string::npos) << config;
  for (const char* machine : {R"({"cpu":1})", R"({"nproc":"2"})", R"({"kernel":[]})"})
    EXPECT_NE(error_of(edited("machine", machine).dump()).find("machine"), std::string::npos) << machine;
}

TEST(LatRecords, DeepOrOversizedLinesAreRefusedBeforeParsing) {
  const std::string deep = R"({"workload":"W3","system":"s","parameters":{},"x":)" + std::string(200'000, '[') +
                           std::string(200'000, ']') + "}";
  EXPECT_NE(error_of(deep).find("nested deeper than 64 levels"), std::string::npos) << error_of(deep).substr(0, 200);
  EXPECT_NE(error_of("[1,2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{\"half\":").find("not a JSON object"), std::string::npos);
  std::istringstream empty("\n  \n");
  EXPECT_THROW(lat::read_records(empty, "empty.jsonl"), lat::RecordError);
}

TEST(LatRecords, ProducerBehindItsScheduleIsFlaggedInTheRecordAndTheTable) {
  json on_time = json::parse(kGood), behind = json::parse(kGood);
  on_time["pacing_lag_max_ns"] = 40'000;       // within one interval
  behind["pacing_lag_max_ns"] = 24'500'000;    // the demo's 24.5 ms against a 50 us schedule
  lat::flag_producer_behind(on_time);
  lat::flag_producer_behind(behind);
  EXPECT_EQ(on_time["producer_fell_behind"], false);
  EXPECT_EQ(behind["producer_fell_behind"], true);
  std::ostringstream table;
  lat::print_tables(table, lat::group_runs({on_time, behind}), false);
  EXPECT_NE(table.str().find("the producer fell 24.5 ms behind its 50 us schedule"), std::string::npos)
      << table.str();
  EXPECT_EQ(table.str().find("note:"), table.str().rfind("note:")) << "only the late run is noted";
  json w1 = edited("workload", "\"W1\"");
  w1["pacing_lag_max_ns"] = 1e9;
  lat::flag_producer_behind(w1);
  EXPECT_FALSE(w1.contains("producer_fell_behind"));
}

}  // namespace
