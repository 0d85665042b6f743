// The project's documented pseudo-random generators: splitmix64 to derive
// seeds, xoshiro256** to draw, and mt19937_64 for the synthetic feed. Nothing here reads the clock
// or the device, so equal seeds give equal streams on every platform.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>

namespace gcsim::compress {

// splitmix64's output function (Stafford's Mix13): a bijective 64-bit mixer.
inline std::uint64_t mix_bits(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// One step of splitmix64 (Steele, Lea, Flood 2014).
inline std::uint64_t splitmix64(std::uint64_t& state) {
  return mix_bits(state += 0x9E3779B97F4A7C15ULL);
}

// splitmix64's output for the state x: a good 64-bit hash of x.
inline std::uint64_t mix64(std::uint64_t x) {
  return mix_bits(x + 0x9E3779B97F4A7C15ULL);
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

// static_cast<float>(x), without the branch on x's top bit that the
// compiler emits and a random draw mispredicts half the time: x >= 2^63 is
// halved with its last bit kept as a sticky bit (the rounding is then the
// same), converted as a signed number, and doubled, as that branch does.
inline float uint64_to_float(std::uint64_t x) {
  const std::uint64_t top = x >> 63;
  const std::uint64_t halved = (x >> top) | (x & top);
  return static_cast<float>(static_cast<std::int64_t>(halved)) * static_cast<float>(1 + top);
}

// The stream of std::mt19937_64 (Matsumoto, Nishimura; the standard fixes
// it), 312 words made at a time without a branch on each word's low bit:
// libstdc++'s loop takes one, mispredicted half the time, and is about 3.3
// times slower (BM_Mt19937_64: 6.7 against 2.0 ns a draw, 2-core Xeon).
class Mt19937_64 {
public:
  explicit Mt19937_64(std::uint64_t seed) {
    state_[0] = seed;
    for (int i = 1; i < kWords; ++i)
      state_[i] = 6364136223846793005ULL * (state_[i - 1] ^ (state_[i - 1] >> 62)) +
                  static_cast<std::uint64_t>(i);
  }
  std::uint64_t operator()() {
    if (next_ == kWords)
      refill();
    std::uint64_t x = state_[next_++];
    x ^= (x >> 29) & 0x5555555555555555ULL;
    x ^= (x << 17) & 0x71D67FFFEDA60000ULL;
    x ^= (x << 37) & 0xFFF7EEE000000000ULL;
    return x ^ (x >> 43);
  }

private:
  static constexpr int kWords = 312;
  static constexpr int kShift = 156;
  // The upper 33 bits of `upper`, the lower 31 of `lower`, shifted and
  // folded into `far`; the low bit selects the twist's matrix by a mask.
  static std::uint64_t twist(std::uint64_t upper, std::uint64_t lower, std::uint64_t far) {
    const std::uint64_t x = (upper & 0xFFFFFFFF80000000ULL) | (lower & 0x7FFFFFFFULL);
    return far ^ (x >> 1) ^ (0xB5026F5AA96619E9ULL & (0 - (x & 1)));
  }
  void refill() {
    for (int i = 0; i < kWords - kShift; ++i)
      state_[i] = twist(state_[i], state_[i + 1], state_[i + kShift]);
    for (int i = kWords - kShift; i < kWords - 1; ++i)
      state_[i] = twist(state_[i], state_[i + 1], state_[i + kShift - kWords]);
    state_[kWords - 1] = twist(state_[kWords - 1], state_[0], state_[kShift - 1]);
    next_ = 0;
  }
  std::uint64_t state_[kWords];
  int next_ = kWords;
};

// An Exp(1) sample from one 64-bit draw: -log(1 - u), u the draw over 2^64
// rounded to float and held below 1. This is the arithmetic of libstdc++'s
// std::exponential_distribution<float> fed by a 64-bit engine, written out
// because the standard fixes engines (mt19937_64) but not distributions: with
// libc++ the same seed would give other samples. logf's last bit still comes
// from the C library.
inline float exponential_float(std::uint64_t bits) {
  float u = uint64_to_float(bits) * 0x1.0p-64f;
  if (u >= 1.0f)
    u = std::nextafter(1.0f, 0.0f);
  return -std::log(1.0f - u);
}

// Box-Muller: two independent standard normals, r cos t and r sin t with
// r = sqrt(-2 ln u) and t = 2 pi v, from u in (0, 1] and v in [0, 1).
inline std::pair<double, double> box_muller(double u, double v) {
  constexpr double kTwoPi = 6.283185307179586;
  const double radius = std::sqrt(-2.0 * std::log(u));
  const double angle = kTwoPi * v;
  return {radius * std::cos(angle), radius * std::sin(angle)};
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
  // Two standard normals (box_muller) from two draws, the radius's first.
  std::pair<double, double> normal_pair() {
    const double u = 1.0 - uniform(); // (0, 1]: the logarithm stays finite
    return box_muller(u, uniform());
  }

private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

} // namespace gcsim::compress
