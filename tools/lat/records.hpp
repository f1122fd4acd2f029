// records.hpp: kairos-lat's records read back (--from): one JSON object per line, as kairos-lat
// wrote them. Each line is bounded in length and nesting depth before it is parsed
// (tools/hdr/json_input.hpp), and every field the tables and charts read is checked for presence
// and type here, so the report code may use them unchecked:
//   workload, system   non-empty strings (required)
//   parameters         an object (required: every kairos-lat record has one)
//   config             an object, if present; its shards, threads_per_shard and threads unsigned
//                      integers below 2^32, percentile a number, pinned and warm booleans
//   machine            an object, if present; cpu and kernel strings, nproc an unsigned integer
//   name, mode, date, histogram, histogram_format   strings, if present
//   repeat             an integer, if present
// Any other field is a figure: the report reads numbers and ignores the rest.
// Errors: RecordError naming the file and line ("runs.jsonl:3: ..."); kairos-lat exits 2.
#pragma once
#include <istream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kairos::lat {

struct RecordError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One line; `where` names it in errors ("file:line").
nlohmann::ordered_json parse_record(std::string_view line, const std::string& where);
// Every non-blank line of `in`; RecordError also for no record at all. `name` names the input.
std::vector<nlohmann::ordered_json> read_records(std::istream& in, const std::string& name);

}  // namespace kairos::lat
