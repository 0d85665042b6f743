// The project's documented pseudo-random generators: splitmix64 to derive
// seeds, xoshiro256** to draw. Nothing here reads the clock or the device, so
// equal seeds give equal streams on every platform.
#pragma once

#include <cstdint>

namespace gcsim::compress {

// One step of splitmix64 (Steele, Lea, Flood 2014); also a good 64-bit mixer.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

inline std::uint64_t mix64(std::uint64_t x) {
  std::uint64_t s = x;
  return splitmix64(s);
}

// Seed for a given (scenario seed, iteration, rank, purpose) tuple; each field
// goes through the mixer so nearby tuples give unrelated streams.
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t iteration, std::uint64_t rank,
                                 std::uint64_t purpose) {
  std::uint64_t h = mix64(seed ^ 0x6763736D5F736565ULL);
  h = mix64(h ^ iteration);
  h = mix64(h ^ (rank + 0x100000000ULL));
  return mix64(h ^ (purpose * 0xD1B54A32D192ED03ULL));
}

// xoshiro256** 1.0 (Blackman, Vigna 2018), state filled by splitmix64.
class Xoshiro256 {
public:
  explicit Xoshiro256(std::uint64_t seed) {
    for (auto& w : s_) {
      w = splitmix64(seed);
    }
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, bound): multiply-shift for 32-bit bounds (bias < 2^-32),
  // modulo above; deterministic either way, which is what matters here.
  std::uint64_t below(std::uint64_t bound) {
    if (bound <= 0xFFFFFFFFULL) {
      return ((next() >> 32) * bound) >> 32;
    }
    return next() % bound;
  }
  // Uniform double in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

} // namespace gcsim::compress
