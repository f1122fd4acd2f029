// svg_plot.hpp: a hand-written SVG line chart of lateness percentiles (p50 ... max on x, ns on a
// log-scale y), one line per system configuration. No dependency; opens in any browser.
#pragma once
#include <string>
#include <vector>

#include "report.hpp"

namespace kairos::lat {

// Writes the chart to `path`; false if the file cannot be written. Values <= 0 are drawn at 1 ns.
bool write_lateness_svg(const std::string& path, const std::string& title, const std::string& subtitle,
                        const std::vector<PercentileSeries>& series);

}  // namespace kairos::lat
