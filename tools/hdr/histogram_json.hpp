// histogram_json.hpp: reads kairos::LatencyHistogram's JSON form (LatencyHistogram::to_json(),
// described at the top of kairos/latency_histogram.hpp) with nlohmann/json, the one JSON parser of
// kairos's tools.
// Errors: std::invalid_argument naming what is wrong: malformed JSON, text nested deeper or longer
//         than json_input.hpp's bounds (checked before parsing), another kind or version, a
//         missing or mistyped field, a bucket index out of range or repeated, bucket counts that
//         do not add up to count, min, max and mean that do not fit the buckets. Unknown keys are
//         ignored. mean round-trips exactly while count * mean < 2^52 ns.
#pragma once
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <kairos/latency_histogram.hpp>

#include "json_input.hpp"

namespace kairos::tools {

inline constexpr const char* kHistogramKind = "kairos.latency_histogram";

// True iff j is an object whose "kind" is the histogram's.
inline bool is_histogram_json(const nlohmann::json& j) {
  return j.is_object() && j.contains("kind") && j["kind"].is_string() &&
         j["kind"].get<std::string>() == kHistogramKind;
}

// Parsed JSON into `out` (no 57 KiB temporary); on a throw, out is reset.
inline void histogram_from_json(const nlohmann::json& j, LatencyHistogram& out) {
  auto fail = [&](const std::string& what) -> void {
    out.reset();
    throw std::invalid_argument("kairos latency histogram JSON: " + what);
  };
  if (!j.is_object()) fail("not an object");
  auto field = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) fail(std::string("missing \"") + key + "\"");
    return j[key];
  };
  auto uint = [&](const nlohmann::json& v, const std::string& what) -> std::uint64_t {
    if (!v.is_number_unsigned()) fail(what + " must be an integer in [0, 2^64), got " + v.dump());
    return v.get<std::uint64_t>();
  };
  if (!is_histogram_json(j)) fail(std::string("kind is not \"") + kHistogramKind + "\"");
  const std::uint64_t version = uint(field("version"), "version");
  if (version != 1) fail("unsupported version " + std::to_string(version) + " (this reader knows 1)");
  const std::uint64_t count = uint(field("count"), "count");
  LatencyHistogram::Parts parts;
  if (j.contains("below_zero")) parts.below_zero = uint(j["below_zero"], "below_zero");
  parts.min = uint(field("min"), "min");
  parts.max = uint(field("max"), "max");
  const nlohmann::json& mean = field("mean");
  if (!mean.is_number()) fail("mean must be a finite number, got " + mean.dump());
  const nlohmann::json& buckets = field("buckets");
  if (!buckets.is_array()) fail("buckets must be an array");
  std::uint64_t total = 0;
  parts.buckets.reserve(buckets.size());
  for (const nlohmann::json& b : buckets) {
    if (!b.is_array() || b.size() != 2) fail("a bucket must be [index, count], got " + b.dump());
    const std::uint64_t index = uint(b[0], "bucket index");
    const std::uint64_t n = uint(b[1], "bucket count");
    if (index >= LatencyHistogram::kBucketCount)
      fail("bucket index " + std::to_string(index) + " out of range [0, " +
           std::to_string(LatencyHistogram::kBucketCount) + ")");
    if (n > std::numeric_limits<std::uint64_t>::max() - total) fail("bucket counts overflow");
    total += n;
    parts.buckets.emplace_back(static_cast<std::size_t>(index), n);
  }
  if (count == 0 && mean.get<double>() != 0) fail("min, max and mean must be 0 when count is 0");
  if (total != count)
    fail("bucket counts add up to " + std::to_string(total) + ", count is " + std::to_string(count));
  parts.sum = static_cast<long double>(mean.get<double>()) * static_cast<long double>(count);
  try {
    out.assign(parts);
  } catch (const std::invalid_argument& e) {
    fail(e.what());
  }
}

inline LatencyHistogram histogram_from_json(const nlohmann::json& j) {
  LatencyHistogram h;
  histogram_from_json(j, h);
  return h;
}

// From text: also std::invalid_argument for text that is not one JSON value, or passes the bounds
// of json_input.hpp (the depth is checked before nlohmann parses it).
inline LatencyHistogram histogram_from_json_text(std::string_view text) {
  nlohmann::json j;
  try {
    j = parse_json_bounded(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("kairos latency histogram JSON: ") + e.what());
  }
  return histogram_from_json(j);
}

}  // namespace kairos::tools
