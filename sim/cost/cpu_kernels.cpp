#include "sim/cost/cpu_kernels.hpp"

namespace gcsim::cost::cpu {

double sum_of_squares(const float* x, std::size_t n) {
  // Eight partial sums let the compiler vectorize without -ffast-math, as a
  // GPU's tree reduction does.
  float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t lane = 0; lane < 8; ++lane)
      partial[lane] += x[i + lane] * x[i + lane];
  double sum = 0;
  for (float p : partial)
    sum += static_cast<double>(p);
  for (; i < n; ++i)
    sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return sum;
}

void gather(const float* x, const std::uint32_t* index, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = x[index[i]];
}

void scatter_add(const float* values, const std::uint32_t* index, std::size_t n, float* y) {
  for (std::size_t i = 0; i < n; ++i)
    y[index[i]] += values[i];
}

void sparse_pack(const float* x, const std::uint32_t* index, std::size_t n,
                 std::uint32_t* out_index, float* out_values) {
  for (std::size_t i = 0; i < n; ++i) {
    out_index[i] = index[i];
    out_values[i] = x[index[i]];
  }
}

void sparse_unpack(const std::uint32_t* index, const float* values, std::size_t n, float* y) {
  for (std::size_t i = 0; i < n; ++i)
    y[index[i]] = values[i];
}

void dense_add(const float* x, std::size_t n, float* y) {
  for (std::size_t i = 0; i < n; ++i)
    y[i] += x[i];
}

void dense_scale(float a, std::size_t n, float* y) {
  for (std::size_t i = 0; i < n; ++i)
    y[i] *= a;
}

void sgd_momentum(const float* g, std::size_t n, float lr, float mu, float* w, float* m) {
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = mu * m[i] + g[i];
    w[i] -= lr * m[i];
  }
}

} // namespace gcsim::cost::cpu
