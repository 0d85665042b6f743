// Magnitude thresholds estimated from a random sample (DGC-style selection).
#pragma once

#include "compressors/topk.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gcsim::compress {

struct ThresholdEstimate {
  float threshold = 0.0f; // |x| >= threshold is expected to keep ~density of the input
  std::size_t samples = 0;
};

// Draws `samples` positions of x[0,n) uniformly with replacement (xoshiro256**
// seeded with `seed`) and returns the ceil(density * samples)-th largest sampled
// magnitude. samples is clamped to [1, n]; at n it takes every element once, so
// the threshold is exact. Throws std::invalid_argument if n == 0.
ThresholdEstimate estimate_threshold(const float* x, std::size_t n, double density,
                                     std::size_t samples, std::uint64_t seed);

// Number of i with |x[i]| >= threshold (branch-free, vectorizable).
std::size_t count_at_or_above(const float* x, std::size_t n, float threshold);

// Ascending indices i with |x[i]| >= threshold. Packed with AVX2 where the CPU
// has it (no branch on the data, so kept shares of 1e-2 and up cost little
// more than a count); the result is the same either way.
void select_at_or_above(const float* x, std::size_t n, float threshold, std::vector<Index>& out);

// select_at_or_above in portable C++ whatever the CPU offers (what a CPU
// without AVX2 runs); exposed for tests and benchmarks.
void select_at_or_above_portable(const float* x, std::size_t n, float threshold,
                                 std::vector<Index>& out);

} // namespace gcsim::compress
