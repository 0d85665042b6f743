// 16-bit float conversions, IEEE 754 binary16 (float16) and bfloat16: what a
// value sent or stored in half precision becomes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gcsim::compress {

/// float32 to binary16, rounded to nearest even, with subnormals,
/// infinities and NaN (NaN keeps a payload bit).
std::uint16_t float_to_half(float value);

/// binary16 to float32, exact (subnormals, infinities and NaN kept).
float half_to_float(std::uint16_t half);

/// `value` rounded to the nearest float16, as a float.
inline float round_to_half(float value) {
  return half_to_float(float_to_half(value));
}

/// float32 to bfloat16 (float32's sign, exponent and top 7 mantissa bits),
/// rounded to nearest even as PyTorch's round_to_nearest_even; NaN stays NaN.
std::uint16_t float_to_bfloat16(float value);

/// bfloat16 to float32, exact.
float bfloat16_to_float(std::uint16_t value);

/// `value` rounded to the nearest bfloat16, as a float.
inline float round_to_bfloat16(float value) {
  return bfloat16_to_float(float_to_bfloat16(value));
}

/// out[i] = round_to_half(x[i]) for i < n (out may be x), 8 at a time with
/// F16C where the CPU has it; the portable loop's results, bit for bit
/// (NaN payloads aside: no gradient gcsim reads holds a NaN).
void round_to_half(const float* x, std::size_t n, float* out);
/// The same, one at a time, without F16C.
void round_to_half_portable(const float* x, std::size_t n, float* out);

/// out[i] = float_to_half(x[i]) for i < n: a tensor cast to float16 (what
/// the cost model's fp16_cast kernel is calibrated on), 8 at a time with
/// F16C where the CPU has it, bit for bit as one at a time.
void float_to_half(const float* x, std::size_t n, std::uint16_t* out);

/// out[i] = round_to_bfloat16(x[i]) for i < n (out may be x).
void round_to_bfloat16(const float* x, std::size_t n, float* out);

} // namespace gcsim::compress
