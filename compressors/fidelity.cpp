#include "compressors/fidelity.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gcsim::compress {
namespace {

// average_at(j) is the dense average a_j; one pass, no copy of it kept.
template <typename AverageAt>
Fidelity fidelity_of(const std::vector<float>& update, AverageAt average_at) {
  const std::size_t d = update.size();
  double dot = 0.0;
  double uu = 0.0;
  double aa = 0.0;
  double diff = 0.0;
  double delivered = 0.0;
  for (std::size_t j = 0; j < d; ++j) {
    const double a = average_at(j);
    const auto u = static_cast<double>(update[j]);
    dot += u * a;
    uu += u * u;
    aa += a * a;
    diff += (u - a) * (u - a);
    if (update[j] != 0.0f)
      delivered += a * a;
  }
  Fidelity f;
  if (uu == 0.0 && aa == 0.0) {
    f.cosine = 1.0;
  } else if (uu > 0.0 && aa > 0.0) {
    // At most 1 by Cauchy-Schwarz; the three sums' rounding can pass it by
    // an ulp when the update is the average, which plots then refuse.
    f.cosine = std::clamp(dot / std::sqrt(uu * aa), -1.0, 1.0);
  }
  f.relative_l2_error = aa > 0.0 ? std::sqrt(diff / aa) : std::sqrt(uu);
  f.energy_share = aa > 0.0 ? delivered / aa : 1.0;
  return f;
}

} // namespace

Fidelity measure_fidelity(const std::vector<GradientView>& raw_grads,
                          const std::vector<float>& update) {
  if (raw_grads.empty()) {
    throw std::invalid_argument("fidelity: no gradients");
  }
  for (const auto& g : raw_grads) {
    if (g.size() != update.size()) {
      throw std::invalid_argument("fidelity: gradient and update sizes differ");
    }
  }
  const double inv_p = 1.0 / static_cast<double>(raw_grads.size());
  return fidelity_of(update, [&](std::size_t j) {
    double a = 0.0;
    for (const auto& g : raw_grads) {
      a += static_cast<double>(g.data[j]);
    }
    return a * inv_p;
  });
}

Fidelity measure_fidelity(const std::vector<double>& raw_sum, std::size_t workers,
                          const std::vector<float>& update) {
  if (workers == 0) {
    throw std::invalid_argument("fidelity: no gradients");
  }
  if (raw_sum.size() != update.size()) {
    throw std::invalid_argument("fidelity: gradient and update sizes differ");
  }
  const double inv_p = 1.0 / static_cast<double>(workers);
  return fidelity_of(update, [&](std::size_t j) { return raw_sum[j] * inv_p; });
}

} // namespace gcsim::compress
