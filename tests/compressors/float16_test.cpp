#include "compressors/float16.hpp"

#include <cmath>
#include <cstdint>

#include <doctest/doctest.h>

using gcsim::compress::bfloat16_to_float;
using gcsim::compress::float_to_bfloat16;
using gcsim::compress::float_to_half;
using gcsim::compress::half_to_float;
using gcsim::compress::round_to_bfloat16;
using gcsim::compress::round_to_half;

TEST_CASE("float to half rounds to nearest even, with subnormals and infinities") {
  CHECK(float_to_half(0.0f) == 0x0000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(0.1f) == 0x2E66);
  CHECK(float_to_half(65504.0f) == 0x7BFF);
  CHECK(float_to_half(65520.0f) == 0x7C00);                         // rounds up to infinity
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);            // smallest subnormal
  CHECK(float_to_half(std::ldexp(1.0f, -14)) == 0x0400);            // smallest normal
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);     // tie to even (down)
  CHECK(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02); // tie to even (up)
  CHECK(float_to_half(std::ldexp(1.0f, -26)) == 0x0000);            // below half a subnormal
  CHECK(float_to_half(INFINITY) == 0x7C00);
  CHECK((float_to_half(NAN) & 0x7C00) == 0x7C00);
  CHECK((float_to_half(NAN) & 0x03FF) != 0);
}

TEST_CASE("half to float is exact for special values") {
  CHECK(half_to_float(0x3c00) == 1.0f);
  CHECK(half_to_float(0xc000) == -2.0f);
  CHECK(half_to_float(0x7bff) == 65504.0f);
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24)); // smallest subnormal
  CHECK(half_to_float(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(std::signbit(half_to_float(0x8000)));
  CHECK(std::isinf(half_to_float(0x7c00)));
  CHECK(std::isnan(half_to_float(0x7e00)));
}

TEST_CASE("every float16 survives the round trip, and rounding picks the nearer neighbour") {
  int mismatches = 0;
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto half = static_cast<std::uint16_t>(bits);
    const float value = half_to_float(half);
    if (std::isnan(value))
      continue;
    if (float_to_half(value) != half)
      ++mismatches;
    // Between two neighbours (positive, finite, below the largest) a value
    // just under their midpoint goes down and one just over it goes up.
    if (bits < 0x7BFF) {
      const float next = half_to_float(static_cast<std::uint16_t>(bits + 1));
      const float middle = value + (next - value) / 2;
      if (round_to_half(std::nextafter(middle, 0.0f)) != value ||
          round_to_half(std::nextafter(middle, INFINITY)) != next)
        ++mismatches;
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("float to bfloat16 keeps float32's top 16 bits, rounded to nearest even") {
  CHECK(float_to_bfloat16(1.0f) == 0x3F80);
  CHECK(float_to_bfloat16(-2.0f) == 0xC000);
  CHECK(float_to_bfloat16(0.7f) == 0x3F33);                            // 0x3F333333 rounds down
  CHECK(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);     // tie to even (down)
  CHECK(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82); // tie to even (up)
  CHECK(float_to_bfloat16(std::ldexp(1.0f, -133)) == 0x0001);          // smallest subnormal
  CHECK(float_to_bfloat16(3.4e38f) == 0x7F80);                         // past 3.39e38: infinity
  CHECK(float_to_bfloat16(-INFINITY) == 0xFF80);
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(NAN))));
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(-NAN))));
}

TEST_CASE("every bfloat16 survives the round trip, and rounding picks the nearer neighbour") {
  int mismatches = 0;
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto value16 = static_cast<std::uint16_t>(bits);
    const float value = bfloat16_to_float(value16);
    if (std::isnan(value))
      continue;
    if (float_to_bfloat16(value) != value16)
      ++mismatches;
    if (bits < 0x7F7F) { // positive, finite, below the largest
      const float next = bfloat16_to_float(static_cast<std::uint16_t>(bits + 1));
      const float middle = value + (next - value) / 2;
      if (round_to_bfloat16(std::nextafter(middle, 0.0f)) != value ||
          round_to_bfloat16(std::nextafter(middle, INFINITY)) != next)
        ++mismatches;
    }
  }
  CHECK(mismatches == 0);
}
