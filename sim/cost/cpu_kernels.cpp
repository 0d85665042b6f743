#include "sim/cost/cpu_kernels.hpp"

#include <cstring>

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

std::uint16_t to_fp16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) // infinity or NaN (NaN keeps a payload bit)
    return static_cast<std::uint16_t>(sign | 0x7C00u | (magnitude > 0x7F800000u ? 0x200u : 0u));
  if (magnitude >= 0x477FF000u) // rounds to >= 65520: overflow to infinity
    return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (magnitude < 0x38800000u) { // below 2^-14: subnormal half (or zero)
    if (magnitude < 0x33000000u) // below half the smallest subnormal
      return static_cast<std::uint16_t>(sign);
    const std::uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - static_cast<int>(magnitude >> 23); // 14..24
    const std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    const std::uint32_t rounded =
        half + ((rest > halfway || (rest == halfway && (half & 1))) ? 1 : 0);
    return static_cast<std::uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent (127 -> 15) and round the mantissa to 10 bits.
  const std::uint32_t rebased = magnitude - 0x38000000u;
  const std::uint32_t rounded = rebased + 0xFFFu + ((rebased >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

void fp16_cast(const float* x, std::size_t n, std::uint16_t* out) {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = to_fp16(x[i]);
}

void sgd_momentum(const float* g, std::size_t n, float lr, float mu, float* w, float* m) {
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = mu * m[i] + g[i];
    w[i] -= lr * m[i];
  }
}

} // namespace gcsim::cost::cpu
