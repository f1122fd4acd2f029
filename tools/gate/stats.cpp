// stats.cpp: kairos-gate's statistics (gate.hpp): medians and spreads, the one-sided
// Mann-Whitney U test, and seeded percentile-bootstrap intervals (the verdicts are repeatable).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include <record_model.hpp>

#include "judge.hpp"

namespace kairos::gate {
namespace {

std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<double> resample(const std::vector<double>& v, std::uint64_t& rng) {
  std::vector<double> out(v.size());
  for (double& x : out) x = v[splitmix(rng) % v.size()];
  return out;
}

std::pair<double, double> percentile_interval(std::vector<double> stats) {
  std::sort(stats.begin(), stats.end());
  const auto at = [&](double q) {
    const std::size_t i = static_cast<std::size_t>(std::floor(q * static_cast<double>(stats.size() - 1) + 0.5));
    return stats[std::min(i, stats.size() - 1)];
  };
  return {at(0.025), at(0.975)};
}

}  // namespace

// ---- statistics ------------------------------------------------------------------------------

double median(std::vector<double> v) { return records::median(std::move(v)); }  // kairos-lat's too

Spread spread_of(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  s.n = values.size();
  s.median = median(values);
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

double mann_whitney_p_greater(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = x.size(), m = y.size();
  if (n == 0 || m == 0) return 1.0;
  // U = pairs (xi, yj) with xi > yj, ties counting a half.
  double u = 0;
  for (double a : x)
    for (double b : y) u += a > b ? 1.0 : (a == b ? 0.5 : 0.0);
  // Ranks of the pooled sample, for the tie correction.
  std::vector<double> all(x);
  all.insert(all.end(), y.begin(), y.end());
  std::sort(all.begin(), all.end());
  double tie_term = 0;
  bool ties = false;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    const double t = static_cast<double>(j - i);
    if (t > 1) ties = true;
    tie_term += t * t * t - t;
    i = j;
  }
  if (!ties && n <= 10 && m <= 10) {
    // Exact: count the arrangements with U' >= u; ways[i][j][k]: i of x, j of y, U = k.
    const std::size_t max_u = n * m;
    std::vector<std::vector<std::vector<double>>> w(
        n + 1, std::vector<std::vector<double>>(m + 1, std::vector<double>(max_u + 1, 0)));
    for (std::size_t i = 0; i <= n; ++i)
      for (std::size_t j = 0; j <= m; ++j) {
        if (i == 0 || j == 0) {
          w[i][j][0] = 1;
          continue;
        }
        for (std::size_t k = 0; k <= i * j; ++k) {
          // the largest element is an x (it beats all j y's) or a y
          w[i][j][k] = (k >= j ? w[i - 1][j][k - j] : 0) + w[i][j - 1][k];
        }
      }
    double total = 0, tail = 0;
    for (std::size_t k = 0; k <= max_u; ++k) {
      total += w[n][m][k];
      if (static_cast<double>(k) >= u - 1e-9) tail += w[n][m][k];
    }
    return tail / total;
  }
  const double nn = static_cast<double>(n), mm = static_cast<double>(m), big = nn + mm;
  const double mean = nn * mm / 2;
  const double var = nn * mm / 12 * ((big + 1) - tie_term / (big * (big - 1)));
  if (var <= 0) return u > mean ? 0.0 : 1.0;
  const double z = (u - mean - 0.5) / std::sqrt(var);
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

std::pair<double, double> bootstrap_median_ci(const std::vector<double>& values, unsigned resamples,
                                              std::uint64_t seed) {
  if (values.empty()) throw std::invalid_argument("bootstrap of no values");
  std::vector<double> stats;
  stats.reserve(resamples);
  for (unsigned k = 0; k < std::max(resamples, 1u); ++k) stats.push_back(median(resample(values, seed)));
  return percentile_interval(std::move(stats));
}

std::pair<double, double> bootstrap_ratio_ci(const std::vector<double>& a, const std::vector<double>& b,
                                             unsigned resamples, std::uint64_t seed) {
  if (a.empty() || b.empty()) throw std::invalid_argument("bootstrap of no values");
  std::vector<double> stats;
  stats.reserve(resamples);
  for (unsigned k = 0; k < std::max(resamples, 1u); ++k)
    stats.push_back(safe_ratio(median(resample(a, seed)), median(resample(b, seed))));
  return percentile_interval(std::move(stats));
}

}  // namespace kairos::gate
