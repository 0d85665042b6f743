#include "compressors/topk.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <doctest/doctest.h>

namespace gc = gcsim::compress;

namespace {

// The definition: sort all indices by (|x| descending, index ascending), take k.
std::vector<gc::Index> brute_force(const std::vector<float>& x, std::size_t k) {
  std::vector<gc::Index> order(x.size());
  std::iota(order.begin(), order.end(), gc::Index{0});
  std::stable_sort(order.begin(), order.end(),
                   [&x](gc::Index a, gc::Index b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

// The dispatched path (AVX2 packing where the CPU has it), the portable one
// and the radix one all give the definition's answer.
void check_all(const std::vector<float>& x, std::size_t k) {
  const auto expected = brute_force(x, k);
  CHECK(gc::topk_indices(x.data(), x.size(), k) == expected);
  std::vector<gc::Index> portable;
  gc::topk_indices_portable(x.data(), x.size(), k, portable);
  CHECK(portable == expected);
  std::vector<gc::Index> radix;
  gc::topk_indices_radix(x.data(), x.size(), k, radix);
  CHECK(radix == expected);
}

} // namespace

TEST_CASE("top-k equals a brute-force sort on random heavy-tailed inputs") {
  // 1000 is the radix path's; 1024 is the sampled path's smallest (256 keys at
  // stride 4), 2000 and 8192 keep 256 keys at strides 7 and 32.
  for (const std::size_t n :
       {1UL, 7UL, 1000UL, 1024UL, 2000UL, 8192UL, 40000UL, 70000UL, 300000UL}) {
    const auto x = gc::test::heavy_tailed(n, n);
    for (const double density : {0.0, 0.0001, 0.001, 0.01, 0.1, 0.5, 1.0}) {
      const auto k = static_cast<std::size_t>(density * static_cast<double>(n));
      CAPTURE(n);
      CAPTURE(k);
      check_all(x, k);
    }
  }
}

TEST_CASE("top-k on adversarial inputs: ties, all equal, signs, zeros, infinities") {
  const std::size_t n = 100000;
  SUBCASE("all equal: the lowest indices win") {
    std::vector<float> x(n, -0.5f);
    for (const std::size_t k : {0UL, 1UL, 99UL, 5000UL, n}) {
      check_all(x, k);
    }
    const auto got = gc::topk_indices(x.data(), n, 3);
    CHECK(got == std::vector<gc::Index>{0, 1, 2});
  }
  SUBCASE("few distinct magnitudes, mixed signs (ties straddle the threshold)") {
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i % 5) * ((i % 2 == 0) ? 1.0f : -1.0f);
    }
    for (const std::size_t k : {1UL, 100UL, 20000UL, 20001UL, 50000UL}) {
      check_all(x, k);
    }
  }
  SUBCASE("mostly zeros, +0 and -0 tie") {
    std::vector<float> x(n, 0.0f);
    for (std::size_t i = 0; i < n; i += 2) {
      x[i] = -0.0f;
    }
    x[777] = 1e-30f;
    x[99999] = -1e-30f;
    for (const std::size_t k : {1UL, 2UL, 3UL, 100UL}) {
      check_all(x, k);
    }
  }
  SUBCASE("infinities and denormals") {
    auto x = gc::test::heavy_tailed(n, 3);
    x[10] = std::numeric_limits<float>::infinity();
    x[20] = -std::numeric_limits<float>::infinity();
    x[30] = std::numeric_limits<float>::denorm_min();
    for (const std::size_t k : {1UL, 2UL, 3UL, 1000UL}) {
      check_all(x, k);
    }
  }
  SUBCASE("a sorted ramp defeats a strided sample's estimate") {
    // Magnitudes grow with the index, and the large tail is short, so the sample
    // bound can be too high: the fallback must still be exact.
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i);
    }
    for (std::size_t i = n - 50; i < n; ++i) {
      x[i] = 1e9f;
    }
    check_all(x, 60);
    check_all(x, 5000);
  }
}

TEST_CASE("top-k rejects NaN and k > n") {
  auto x = gc::test::heavy_tailed(200000, 5);
  CHECK_THROWS_AS(gc::topk_indices(x.data(), x.size(), x.size() + 1), std::invalid_argument);
  x[123456] = std::numeric_limits<float>::quiet_NaN();
  std::vector<gc::Index> out;
  for (const std::size_t k : {0UL, 1UL, 100UL, 2000UL, 100000UL, 200000UL}) {
    CAPTURE(k);
    CHECK_THROWS_AS(gc::topk_indices(x.data(), x.size(), k), std::invalid_argument);
    CHECK_THROWS_AS(gc::topk_indices_portable(x.data(), x.size(), k, out), std::invalid_argument);
  }
  std::vector<float> small = {1.0f, -std::numeric_limits<float>::quiet_NaN(), 2.0f};
  CHECK_THROWS_WITH_AS(gc::topk_indices(small.data(), small.size(), 1),
                       doctest::Contains("1 is NaN"), std::invalid_argument);
}

TEST_CASE("the NaN check names the first NaN, in any block and in the tail") {
  // check_no_nan tests blocks of 4096 at once: a NaN at a block's first or
  // last element, or in the partial block at the end, must still be found,
  // and infinities are not NaN.
  std::vector<float> x(3 * 4096 + 100, 1.0f);
  x[0] = std::numeric_limits<float>::infinity();
  x[5000] = -std::numeric_limits<float>::infinity();
  CHECK_NOTHROW(gc::check_no_nan(x.data(), x.size()));
  for (const std::size_t at : {0UL, 4095UL, 4096UL, 8191UL, 12288UL, 12387UL}) {
    CAPTURE(at);
    std::vector<float> y = x;
    const float not_a_number = std::numeric_limits<float>::quiet_NaN();
    y[at] = at % 2 == 0 ? not_a_number : -not_a_number; // either sign
    if (at + 7 < y.size())
      y[at + 7] = not_a_number; // a later one is not named
    CHECK_THROWS_WITH_AS(gc::check_no_nan(y.data(), y.size()),
                         doctest::Contains(("element " + std::to_string(at) + " is NaN").c_str()),
                         std::invalid_argument);
  }
}
