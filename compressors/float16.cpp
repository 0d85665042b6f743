#include "compressors/float16.hpp"

#include <cstring>

// __builtin_cpu_supports("f16c") is GCC's from 11 on (Debian 12 has 12).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define GCSIM_F16C 1
#include <immintrin.h>
#endif

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

namespace {

// The float32 bits of `bits` rounded to bfloat16 (its low 16 bits 0),
// without a branch, so that a loop of it takes 8 at a time.
inline std::uint32_t bfloat16_rounded(std::uint32_t bits) {
  // Adding 0x7FFF, plus the lowest kept bit, carries into the kept bits
  // exactly when the dropped half is above the midpoint, or at it and odd.
  const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  const bool nan = (bits & 0x7FFFFFFFu) > 0x7F800000u; // a quiet NaN, its sign kept
  return nan ? ((bits | 0x00400000u) & 0xFFFF0000u) : rounded;
}

} // namespace

std::uint16_t float_to_bfloat16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<std::uint16_t>(bfloat16_rounded(bits) >> 16);
}

float bfloat16_to_float(std::uint16_t value) {
  const std::uint32_t bits = static_cast<std::uint32_t>(value) << 16;
  float result = 0;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

namespace {

#ifdef GCSIM_F16C
bool cpu_has_f16c() {
  static const bool has = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return has;
}

// The CPU's conversions round to nearest even, with subnormals and
// infinities, as float_to_half does (NaN payloads aside, which no gradient
// gcsim reads holds).
__attribute__((target("avx,f16c"))) void round_to_half_f16c(const float* x, std::size_t n,
                                                            float* out) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(half));
  }
  round_to_half_portable(x + i, n - i, out + i);
}

__attribute__((target("avx,f16c"))) void float_to_half_f16c(const float* x, std::size_t n,
                                                            std::uint16_t* out) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), half);
  }
  for (; i < n; ++i)
    out[i] = float_to_half(x[i]);
}
#endif

} // namespace

void float_to_half(const float* x, std::size_t n, std::uint16_t* out) {
#ifdef GCSIM_F16C
  if (cpu_has_f16c()) {
    float_to_half_f16c(x, n, out);
    return;
  }
#endif
  for (std::size_t i = 0; i < n; ++i)
    out[i] = float_to_half(x[i]);
}

void round_to_half_portable(const float* x, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = round_to_half(x[i]);
}

void round_to_half(const float* x, std::size_t n, float* out) {
#ifdef GCSIM_F16C
  if (cpu_has_f16c()) {
    round_to_half_f16c(x, n, out);
    return;
  }
#endif
  round_to_half_portable(x, n, out);
}

void round_to_bfloat16(const float* x, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    bits = bfloat16_rounded(bits);
    std::memcpy(out + i, &bits, sizeof bits);
  }
}

} // namespace gcsim::compress
