// Branch-free packing of the lanes that pass a test, 8 at a time with AVX2:
// for selection passes whose hits are too common for a branch per block
// (top-k's candidate filter, the threshold select). Not public API.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GCSIM_LEFT_PACK_AVX2 1
#include <immintrin.h>
#endif

#include <array>
#include <cstdint>

namespace gcsim::compress::detail {

/// Whether this CPU runs the AVX2 packing (checked once); false where it is
/// not compiled in.
inline bool cpu_has_avx2() {
#ifdef GCSIM_LEFT_PACK_AVX2
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
  return has;
#else
  return false;
#endif
}

#ifdef GCSIM_LEFT_PACK_AVX2

/// For every 8-bit mask, the lanes of its set bits, lowest first, one per byte.
constexpr std::array<std::uint64_t, 256> make_left_pack() {
  std::array<std::uint64_t, 256> table{};
  for (unsigned mask = 0; mask < 256; ++mask) {
    unsigned slot = 0;
    for (unsigned lane = 0; lane < 8; ++lane) {
      if ((mask & (1u << lane)) != 0) {
        table[mask] |= std::uint64_t{lane} << (8 * slot++);
      }
    }
  }
  return table;
}
inline constexpr std::array<std::uint64_t, 256> kLeftPack = make_left_pack();

/// The vpermd order that moves the lanes set in `mask` to the front.
__attribute__((target("avx2"))) inline __m256i left_pack_order(unsigned mask) {
  return _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(kLeftPack[mask])));
}

#endif

} // namespace gcsim::compress::detail
