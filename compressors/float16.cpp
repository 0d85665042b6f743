#include "compressors/float16.hpp"

#include <cstring>

namespace gcsim::compress {

std::uint16_t float_to_half(float value) {
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

float half_to_float(std::uint16_t half) {
  std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
  std::uint32_t exponent = (half >> 10) & 0x1fu;
  std::uint32_t mantissa = half & 0x3ffu;
  std::uint32_t bits = 0;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13); // infinity or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13); // 127 - 15 = 112
  } else if (mantissa != 0) {
    // Subnormal half: renormalise into a normal float.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    bits = sign | (static_cast<std::uint32_t>(113 - shift) << 23) | (mantissa << 13);
  } else {
    bits = sign; // signed zero
  }
  float value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

std::uint16_t float_to_bfloat16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) // NaN: a quiet one, its sign kept
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  // Adding 0x7FFF, plus the lowest kept bit, carries into the kept bits
  // exactly when the dropped half is above the midpoint, or at it and odd.
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float bfloat16_to_float(std::uint16_t value) {
  const std::uint32_t bits = static_cast<std::uint32_t>(value) << 16;
  float result = 0;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

} // namespace gcsim::compress
