// Exact top-k by magnitude: a selection algorithm, not a sort.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gcsim::compress {

// Index type used on the wire and in selections (4 bytes, as the papers count them).
using Index = std::uint32_t;

// Writes into `out` the indices, in ascending order, of the k elements of x[0,n)
// with the largest |x|. On equal |x| the lower index wins, so the result is a
// function of the input alone. k == 0 gives an empty result, k == n every index.
// Throws std::invalid_argument if any element is NaN, if k > n, or if n does not
// fit in an Index.
//
// How: the magnitude of a non-NaN float orders like its bit pattern with the sign
// cleared. A strided sample of those keys gives a lower bound for the k-th
// largest key; one streaming pass keeps the elements at or above it; the exact
// threshold is found among those few candidates. If the bound was too high (fewer
// than k candidates) a radix select (histograms of 11, 11 and 9 key bits) runs on
// the whole input instead. Either way the result is exact. Where candidates are
// common (density around 1e-2 and up) the pass packs them with AVX2 where the
// CPU has it, branch-free; the result is the same either way.
void topk_indices(const float* x, std::size_t n, std::size_t k, std::vector<Index>& out);
std::vector<Index> topk_indices(const float* x, std::size_t n, std::size_t k);

// The radix-select path alone (four passes over x); exposed for tests and benchmarks.
void topk_indices_radix(const float* x, std::size_t n, std::size_t k, std::vector<Index>& out);

// topk_indices with the streaming pass in portable C++ whatever the CPU offers
// (what a CPU without AVX2 runs); exposed for tests and benchmarks.
void topk_indices_portable(const float* x, std::size_t n, std::size_t k, std::vector<Index>& out);

// Throws std::invalid_argument naming the first NaN's index, if any.
void check_no_nan(const float* x, std::size_t n);

} // namespace gcsim::compress
