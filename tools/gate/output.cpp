// output.cpp: kairos-gate's output (gate.hpp): values with their units, the text table and the
// Markdown table of comparisons, and the summary line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "gate.hpp"

namespace kairos::gate {

// ---- output ------------------------------------------------------------------------------------

std::string format_value(double v, Unit unit) {
  char buf[64];
  const double a = std::fabs(v);
  switch (unit) {
    case Unit::ns:
      if (a < 1e3)
        std::snprintf(buf, sizeof buf, "%.0f ns", v);
      else if (a < 1e6)
        std::snprintf(buf, sizeof buf, "%.3g us", v / 1e3);
      else if (a < 1e9)
        std::snprintf(buf, sizeof buf, "%.3g ms", v / 1e6);
      else
        std::snprintf(buf, sizeof buf, "%.3g s", v / 1e9);
      return buf;
    case Unit::per_s:
      if (a >= 1e6)
        std::snprintf(buf, sizeof buf, "%.3g M/s", v / 1e6);
      else if (a >= 1e3)
        std::snprintf(buf, sizeof buf, "%.3g k/s", v / 1e3);
      else
        std::snprintf(buf, sizeof buf, "%.3g /s", v);
      return buf;
    case Unit::count:
      std::snprintf(buf, sizeof buf, "%.6g", v);
      return buf;
  }
  return "?";
}

std::string format_percent(double f) {
  char buf[48];
  if (std::isinf(f)) return f > 0 ? "+inf" : "-inf";
  if (f > 9.0)
    std::snprintf(buf, sizeof buf, "%.3gx", 1 + f);  // beyond +900%: the ratio reads better
  else
    std::snprintf(buf, sizeof buf, "%+.1f%%", f * 100);
  return buf;
}

namespace {

constexpr std::size_t kTextWidth = 100;

std::string spread_text(const Spread& s, Unit u) {
  if (s.n == 0) return "-";
  return format_value(s.median, u) + " (" + format_value(s.min, u) + " .. " + format_value(s.max, u) +
         ", n=" + std::to_string(s.n) + ")";
}

std::string ratio_text(double r) {
  char buf[32];
  if (std::isinf(r)) return "inf";
  std::snprintf(buf, sizeof buf, "%.3gx", r);
  return buf;
}

std::vector<std::vector<std::string>> cells(const Comparison& c) {
  std::vector<std::vector<std::string>> out;
  out.push_back({"group", "figure", c.base_column + " median (min .. max, n)",
                 c.current_column + " median (min .. max, n)", c.paired ? "paired ratio [95% CI]" : "change [95% CI]",
                 c.paired ? "" : "p (U test)", "limit", "verdict", "note"});
  if (!c.paired) out.front()[5] = "p (U test)";
  for (const Row& r : c.rows) {
    std::string stat;
    if (r.figure == kEarlyFires)
      stat = "-";
    else if (c.paired)
      stat = ratio_text(r.statistic) + " [" + ratio_text(r.ci_low) + " .. " + ratio_text(r.ci_high) + "]";
    else if (std::isnan(r.ci_low))
      stat = (r.statistic >= 0 ? "+" : "") + format_value(r.statistic, r.unit);
    else
      stat = format_percent(r.statistic) + " [" + format_percent(r.ci_low) + " .. " + format_percent(r.ci_high) + "]";
    char p[32] = "-";
    if (!std::isnan(r.p_value)) std::snprintf(p, sizeof p, "%.3g", r.p_value);
    out.push_back({r.group, r.figure, spread_text(r.base, r.unit), spread_text(r.current, r.unit), stat,
                   c.paired ? "" : p, r.limit, verdict_text(r.verdict), r.note});
  }
  return out;
}

std::string summary_line(const std::vector<Comparison>& cs) {
  std::size_t pass = 0, reg = 0, inc = 0;
  for (const Comparison& c : cs)
    pass += c.count(Verdict::pass), reg += c.count(Verdict::regression), inc += c.count(Verdict::inconclusive);
  const Verdict v = overall(cs);
  return std::string("verdict: ") +
         (v == Verdict::regression     ? "REGRESSION"
          : v == Verdict::inconclusive ? "INCONCLUSIVE"
                                       : "PASS") +
         " (" + std::to_string(pass) + " pass, " + std::to_string(reg) + " regression, " + std::to_string(inc) +
         " inconclusive)";
}

}  // namespace

// Text: each group a heading, each of its figures two or three lines (verdict and statistic;
// both sides' spreads; the note), so a line stays within kTextWidth columns (a heading or note
// longer than that is wrapped at spaces) whatever the figures and groups are called.
std::string render_table(const std::vector<Comparison>& cs) {
  std::ostringstream out;
  auto wrapped = [&](const std::string& text, const std::string& indent) {
    if (indent.size() + text.size() <= kTextWidth) {
      out << indent << text << "\n";
      return;
    }
    std::string line = indent;
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find(' ', start);
      if (end == std::string::npos) end = text.size();
      const std::string word = text.substr(start, end - start);
      if (line.size() > indent.size() && line.size() + 1 + word.size() > kTextWidth) {
        out << line << "\n";
        line = indent + "  ";
      } else if (line.size() > indent.size()) {
        line += ' ';
      }
      line += word;
      start = end + 1;
    }
    out << line << "\n";
  };
  for (const Comparison& c : cs) {
    out << "kairos-gate " << c.title << "\n";
    const auto rows = cells(c);
    std::size_t figure_w = 6, verdict_w = 4;
    for (const Row& r : c.rows)
      figure_w = std::max(figure_w, r.figure.size()),
      verdict_w = std::max<std::size_t>(verdict_w, std::strlen(verdict_text(r.verdict)));
    const std::string stat_header = c.paired ? "paired ratio [95% CI]" : "change [95% CI]";
    std::string last_group;
    for (std::size_t k = 0; k < c.rows.size(); ++k) {
      const Row& r = c.rows[k];
      const std::vector<std::string>& cell =
          rows[k + 1];  // group, figure, base, current, stat, p, limit, verdict, note
      if (r.group != last_group) wrapped(r.group, ""), last_group = r.group;
      std::string line = "  " + r.figure + std::string(figure_w - r.figure.size(), ' ') + "  " + cell[7] +
                         std::string(verdict_w - cell[7].size(), ' ') + "  " + stat_header + " " + cell[4];
      if (!r.limit.empty()) line += ", limit " + r.limit;
      if (!c.paired && cell[5] != "-") line += ", p " + cell[5];
      wrapped(line, "");
      const std::string pad(2 + figure_w + 2, ' ');
      const std::size_t side_w = std::max(c.base_column.size(), c.current_column.size());
      wrapped(c.base_column + std::string(side_w - c.base_column.size(), ' ') + "  " + cell[2], pad);
      wrapped(c.current_column + std::string(side_w - c.current_column.size(), ' ') + "  " + cell[3], pad);
      if (!r.note.empty()) wrapped(r.note, pad);
    }
    for (const std::string& n : c.notes) wrapped("note: " + n, "");
    out << "\n";
  }
  out << summary_line(cs) << "\n";
  return out.str();
}

std::string render_markdown(const std::vector<Comparison>& cs) {
  std::ostringstream out;
  out << "### kairos-gate: " << summary_line(cs) << "\n\n";
  for (const Comparison& c : cs) {
    out << "**" << c.title << "**\n\n";
    const auto rows = cells(c);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      out << "|";
      for (const std::string& cell : rows[k]) out << " " << cell << " |";
      out << "\n";
      if (k == 0) {
        out << "|";
        for (std::size_t i = 0; i < rows[k].size(); ++i) out << (i < 2 ? "---|" : "---:|");
        out << "\n";
      }
    }
    for (const std::string& n : c.notes) out << "\n- " << n;
    out << "\n\n";
  }
  return out.str();
}

}  // namespace kairos::gate
