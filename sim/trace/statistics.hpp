#pragma once
// Per-layer statistics of a set of workers' gradients: what `gcsim inspect`
// prints and what the more-workers-than-captured test compares.

#include "compressors/topk.hpp"
#include "sim/trace/manifest.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace gcsim::trace {

struct LayerStatistics {
  int64_t params = 0;
  int64_t k = 0; // size of the top set: max(1, ceil(fraction * params)) (ceil_count)
  /// Mean over workers of the L2 norm of the layer's gradient.
  double norm = 0;
  /// Mean over workers of the share of the squared L2 mass held by the top
  /// k elements by magnitude (0 for an all-zero gradient).
  double top_mass = 0;
  /// Mean over worker pairs of |top_a ∩ top_b| / k; 1 when only one worker.
  double overlap = 0;
};

/// Fills `out` (count floats) with elements [offset, offset + count) of the
/// gradient of `worker`.
using SliceReader = std::function<void(int64_t worker, int64_t offset, int64_t count, float* out)>;

/// Statistics of elements [offset, offset + params) over `workers` workers,
/// reading one worker's slice at a time (memory: workers x params floats).
LayerStatistics layer_statistics(const SliceReader& read, int64_t workers, int64_t offset,
                                 int64_t params, double fraction = 0.01);

/// Mean over pairs of top sets (each ascending, as compress::topk_indices
/// gives them) of |a ∩ b| / k; 1 for fewer than two sets.
double mean_pairwise_overlap(const std::vector<std::vector<compress::Index>>& tops, int64_t k);

} // namespace gcsim::trace
