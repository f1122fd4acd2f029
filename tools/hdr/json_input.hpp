// json_input.hpp: how kairos's tools take text they did not write (kairos-gate's inputs,
// kairos-lat --from, the histogram JSON reader): bounded in size and in nesting depth BEFORE
// nlohmann/json sees it.
// Why before: nlohmann's parser keeps its own stack, but copying, dumping and destroying a parsed
//   value recurse once per level, so one value nested 100,000 levels deep (a 200 KB line)
//   overflows the thread's stack in whatever touches it next. No input of kairos's tools nests
//   deeper than 4 levels (a kairos-lat record, Google Benchmark JSON, a histogram's buckets), so
//   kMaxJsonDepth leaves ample room and still keeps every recursion a few frames deep.
// Sizes: one JSON text (a line of JSON Lines or a whole document) at most kMaxJsonBytes; a whole
//   input file at most kMaxInputBytes. The largest legitimate inputs are a histogram JSON line
//   (under 1 MiB with every bucket set) and Google Benchmark JSON of a long suite (a few MiB).
// Errors: std::invalid_argument saying which bound was passed, or "malformed JSON: ..." with
//   nlohmann's own message; the callers prefix it with the file and line and turn it into their
//   own error type (exit status 2).
#pragma once
#include <cstddef>
#include <fstream>
#include <istream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kairos::tools {

inline constexpr std::size_t kMaxJsonDepth = 64;
inline constexpr std::size_t kMaxJsonBytes = std::size_t{64} << 20;    // one JSON text
inline constexpr std::size_t kMaxInputBytes = std::size_t{256} << 20;  // one input file

// Throws std::invalid_argument if `text` is longer than max_bytes or opens more than max_depth
// arrays and objects inside one another. Brackets inside strings do not count (escapes are
// followed). Linear, no allocation; says nothing about whether the text is valid JSON.
inline void check_json_bounds(std::string_view text, std::size_t max_depth = kMaxJsonDepth,
                              std::size_t max_bytes = kMaxJsonBytes) {
  if (text.size() > max_bytes)
    throw std::invalid_argument("JSON text of " + std::to_string(text.size()) + " bytes refused (the limit is " +
                                std::to_string(max_bytes) + ")");
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw std::invalid_argument("JSON nested deeper than " + std::to_string(max_depth) +
                                    " levels refused (at byte " + std::to_string(k + 1) + ")");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

// check_json_bounds, then nlohmann's parser (Json: nlohmann::json or nlohmann::ordered_json).
template <class Json = nlohmann::json>
Json parse_json_bounded(std::string_view text, std::size_t max_depth = kMaxJsonDepth,
                        std::size_t max_bytes = kMaxJsonBytes) {
  check_json_bounds(text, max_depth, max_bytes);
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const typename Json::exception& e) {
    throw std::invalid_argument(std::string("malformed JSON: ") + e.what());
  }
}

// The whole of `in` as text; std::invalid_argument when it holds more than max_bytes (read stops
// there: an endless stream is refused, not buffered).
inline std::string read_bounded(std::istream& in, std::size_t max_bytes = kMaxInputBytes) {
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    if (text.size() + static_cast<std::size_t>(in.gcount()) > max_bytes)
      throw std::invalid_argument("input larger than " + std::to_string(max_bytes >> 20) + " MiB refused");
    text.append(buf, static_cast<std::size_t>(in.gcount()));
  }
  return text;
}

}  // namespace kairos::tools
