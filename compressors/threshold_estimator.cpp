#include "compressors/threshold_estimator.hpp"

#include "compressors/rng.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

namespace gcsim::compress {

ThresholdEstimate estimate_threshold(const float* x, std::size_t n, double density,
                                     std::size_t samples, std::uint64_t seed) {
  if (n == 0) {
    throw std::invalid_argument("estimate_threshold: empty input");
  }
  samples = std::clamp<std::size_t>(samples, 1, n);
  Xoshiro256 rng(seed);
  std::vector<float> mags(samples);
  for (auto& m : mags) {
    m = std::fabs(x[rng.below(n)]);
  }
  const auto rank = std::clamp<std::size_t>(
      static_cast<std::size_t>(std::ceil(density * static_cast<double>(samples))), 1, samples);
  std::nth_element(mags.begin(), mags.begin() + static_cast<std::ptrdiff_t>(rank - 1), mags.end(),
                   std::greater<>());
  return ThresholdEstimate{mags[rank - 1], samples};
}

std::size_t count_at_or_above(const float* x, std::size_t n, float threshold) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    count += std::fabs(x[i]) >= threshold ? 1 : 0;
  }
  return count;
}

void select_at_or_above(const float* x, std::size_t n, float threshold, std::vector<Index>& out) {
  out.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (std::fabs(x[i]) >= threshold) {
      out.push_back(static_cast<Index>(i));
    }
  }
}

} // namespace gcsim::compress
