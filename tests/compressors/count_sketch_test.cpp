#include "compressors/count_sketch.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <doctest/doctest.h>

namespace gc = gcsim::compress;

TEST_CASE("count sketch: a row's estimate is unbiased over seeds") {
  // Mostly positive values: a sketch without random signs would be biased upwards
  // by about sum(x)/cols, which this test would detect.
  const std::size_t d = 200;
  const std::uint32_t cols = 16;
  std::vector<float> x(d);
  gc::Xoshiro256 rng(11);
  double total_sq = 0.0;
  for (auto& v : x) {
    v = static_cast<float>(0.5 + rng.uniform());
    total_sq += static_cast<double>(v) * static_cast<double>(v);
  }
  const int seeds = 3000;
  std::vector<double> mean(d, 0.0);
  for (int s = 0; s < seeds; ++s) {
    gc::CountSketch sketch(1, cols, static_cast<std::uint64_t>(s));
    sketch.insert(x.data(), d);
    for (std::size_t i = 0; i < d; ++i) {
      mean[i] += static_cast<double>(sketch.estimate(i)) / seeds;
    }
  }
  // Var(row estimate) = sum_{j != i} x_j^2 / cols; five standard errors.
  const double se = std::sqrt(total_sq / cols / seeds);
  double worst = 0.0;
  for (std::size_t i = 0; i < d; ++i) {
    worst = std::max(worst, std::fabs(mean[i] - static_cast<double>(x[i])) / se);
  }
  CHECK(worst < 5.0);
}

TEST_CASE("count sketch: planted heavy hitters are recovered as often as theory promises") {
  // Theory (Chebyshev per row, median of rows, union bound over coordinates):
  // P(|est_i - x_i| >= V/2 in one row) <= p_i = sum_{j != i} x_j^2 / (cols (V/2)^2);
  // the median fails only if at least ceil(rows/2) rows fail. If no coordinate
  // fails, the top-H estimates are exactly the planted set.
  const std::size_t d = 10000;
  const std::size_t heavy = 10;
  const std::uint32_t rows = 7;
  const std::uint32_t cols = 2000;
  const int seeds = 200;
  int failures = 0;
  double delta = 0.0;
  for (int s = 0; s < seeds; ++s) {
    std::vector<float> x = gc::test::heavy_tailed(d, 1000 + static_cast<std::uint64_t>(s), 0.0f);
    gc::Xoshiro256 rng(static_cast<std::uint64_t>(s) + 77);
    for (auto& v : x) {
      v = static_cast<float>((rng.uniform() - 0.5) * 0.02); // small noise
    }
    std::vector<gc::Index> planted;
    for (std::size_t h = 0; h < heavy; ++h) {
      planted.push_back(static_cast<gc::Index>(h * 997 + static_cast<std::size_t>(s) % 97));
    }
    for (const auto i : planted) {
      x[i] = (i % 2 == 0) ? 1.0f : -1.0f;
    }
    std::sort(planted.begin(), planted.end());
    if (s == 0) {
      double sq = 0.0;
      for (const float v : x) {
        sq += static_cast<double>(v) * static_cast<double>(v);
      }
      const double p = std::min(1.0, sq / (cols * 0.25));
      // P(at least 4 of 7 rows fail), union over d coordinates.
      double tail = 0.0;
      for (std::uint32_t m = (rows + 1) / 2; m <= rows; ++m) {
        double c = 1.0;
        for (std::uint32_t j = 0; j < m; ++j) {
          c = c * (rows - j) / (j + 1);
        }
        tail += c * std::pow(p, m) * std::pow(1 - p, rows - m);
      }
      delta = std::min(1.0, tail * static_cast<double>(d));
    }
    gc::CountSketch sketch(rows, cols, 5000 + static_cast<std::uint64_t>(s));
    sketch.insert(x.data(), d);
    if (sketch.heavy_hitters(d, heavy) != planted) {
      ++failures;
    }
  }
  CAPTURE(delta);
  CAPTURE(failures);
  REQUIRE(delta < 0.2); // the instance is one where theory promises something
  const double rate = static_cast<double>(failures) / seeds;
  CHECK(rate <= delta + 3.0 * std::sqrt(delta * (1 - delta) / seeds));
}

TEST_CASE("count sketch: merging sketches equals sketching the sum") {
  const std::size_t d = 5000;
  const auto a = gc::test::heavy_tailed(d, 1);
  const auto b = gc::test::heavy_tailed(d, 2);
  std::vector<float> sum(d);
  for (std::size_t i = 0; i < d; ++i) {
    sum[i] = a[i] + b[i];
  }
  gc::CountSketch sa(5, 300, 9);
  gc::CountSketch sb(5, 300, 9);
  gc::CountSketch ss(5, 300, 9);
  sa.insert(a.data(), d);
  sb.insert(b.data(), d);
  ss.insert(sum.data(), d);
  sa.merge(sb);
  for (std::size_t i = 0; i < ss.table().size(); ++i) {
    CHECK(sa.table()[i] == doctest::Approx(ss.table()[i]).epsilon(1e-4).scale(0));
  }
  gc::CountSketch other_seed(5, 300, 10);
  CHECK_THROWS_AS(sa.merge(other_seed), std::invalid_argument);
  CHECK_THROWS_AS(gc::CountSketch(0, 10, 1), std::invalid_argument);
}

TEST_CASE("count sketch: deterministic for a seed, different across seeds") {
  const auto x = gc::test::heavy_tailed(1000, 3);
  gc::CountSketch s1(3, 64, 42);
  gc::CountSketch s2(3, 64, 42);
  gc::CountSketch s3(3, 64, 43);
  s1.insert(x.data(), x.size());
  s2.insert(x.data(), x.size());
  s3.insert(x.data(), x.size());
  CHECK(s1.table() == s2.table());
  CHECK(s1.table() != s3.table());
  // Inserting in two pieces with offsets equals inserting at once.
  gc::CountSketch s4(3, 64, 42);
  s4.insert(x.data(), 400);
  s4.insert(x.data() + 400, 600, 400);
  for (std::size_t i = 0; i < s1.table().size(); ++i) {
    CHECK(s4.table()[i] == doctest::Approx(s1.table()[i]).epsilon(1e-5).scale(0));
  }
}

TEST_CASE("count sketch: the estimate is the (lower) median of the row estimates") {
  const auto x = gc::test::heavy_tailed(3000, 12);
  for (const std::uint32_t rows : {1U, 2U, 3U, 4U, 5U, 7U}) {
    CAPTURE(rows);
    gc::CountSketch sketch(rows, 50, 4);
    sketch.insert(x.data(), x.size());
    std::vector<float> all;
    sketch.estimate_all(x.size(), all);
    for (std::size_t i = 0; i < x.size(); i += 37) {
      std::vector<float> r;
      for (std::uint32_t j = 0; j < rows; ++j) {
        r.push_back(sketch.row_estimate(j, i));
      }
      std::sort(r.begin(), r.end());
      // Even rows: the lower middle value, torch.median's (the references').
      const float median = r[(rows - 1) / 2];
      CHECK(sketch.estimate(i) == median);
      CHECK(all[i] == median);
    }
  }
}
