// Counts computed from shares in doubles (k from a density, samples from a
// rate), rounded as the decimal figures written mean them.
#pragma once

#include <cassert>
#include <cmath>
#include <cstddef>
#include <limits>

namespace gcsim::compress {

// x, or the whole number it is within a few rounding errors of.
inline double snapped_to_whole(double x) {
  assert(std::isfinite(x) && x >= 0 && "a count is a finite number >= 0");
  const double nearest = std::round(x);
  return std::fabs(x - nearest) <= 8 * std::numeric_limits<double>::epsilon() * x ? nearest : x;
}

// floor(x) and ceil(x) of a count, where an x within rounding of a whole
// number is that number: 0.57 * 10000 is 5699.999999999999 and 0.07 * 10000
// is 700.0000000000001 in doubles, and the densities as written mean 5700 and
// 700.
// A count past what a size_t holds (2 / 1e-300 samples at least) is the
// largest one: the cast of it would be undefined (x86 gives 0).
inline std::size_t saturated_count(double whole) {
  return whole < 0x1p64 ? static_cast<std::size_t>(whole) : std::numeric_limits<std::size_t>::max();
}
inline std::size_t floor_count(double x) {
  return saturated_count(std::floor(snapped_to_whole(x)));
}
inline std::size_t ceil_count(double x) {
  return saturated_count(std::ceil(snapped_to_whole(x)));
}

} // namespace gcsim::compress
