// The threshold select, dispatched (AVX2 packing where the CPU has it) and
// portable, against the definition, at every kept share and tail length.
#include "compressors/threshold_estimator.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <doctest/doctest.h>

namespace gc = gcsim::compress;

namespace {

std::vector<gc::Index> definition(const std::vector<float>& x, float threshold) {
  std::vector<gc::Index> kept;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::fabs(x[i]) >= threshold) {
      kept.push_back(static_cast<gc::Index>(i));
    }
  }
  return kept;
}

void check_both(const std::vector<float>& x, float threshold) {
  const auto expected = definition(x, threshold);
  // Start from stale contents, as a compressor's reused buffer has.
  std::vector<gc::Index> got(3, 7);
  gc::select_at_or_above(x.data(), x.size(), threshold, got);
  CHECK(got == expected);
  std::vector<gc::Index> portable(5, 9);
  gc::select_at_or_above_portable(x.data(), x.size(), threshold, portable);
  CHECK(portable == expected);
  CHECK(gc::count_at_or_above(x.data(), x.size(), threshold) == expected.size());
}

// The |x| that about `share` of x reach.
float quantile(const std::vector<float>& x, double share) {
  std::vector<float> magnitudes(x.size());
  std::transform(x.begin(), x.end(), magnitudes.begin(), [](float v) { return std::fabs(v); });
  const auto rank = std::min(magnitudes.size() - 1,
                             static_cast<std::size_t>(share * static_cast<double>(x.size())));
  std::nth_element(magnitudes.begin(), magnitudes.begin() + static_cast<std::ptrdiff_t>(rank),
                   magnitudes.end(), std::greater<>());
  return magnitudes[rank];
}

} // namespace

TEST_CASE("the threshold select keeps exactly the |x| at or above the threshold") {
  // Tails of 0 to 7 past the last block of 8, and sizes that make the packed
  // output grow several times.
  for (const std::size_t n : {1UL, 7UL, 8UL, 1000UL, 1027UL, 40001UL, 300000UL}) {
    const auto x = gc::test::heavy_tailed(n, n + 11);
    for (const double share : {0.0, 0.001, 0.01, 0.1, 0.5, 1.0}) {
      CAPTURE(n);
      CAPTURE(share);
      check_both(x, quantile(x, share));
    }
    check_both(x, 0.0f);
    check_both(x, std::numeric_limits<float>::infinity());
  }
}

TEST_CASE("the threshold select on zeros, infinities and NaN") {
  std::vector<float> x(1003, 0.0f);
  for (std::size_t i = 0; i < x.size(); i += 2) {
    x[i] = -0.0f;
  }
  x[5] = std::numeric_limits<float>::infinity();
  x[17] = -std::numeric_limits<float>::infinity();
  x[100] = std::numeric_limits<float>::quiet_NaN();
  x[1001] = -std::numeric_limits<float>::quiet_NaN();
  x[999] = std::numeric_limits<float>::denorm_min();
  for (const float threshold :
       {0.0f, std::numeric_limits<float>::denorm_min(), 1.0f,
        std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    CAPTURE(threshold);
    check_both(x, threshold);
  }
  std::vector<gc::Index> got;
  gc::select_at_or_above(x.data(), x.size(), 0.0f, got);
  CHECK(got.size() == x.size() - 2); // every element but the two NaN
}

TEST_CASE("a threshold sampled from as many samples as elements is the exact one") {
  // The elements themselves, not n draws with replacement (which leave about
  // a third out): the 10th largest |x| of 1000, for any seed.
  const std::vector<float> x = gcsim::compress::test::heavy_tailed(1000, 17);
  std::vector<float> magnitudes(x.size());
  std::transform(x.begin(), x.end(), magnitudes.begin(), [](float v) { return std::fabs(v); });
  std::sort(magnitudes.begin(), magnitudes.end(), std::greater<>());
  const float exact = magnitudes[9];
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    const gc::ThresholdEstimate est = gc::estimate_threshold(x.data(), x.size(), 0.01, 1000, seed);
    CHECK(est.samples == 1000);
    CHECK(est.threshold == exact);
  }
}
