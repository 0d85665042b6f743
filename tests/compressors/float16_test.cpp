#include "compressors/float16.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <doctest/doctest.h>

using gcsim::compress::bfloat16_to_float;
using gcsim::compress::float_to_bfloat16;
using gcsim::compress::float_to_half;
using gcsim::compress::half_to_float;
using gcsim::compress::round_to_bfloat16;

namespace {

// Over every 16-bit pattern of a type (NaNs aside): values that do not
// come back from the round trip, and, between two neighbours (positive,
// finite, below the pattern `largest`), a value just under their midpoint
// that does not go down or one just over it that does not go up.
int round_trip_mismatches(std::uint16_t (*to)(float), float (*from)(std::uint16_t),
                          std::uint32_t largest) {
  int mismatches = 0;
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float value = from(static_cast<std::uint16_t>(bits));
    if (std::isnan(value))
      continue;
    if (to(value) != bits)
      ++mismatches;
    if (bits < largest) {
      const float next = from(static_cast<std::uint16_t>(bits + 1));
      const float middle = value + (next - value) / 2;
      if (from(to(std::nextafter(middle, 0.0f))) != value ||
          from(to(std::nextafter(middle, INFINITY))) != next)
        ++mismatches;
    }
  }
  return mismatches;
}

} // namespace

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
  CHECK(round_trip_mismatches(float_to_half, half_to_float, 0x7BFF) == 0);
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
  CHECK(round_trip_mismatches(float_to_bfloat16, bfloat16_to_float, 0x7F7F) == 0);
}

namespace {

// Float32 values across float16's range and past it: every half, the
// floats beside its midpoints, and 200,000 bit patterns drawn at random.
std::vector<float> rounding_inputs() {
  std::vector<float> values;
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float value = half_to_float(static_cast<std::uint16_t>(bits));
    if (std::isnan(value))
      continue;
    values.push_back(value);
    const float next = std::nextafter(value, INFINITY);
    values.push_back(std::nextafter(value + (next - value) / 2, 0.0f));
    values.push_back(std::nextafter(value + (next - value) / 2, INFINITY));
  }
  std::uint64_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto bits = static_cast<std::uint32_t>(state >> 32);
    float value;
    std::memcpy(&value, &bits, sizeof value);
    if (!std::isnan(value))
      values.push_back(value);
  }
  return values;
}

} // namespace

TEST_CASE("rounding many at a time gives the one-at-a-time results, bit for bit") {
  // Where the CPU has F16C, round_to_half takes 8 at a time with it.
  const std::vector<float> x = rounding_inputs();
  std::vector<float> bulk(x.size()), portable(x.size()), one(x.size());
  gcsim::compress::round_to_half(x.data(), x.size(), bulk.data());
  gcsim::compress::round_to_half_portable(x.data(), x.size(), portable.data());
  CHECK(std::memcmp(bulk.data(), portable.data(), x.size() * sizeof(float)) == 0);
  gcsim::compress::round_to_bfloat16(x.data(), x.size(), bulk.data());
  for (std::size_t i = 0; i < x.size(); ++i)
    one[i] = round_to_bfloat16(x[i]);
  CHECK(std::memcmp(bulk.data(), one.data(), x.size() * sizeof(float)) == 0);
  // A cast to float16 bits, as the calibration times it.
  std::vector<std::uint16_t> cast(x.size());
  gcsim::compress::float_to_half(x.data(), x.size(), cast.data());
  std::size_t cast_mismatches = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    cast_mismatches += cast[i] != float_to_half(x[i]);
  CHECK(cast_mismatches == 0);
  // In place, as the compressors call it; and NaN stays NaN.
  std::vector<float> in_place = x;
  gcsim::compress::round_to_half(in_place.data(), in_place.size(), in_place.data());
  CHECK(std::memcmp(in_place.data(), portable.data(), x.size() * sizeof(float)) == 0);
  const float nan[1] = {NAN};
  float out[1];
  gcsim::compress::round_to_bfloat16(nan, 1, out);
  CHECK(std::isnan(out[0]));
}
