#include "sim/trace/statistics.hpp"

#include "compressors/counts.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gcsim::trace {

LayerStatistics layer_statistics(const SliceReader& read, int64_t workers, int64_t offset,
                                 int64_t params, double fraction) {
  if (workers < 1 || params < 1)
    throw std::invalid_argument("layer_statistics: need at least one worker and one element");
  LayerStatistics stats;
  stats.params = params;
  stats.k = std::clamp<int64_t>(
      static_cast<int64_t>(compress::ceil_count(fraction * static_cast<double>(params))), 1,
      params);

  std::vector<float> slice(static_cast<size_t>(params));
  std::vector<std::vector<compress::Index>> tops;
  for (int64_t w = 0; w < workers; ++w) {
    read(w, offset, params, slice.data());
    double mass = 0;
    for (float v : slice)
      mass += static_cast<double>(v) * static_cast<double>(v);
    tops.push_back(compress::topk_indices(slice.data(), static_cast<size_t>(params),
                                          static_cast<size_t>(stats.k)));
    double top = 0;
    for (compress::Index i : tops.back())
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

double mean_pairwise_overlap(const std::vector<std::vector<compress::Index>>& tops, int64_t k) {
  if (tops.size() < 2)
    return 1.0;
  double sum = 0;
  std::vector<compress::Index> common;
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
