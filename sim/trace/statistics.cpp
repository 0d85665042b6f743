#include "sim/trace/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace gcsim::trace {

std::vector<int64_t> top_k_indices(const float* values, int64_t n, int64_t k) {
  if (k < 0 || k > n)
    throw std::invalid_argument("top_k_indices: k must be in [0, n]");
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  // Exact ties in |g| are common in real gradients; breaking them by index
  // keeps the selection deterministic.
  auto larger = [values](int64_t a, int64_t b) {
    float ma = std::fabs(values[a]), mb = std::fabs(values[b]);
    return ma > mb || (ma == mb && a < b);
  };
  std::nth_element(order.begin(), order.begin() + k, order.end(), larger);
  // A copy of the k, not the n-sized buffer resized: callers keep one top
  // set per worker, and W buffers of n indices would dwarf the sets.
  std::vector<int64_t> top(order.begin(), order.begin() + k);
  std::sort(top.begin(), top.end());
  return top;
}

LayerStatistics layer_statistics(const SliceReader& read, int64_t workers, int64_t offset,
                                 int64_t params, double fraction) {
  if (workers < 1 || params < 1)
    throw std::invalid_argument("layer_statistics: need at least one worker and one element");
  LayerStatistics stats;
  stats.params = params;
  stats.k = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(fraction * static_cast<double>(params))), 1, params);

  std::vector<float> slice(static_cast<size_t>(params));
  std::vector<std::vector<int64_t>> tops;
  for (int64_t w = 0; w < workers; ++w) {
    read(w, offset, params, slice.data());
    double mass = 0;
    for (float v : slice)
      mass += static_cast<double>(v) * static_cast<double>(v);
    tops.push_back(top_k_indices(slice.data(), params, stats.k));
    double top = 0;
    for (int64_t i : tops.back())
      top += static_cast<double>(slice[static_cast<size_t>(i)]) *
             static_cast<double>(slice[static_cast<size_t>(i)]);
    stats.norm += std::sqrt(mass);
    stats.top_mass += mass > 0 ? top / mass : 0.0;
  }
  stats.norm /= static_cast<double>(workers);
  stats.top_mass /= static_cast<double>(workers);

  stats.overlap = mean_pairwise_overlap(tops, stats.k);
  return stats;
}

double mean_pairwise_overlap(const std::vector<std::vector<int64_t>>& tops, int64_t k) {
  if (tops.size() < 2)
    return 1.0;
  double sum = 0;
  std::vector<int64_t> common;
  for (size_t a = 0; a < tops.size(); ++a)
    for (size_t b = a + 1; b < tops.size(); ++b) {
      common.clear();
      std::set_intersection(tops[a].begin(), tops[a].end(), tops[b].begin(), tops[b].end(),
                            std::back_inserter(common));
      sum += static_cast<double>(common.size()) / static_cast<double>(k);
    }
  const auto n = static_cast<double>(tops.size());
  return sum / (n * (n - 1) / 2);
}

} // namespace gcsim::trace
