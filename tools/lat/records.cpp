// records.cpp: the checks of records.hpp.
#include "records.hpp"

#include <cstdint>
#include <limits>

#include <json_input.hpp>

namespace kairos::lat {
namespace {

using json = nlohmann::ordered_json;

std::string describe(const json& v) {
  std::string s = v.dump();  // bounded depth: dump's recursion is shallow
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

void check_fields(const json& rec, const std::string& where) {
  auto bad = [&](const std::string& why) { throw RecordError(where + ": " + why); };
  auto expect = [&](const json& obj, const char* key, bool (json::*is)() const noexcept, const char* what,
                    const std::string& owner) {
    if (obj.contains(key) && !(obj[key].*is)())
      bad(owner + "\"" + key + "\" must be " + what + ", got " + describe(obj[key]));
  };
  for (const char* key : {"workload", "system"})
    if (!rec.contains(key) || !rec[key].is_string() || rec[key].get_ref<const std::string&>().empty())
      bad(std::string("not a kairos-lat record (no \"") + key + "\" string)");
  if (!rec.contains("parameters")) bad("not a kairos-lat record (no \"parameters\")");
  expect(rec, "parameters", &json::is_object, "an object", "");
  expect(rec, "config", &json::is_object, "an object", "");
  expect(rec, "machine", &json::is_object, "an object", "");
  for (const char* key : {"name", "mode", "date", "histogram", "histogram_format"})
    expect(rec, key, &json::is_string, "a string", "");
  expect(rec, "repeat", &json::is_number_integer, "an integer", "");
  if (rec.contains("config")) {
    const json& c = rec["config"];
    for (const char* key : {"shards", "threads_per_shard", "threads"}) {
      expect(c, key, &json::is_number_unsigned, "an unsigned integer", "config ");
      if (c.contains(key) && c[key].get<std::uint64_t>() > std::numeric_limits<unsigned>::max())
        bad(std::string("config \"") + key + "\" is out of range: " + describe(c[key]));
    }
    expect(c, "percentile", &json::is_number, "a number", "config ");
    expect(c, "far_timer_slack_ns", &json::is_number_integer, "an integer", "config ");
    for (const char* key : {"pinned", "warm", "record_lateness"})
      expect(c, key, &json::is_boolean, "true or false", "config ");
  }
  if (rec.contains("machine")) {
    const json& m = rec["machine"];
    for (const char* key : {"cpu", "kernel"}) expect(m, key, &json::is_string, "a string", "machine ");
    expect(m, "nproc", &json::is_number_unsigned, "an unsigned integer", "machine ");
  }
}

}  // namespace

json parse_record(std::string_view line, const std::string& where) {
  json rec;
  try {
    rec = tools::parse_json_bounded<json>(line);
  } catch (const std::invalid_argument& e) {
    throw RecordError(where + ": not a JSON object (" + e.what() + ")");
  }
  if (!rec.is_object()) throw RecordError(where + ": not a JSON object");
  check_fields(rec, where);
  return rec;
}

std::vector<json> read_records(std::istream& in, const std::string& name) {
  std::vector<json> out;
  std::size_t line_no = 0, total = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    total += line.size() + 1;
    if (total > tools::kMaxInputBytes)
      throw RecordError(name + ": more than " + std::to_string(tools::kMaxInputBytes >> 20) + " MiB refused");
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out.push_back(parse_record(line, name + ":" + std::to_string(line_no)));
  }
  if (out.empty()) throw RecordError(name + ": no records");
  return out;
}

}  // namespace kairos::lat
