// Count Sketch (Charikar, Chen, Farach-Colton 2002): r rows of c signed counters.
#pragma once

#include "compressors/topk.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gcsim::compress {

// Each row j hashes coordinate i to a bucket h_j(i) in [0, c) and a sign
// s_j(i) in {-1, +1}; inserting x adds s_j(i) * x_i to bucket h_j(i) of every
// row. A row's estimate s_j(i) * table[j][h_j(i)] is unbiased for x_i; the
// sketch's estimate is the median over rows. The sketch is linear: the sum of
// two sketches (same shape and seed) is the sketch of the sum.
//
// Hashing: one 64-bit key per row from splitmix64(seed, row); a coordinate's
// bucket and sign come from a 64-bit multiply-xorshift mix of (i, row key) —
// not a k-wise independent family, but deterministic, fast and well mixed,
// which the tests check statistically.
// The width of gs-SGD's and Sketched-SGD's sketch of d elements: their
// `columns` parameter, or when it is 0, 10 k of the density's k (our default,
// not the papers'), at most 2^31 like the parameter itself.
std::uint32_t sketch_columns(std::uint32_t columns, std::size_t d, double density);

class CountSketch {
public:
  // Throws std::invalid_argument if rows or cols is 0.
  CountSketch(std::uint32_t rows, std::uint32_t cols, std::uint64_t seed);

  std::uint32_t rows() const { return rows_; }
  std::uint32_t cols() const { return cols_; }
  std::uint64_t seed() const { return seed_; }
  const std::vector<float>& table() const { return table_; }

  // Adds x[0,n) as coordinates offset .. offset+n-1.
  void insert(const float* x, std::size_t n, std::size_t offset = 0);
  void add(std::size_t i, float value);
  // this += other; throws std::invalid_argument unless shape and seed match.
  void merge(const CountSketch& other);
  void clear();

  float row_estimate(std::uint32_t row, std::size_t i) const;
  float estimate(std::size_t i) const;
  // Estimates of coordinates 0 .. d-1.
  void estimate_all(std::size_t d, std::vector<float>& out) const;
  // The k coordinates of [0, d) with the largest |estimate| (ascending indices;
  // ties to the lower index).
  std::vector<Index> heavy_hitters(std::size_t d, std::size_t k) const;

private:
  std::uint64_t hash(std::uint32_t row, std::size_t i) const;
  std::size_t bucket(std::uint64_t h) const {
    return static_cast<std::size_t>(((h & 0xFFFFFFFFULL) * cols_) >> 32);
  }

  std::uint32_t rows_;
  std::uint32_t cols_;
  std::uint64_t seed_;
  std::vector<std::uint64_t> row_keys_;
  std::vector<float> table_;
};

} // namespace gcsim::compress
