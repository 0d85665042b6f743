// Helpers shared by the compressor implementations (not part of the public API).
#pragma once

#include "compressors/compressor.hpp"

#include <vector>

namespace gcsim::compress::detail {

// Sorted union of sorted index lists.
std::vector<Index> sorted_union(const std::vector<std::vector<Index>>& sets);

// Every worker contributes its own acc at every index of `common` (sorted,
// unique); the sums are averaged: update[common] = sum_w acc_w[common] / P, and
// each worker's residual is zeroed there ("allreduce the values at a shared index
// set"). Sets work.result.support.
void apply_common_indices(IterationWork& work, const std::vector<Index>& common);

// Worker w contributes acc_w only at its own sorted set sets[w]; the update is
// the sum of the sparse sets over P, and each worker's residual is zeroed on its
// own set ("allgather the (index, value) pairs"). Sets work.result.support.
void apply_own_sets(IterationWork& work, const std::vector<std::vector<Index>>& sets);

// update[j] = values[i] / P at indices[i] (sorted, unique), and each worker's
// residual loses update[j] at j, so that P * update + sum of residuals keeps the
// mass (used where the applied values are estimates, not exact sums).
void apply_estimated(IterationWork& work, const std::vector<Index>& indices,
                     const std::vector<float>& sums);

} // namespace gcsim::compress::detail
