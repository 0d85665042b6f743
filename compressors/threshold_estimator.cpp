#include "compressors/threshold_estimator.hpp"

#include "compressors/counts.hpp"
#include "compressors/detail/left_pack.hpp"
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
  // As many samples as elements: the elements themselves, so the threshold is
  // exact (drawn with replacement, a third of them would be left out).
  for (std::size_t i = 0; i < samples; ++i) {
    mags[i] = std::fabs(x[samples == n ? i : rng.below(n)]);
  }
  const auto rank =
      std::clamp<std::size_t>(ceil_count(density * static_cast<double>(samples)), 1, samples);
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

namespace {

// Appends the i in [first, n) with |x[i]| >= threshold.
void append_at_or_above(const float* x, std::size_t first, std::size_t n, float threshold,
                        std::vector<Index>& out) {
  for (std::size_t i = first; i < n; ++i) {
    if (std::fabs(x[i]) >= threshold) {
      out.push_back(static_cast<Index>(i));
    }
  }
}

#ifdef GCSIM_LEFT_PACK_AVX2
// 8 elements at a time without a branch on the data: every block's indices
// are stored packed and the count advances by how many passed. The branch per
// element it replaces was mispredicted at every kept share but the smallest.
// An ordered compare keeps NaN out, as the scalar >= does.
__attribute__((target("avx2,popcnt"))) void
select_packed_avx2(const float* x, std::size_t n, float threshold, std::vector<Index>& out) {
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 bound = _mm256_set1_ps(threshold);
  const __m256i eight = _mm256_set1_epi32(8);
  __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  // Room for a block's 8 stores past the last kept index: about 1.5 % of n at
  // first, doubled as needed, so that a sparse selection zero-fills little.
  out.resize(std::min(n, std::max<std::size_t>(1024, n / 64)) + 8);
  std::size_t m = 0;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (m + 8 > out.size()) {
      out.resize(std::min(2 * out.size(), n + 8));
    }
    const __m256 magnitudes = _mm256_and_ps(_mm256_loadu_ps(x + i), magnitude);
    const auto mask =
        static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(magnitudes, bound, _CMP_GE_OQ)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.data() + m),
                        _mm256_permutevar8x32_epi32(lanes, detail::left_pack_order(mask)));
    m += static_cast<std::size_t>(__builtin_popcount(mask));
    lanes = _mm256_add_epi32(lanes, eight);
  }
  out.resize(m);
  append_at_or_above(x, i, n, threshold, out);
}
#endif

} // namespace

void select_at_or_above(const float* x, std::size_t n, float threshold, std::vector<Index>& out) {
#ifdef GCSIM_LEFT_PACK_AVX2
  if (detail::cpu_has_avx2()) {
    select_packed_avx2(x, n, threshold, out);
    return;
  }
#endif
  select_at_or_above_portable(x, n, threshold, out);
}

void select_at_or_above_portable(const float* x, std::size_t n, float threshold,
                                 std::vector<Index>& out) {
  out.clear();
  append_at_or_above(x, 0, n, threshold, out);
}

} // namespace gcsim::compress
