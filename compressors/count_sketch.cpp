#include "compressors/count_sketch.hpp"

#include "compressors/compressor.hpp"
#include "compressors/rng.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace gcsim::compress {
namespace {
// v with its sign flipped when the hash's top bit is set, without a branch (the
// bit is a coin flip, so a branch would mispredict half the time).
inline float signed_by(std::uint64_t h, float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits ^= static_cast<std::uint32_t>(h >> 63) << 31;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
} // namespace

std::uint32_t sketch_columns(std::uint32_t columns, std::size_t d, double density) {
  if (columns != 0)
    return columns;
  constexpr std::size_t kMaxColumns = std::size_t{1} << 31;
  return static_cast<std::uint32_t>(std::min(10 * k_for_density(d, density), kMaxColumns));
}

CountSketch::CountSketch(std::uint32_t rows, std::uint32_t cols, std::uint64_t seed)
    : rows_(rows), cols_(cols), seed_(seed) {
  if (rows == 0 || cols == 0) {
    throw std::invalid_argument("count sketch: rows and columns must be positive");
  }
  std::uint64_t state = seed;
  for (std::uint32_t r = 0; r < rows; ++r) {
    row_keys_.push_back(splitmix64(state));
  }
  table_.assign(static_cast<std::size_t>(rows) * cols, 0.0f);
}

std::uint64_t CountSketch::hash(std::uint32_t row, std::size_t i) const {
  std::uint64_t z = (static_cast<std::uint64_t>(i) ^ row_keys_[row]) * 0x9E3779B97F4A7C15ULL;
  z ^= z >> 29;
  z *= 0xBF58476D1CE4E5B9ULL;
  z ^= z >> 32;
  return z;
}

void CountSketch::insert(const float* x, std::size_t n, std::size_t offset) {
  // Row by row, so one row of counters stays in cache while the input streams.
  for (std::uint32_t r = 0; r < rows_; ++r) {
    float* row = table_.data() + static_cast<std::size_t>(r) * cols_;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t h = hash(r, offset + i);
      row[bucket(h)] += signed_by(h, x[i]);
    }
  }
}

void CountSketch::add(std::size_t i, float value) {
  insert(&value, 1, i);
}

void CountSketch::merge(const CountSketch& other) {
  if (other.rows_ != rows_ || other.cols_ != cols_ || other.seed_ != seed_) {
    throw std::invalid_argument("count sketch: merging sketches of different shape or seed");
  }
  for (std::size_t i = 0; i < table_.size(); ++i) {
    table_[i] += other.table_[i];
  }
}

void CountSketch::clear() {
  std::fill(table_.begin(), table_.end(), 0.0f);
}

float CountSketch::row_estimate(std::uint32_t row, std::size_t i) const {
  const std::uint64_t h = hash(row, i);
  return signed_by(h, table_[static_cast<std::size_t>(row) * cols_ + bucket(h)]);
}

namespace {
inline void sort2(float& a, float& b) {
  const float lo = std::min(a, b);
  b = std::max(a, b);
  a = lo;
}

// Median of a few values: branch-free networks for 3 and 5 rows (the common
// sizes), insertion sort otherwise; no allocation either way. Of an even
// number the lower middle value, as the reference sketches' torch.median
// returns (csvec; an average would be an estimate neither reference makes).
float median_in_place(float* v, std::size_t n) {
  if (n == 5) {
    sort2(v[0], v[1]);
    sort2(v[3], v[4]);
    sort2(v[2], v[4]);
    sort2(v[2], v[3]);
    sort2(v[0], v[3]);
    sort2(v[0], v[2]);
    sort2(v[1], v[4]);
    sort2(v[1], v[3]);
    sort2(v[1], v[2]);
    return v[2];
  }
  if (n == 3) {
    return std::max(std::min(v[0], v[1]), std::min(std::max(v[0], v[1]), v[2]));
  }
  for (std::size_t i = 1; i < n; ++i) {
    const float x = v[i];
    std::size_t j = i;
    for (; j > 0 && v[j - 1] > x; --j) {
      v[j] = v[j - 1];
    }
    v[j] = x;
  }
  return v[(n - 1) / 2];
}
} // namespace

float CountSketch::estimate(std::size_t i) const {
  constexpr std::uint32_t kStack = 64;
  float v[kStack];
  std::vector<float> heap;
  float* buf = v;
  if (rows_ > kStack) {
    heap.resize(rows_);
    buf = heap.data();
  }
  for (std::uint32_t r = 0; r < rows_; ++r) {
    buf[r] = row_estimate(r, i);
  }
  return median_in_place(buf, rows_);
}

void CountSketch::estimate_all(std::size_t d, std::vector<float>& out) const {
  out.resize(d);
  if (rows_ == 1) {
    for (std::size_t i = 0; i < d; ++i) {
      out[i] = row_estimate(0, i);
    }
    return;
  }
  // Blocks of coordinates: each row's estimates for the block, then medians.
  constexpr std::size_t kBlock = 4096;
  std::vector<float> per_row(static_cast<std::size_t>(rows_) * kBlock);
  std::vector<float> v(rows_);
  for (std::size_t base = 0; base < d; base += kBlock) {
    const std::size_t m = std::min(kBlock, d - base);
    for (std::uint32_t r = 0; r < rows_; ++r) {
      float* dst = per_row.data() + static_cast<std::size_t>(r) * kBlock;
      for (std::size_t i = 0; i < m; ++i) {
        dst[i] = row_estimate(r, base + i);
      }
    }
    for (std::size_t i = 0; i < m; ++i) {
      for (std::uint32_t r = 0; r < rows_; ++r) {
        v[r] = per_row[static_cast<std::size_t>(r) * kBlock + i];
      }
      out[base + i] = median_in_place(v.data(), v.size());
    }
  }
}

std::vector<Index> CountSketch::heavy_hitters(std::size_t d, std::size_t k) const {
  std::vector<float> est;
  estimate_all(d, est);
  return topk_indices(est.data(), d, std::min(k, d));
}

} // namespace gcsim::compress
