#include "compressors/bin_packing.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <doctest/doctest.h>

namespace gc = gcsim::compress;

namespace {

double brute_force_makespan(const std::vector<double>& costs, std::size_t bins) {
  std::size_t combos = 1;
  for (std::size_t i = 0; i < costs.size(); ++i) {
    combos *= bins;
  }
  double best = std::numeric_limits<double>::infinity();
  std::vector<double> loads(bins);
  for (std::size_t c = 0; c < combos; ++c) {
    std::fill(loads.begin(), loads.end(), 0.0);
    std::size_t code = c;
    for (const double cost : costs) {
      loads[code % bins] += cost;
      code /= bins;
    }
    best = std::min(best, *std::max_element(loads.begin(), loads.end()));
  }
  return best;
}

} // namespace

TEST_CASE("LPT makespan is within 4/3 of the optimum on small instances (brute force)") {
  gc::Xoshiro256 rng(5);
  double worst_ratio = 0.0;
  for (int instance = 0; instance < 150; ++instance) {
    const std::size_t items = 4 + rng.below(5); // 4..8
    const std::size_t bins = 2 + rng.below(2);  // 2..3
    std::vector<double> costs(items);
    for (auto& c : costs) {
      c = 1.0 + static_cast<double>(rng.below(20));
    }
    const gc::BinPacking packing = gc::lpt_pack(costs, bins);
    // Every item placed exactly once, loads add up.
    std::vector<std::size_t> seen;
    for (std::size_t b = 0; b < bins; ++b) {
      double load = 0.0;
      for (const auto item : packing.bins[b]) {
        seen.push_back(item);
        load += costs[item];
      }
      CHECK(load == doctest::Approx(packing.loads[b]).scale(0));
    }
    std::sort(seen.begin(), seen.end());
    std::vector<std::size_t> all(items);
    std::iota(all.begin(), all.end(), 0);
    CHECK(seen == all);
    const double opt = brute_force_makespan(costs, bins);
    const double ratio = packing.makespan() / opt;
    worst_ratio = std::max(worst_ratio, ratio);
    CHECK(ratio <= 4.0 / 3.0 - 1.0 / (3.0 * static_cast<double>(bins)) + 1e-12);
  }
  CHECK(worst_ratio > 1.0); // the instances are not all trivial
  CHECK_THROWS_AS(gc::lpt_pack({1.0}, 0), std::invalid_argument);
}

TEST_CASE("DEFT partitions are disjoint, contiguous, and cover every layer") {
  const auto layout = gc::LayerLayout::from_sizes({864, 32, 18432, 64, 100, 401408, 512, 5130, 10});
  for (const std::size_t P : {1UL, 2UL, 3UL, 4UL, 8UL, 16UL, 96UL}) {
    CAPTURE(P);
    const auto parts = gc::deft_partitions(layout, P);
    std::size_t next = 0;
    const double threshold = static_cast<double>(layout.total()) / static_cast<double>(P);
    for (const auto& p : parts) {
      CHECK(p.offset == next); // in order, no gap, no overlap
      CHECK(p.size > 0);
      const auto& layer = layout[p.layer];
      CHECK(p.offset >= layer.offset);
      CHECK(p.offset + p.size <= layer.offset + layer.size);
      next = p.offset + p.size;
    }
    CHECK(next == layout.total());
    for (std::size_t l = 0; l < layout.size(); ++l) {
      const auto chunks = static_cast<std::size_t>(std::count_if(
          parts.begin(), parts.end(), [l](const gc::Partition& p) { return p.layer == l; }));
      const bool big = static_cast<double>(layout[l].size) > threshold;
      CHECK(chunks == (big ? std::min(P, layout[l].size) : 1));
    }
  }
  // A layer of exactly d/P is not cut: only larger ones are.
  CHECK(gc::deft_partitions(gc::LayerLayout::from_sizes({4, 4}), 2).size() == 2);
  CHECK(gc::deft_partitions(gc::LayerLayout::from_sizes({5, 3}), 2).size() == 3);
  // The first size mod P chunks are one element longer.
  const auto parts = gc::deft_partitions(gc::LayerLayout::from_sizes({10, 1}), 4);
  REQUIRE(parts.size() == 5);
  CHECK(parts[0].size == 3);
  CHECK(parts[1].size == 3);
  CHECK(parts[2].size == 2);
  CHECK(parts[3].size == 2);
  CHECK(parts[4].size == 1);
}

TEST_CASE("DEFT per-partition k sum to k and respect partition sizes") {
  gc::Xoshiro256 rng(8);
  for (int instance = 0; instance < 200; ++instance) {
    const std::size_t L = 1 + rng.below(40);
    std::vector<std::size_t> sizes(L);
    std::vector<double> norms(L);
    std::size_t d = 0;
    for (std::size_t p = 0; p < L; ++p) {
      sizes[p] = 1 + rng.below(500);
      norms[p] = rng.below(4) == 0 ? 0.0 : rng.uniform() * 10;
      d += sizes[p];
    }
    const std::size_t k = L + rng.below(d - L + 1); // L <= k <= d
    const auto ks = gc::deft_allocate_k(norms, sizes, k);
    CAPTURE(instance);
    CHECK(std::accumulate(ks.begin(), ks.end(), std::size_t{0}) == k);
    for (std::size_t p = 0; p < L; ++p) {
      CHECK(ks[p] >= 1);
      CHECK(ks[p] <= sizes[p]);
    }
  }
  // The worked rule: norms 3 and 1, k = 8 over two partitions of 100: 6 and 2.
  CHECK(gc::deft_allocate_k({1.0, 3.0}, {100, 100}, 8) == std::vector<std::size_t>{2, 6});
  // Fewer k than partitions: each still gets one (the total exceeds k, as in the reference).
  CHECK(gc::deft_allocate_k({1.0, 1.0, 1.0}, {5, 5, 5}, 2) == std::vector<std::size_t>{1, 1, 1});
  // An infinite norm outweighs the finite ones (inf / inf was NaN, cast to an
  // integer: undefined, a sanitizer error); the total is still k.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(gc::deft_allocate_k({1.0, inf, 2.0}, {10, 10, 10}, 6) == std::vector<std::size_t>{1, 4, 1});
  // Two infinite ones: 9 / 2 rounds down to 4, the second takes the other 5,
  // and the floor of the finite one is taken back from the first.
  CHECK(gc::deft_allocate_k({inf, 5.0, inf}, {10, 10, 10}, 9) == std::vector<std::size_t>{3, 1, 5});
}
