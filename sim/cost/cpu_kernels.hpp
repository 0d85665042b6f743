#pragma once
// The simple kernels compressors/ does not expose as functions, written as the
// plain loops a compressor would run. They exist to be timed by the CPU
// calibration; each one touches exactly the memory its GPU counterpart would.

#include <cstddef>
#include <cstdint>

namespace gcsim::cost::cpu {

/// The squared L2 norm: the l2_norm kernel's work (a square root more is nothing).
double sum_of_squares(const float* x, std::size_t n);
void gather(const float* x, const std::uint32_t* index, std::size_t n, float* out);
void scatter_add(const float* values, const std::uint32_t* index, std::size_t n, float* y);
void sparse_pack(const float* x, const std::uint32_t* index, std::size_t n,
                 std::uint32_t* out_index, float* out_values);
void sparse_unpack(const std::uint32_t* index, const float* values, std::size_t n, float* y);
void dense_add(const float* x, std::size_t n, float* y);
void dense_scale(float a, std::size_t n, float* y);
/// m = mu m + g; w -= lr m.
void sgd_momentum(const float* g, std::size_t n, float lr, float mu, float* w, float* m);

} // namespace gcsim::cost::cpu
