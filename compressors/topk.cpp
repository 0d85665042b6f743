#include "compressors/topk.hpp"

#include "compressors/detail/left_pack.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

namespace gcsim::compress {
namespace {

constexpr std::uint32_t kInfKey = 0x7F800000u; // keys above this are NaN

// Leaves new elements uninitialised: the candidate buffers are sized for the
// worst case and written before they are read, and zeroing them cost about a
// sixth of top-k's time at density 0.1 (2^20 elements: 2.8 -> 2.3 ns each).
template <typename T> struct UninitializedAllocator : std::allocator<T> {
  template <typename U> struct rebind { using other = UninitializedAllocator<U>; };
  UninitializedAllocator() = default;
  template <typename U> UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <typename U> void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
};
using CandidateIndices = std::vector<Index, UninitializedAllocator<Index>>;
using CandidateKeys = std::vector<std::uint32_t, UninitializedAllocator<std::uint32_t>>;

inline std::uint32_t key_of(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits & 0x7FFFFFFFu;
}

[[noreturn]] void throw_nan(std::size_t i) {
  throw std::invalid_argument("top-k: input element " + std::to_string(i) +
                              " is NaN; magnitudes of NaN have no order");
}

void check_arguments(std::size_t n, std::size_t k) {
  if (k > n) {
    throw std::invalid_argument("top-k: k = " + std::to_string(k) +
                                " exceeds n = " + std::to_string(n));
  }
  if (n > static_cast<std::size_t>(std::numeric_limits<Index>::max())) {
    throw std::invalid_argument("top-k: n = " + std::to_string(n) + " does not fit a 32-bit index");
  }
}

// The kept elements number exactly k (radix_threshold's count: every key
// above the threshold plus `ties` equal to it). The emit loops store every
// element and advance only past the kept ones, so `out` holds k plus this
// much slack while they run.
constexpr std::size_t kEmitSlack = 8;

// Stores `index` in the next slot and moves past it if the element is kept:
// key above t, or one of the `ties` first keys equal to t.
inline void emit_one(std::uint32_t key, Index index, std::uint32_t t, std::size_t& ties,
                     Index* kept, std::size_t& count) {
  const bool tie = key == t && ties > 0;
  ties -= tie ? 1 : 0;
  kept[count] = index;
  count += (key > t || tie) ? 1 : 0;
}

// Writes to out[0, k), in order, the index of every element with key > t and
// of the first `ties` with key == t; key_at(i) and index_at(i) describe
// element i of n. Branch-free: at density 1e-1 a branch per element was
// mispredicted often enough to be top-k's largest cost.
template <typename KeyAt, typename IndexAt>
void emit_by_threshold(std::size_t n, std::size_t k, std::uint32_t t, std::size_t ties,
                       KeyAt key_at, IndexAt index_at, std::vector<Index>& out) {
  out.resize(k + kEmitSlack);
  Index* kept = out.data();
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i)
    emit_one(key_at(i), index_at(i), t, ties, kept, count);
  assert(count == k && "the threshold keeps exactly k");
  out.resize(k);
}
// Radix select of the k-th largest of n keys (1 <= k <= n), key_at(i) giving
// key i: over the whole input (the fallback) or over the sampled path's
// candidates. Returns the threshold key, how many elements equal to it are
// to be kept, and the largest key seen (a key above +inf's is a NaN).
struct RadixThreshold {
  std::uint32_t threshold = 0;
  std::size_t ties = 0;
  std::uint32_t max_key = 0;
};

template <typename KeyAt>
RadixThreshold radix_threshold(std::size_t n, std::size_t k, KeyAt key_at) {
  // Key bits 30..20, 19..9, 8..0 (bit 31 is the cleared sign).
  constexpr int kShift[3] = {20, 9, 0};
  constexpr std::uint32_t kMask[3] = {0x7FFu, 0x7FFu, 0x1FFu};
  std::uint32_t prefix = 0;
  std::uint32_t prefix_mask = 0;
  std::uint32_t max_key = 0;
  std::size_t need = k;
  std::array<std::size_t, 2048> hist{};
  for (int pass = 0; pass < 3; ++pass) {
    hist.fill(0);
    const int shift = kShift[pass];
    const std::uint32_t mask = kMask[pass];
    // The first pass sees every key (no prefix yet) and notes the largest;
    // the others count only keys under the prefix chosen so far.
    if (pass == 0) {
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t key = key_at(i);
        max_key = std::max(max_key, key);
        ++hist[(key >> shift) & mask];
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t key = key_at(i);
        if ((key & prefix_mask) == prefix) {
          ++hist[(key >> shift) & mask];
        }
      }
    }
    // Walk buckets from the top until `need` elements are covered.
    std::size_t bucket = mask;
    for (;; --bucket) {
      if (hist[bucket] >= need) {
        break;
      }
      need -= hist[bucket];
    }
    prefix |= static_cast<std::uint32_t>(bucket) << shift;
    prefix_mask |= mask << shift;
  }
  return {prefix, need, max_key};
}

// Appends (index, key) of every element of x[0, n - n % B) with key >= bound;
// returns where it stopped. Each block of B is reduced branch-free first,
// because most blocks hold no candidate; blocks that do are compacted without
// branches.
template <std::size_t B>
std::size_t filter_blocks(const float* x, std::size_t n, std::uint32_t bound,
                          CandidateIndices& cand_idx, CandidateKeys& cand_key,
                          std::size_t& capacity, std::size_t& m) {
  std::size_t i = 0;
  for (; i + B <= n; i += B) {
    std::uint32_t any = 0;
    for (std::size_t j = 0; j < B; ++j) {
      any |= static_cast<std::uint32_t>(key_of(x[i + j]) >= bound);
    }
    if (any == 0) {
      continue;
    }
    if (m + B > capacity) {
      capacity *= 2;
      cand_idx.resize(capacity);
      cand_key.resize(capacity);
    }
    for (std::size_t j = 0; j < B; ++j) {
      const std::uint32_t key = key_of(x[i + j]);
      cand_idx[m] = static_cast<Index>(i + j);
      cand_key[m] = key;
      m += key >= bound ? 1 : 0;
    }
  }
  return i;
}

#ifdef GCSIM_LEFT_PACK_AVX2
// filter_blocks for common candidates, 8 at a time and without a branch on the
// data: every block's keys and indices are stored packed, and m advances by
// how many passed. The test per block it replaces was mispredicted often
// enough at density 1e-2 to cost a third of top-k's time.
__attribute__((target("avx2,popcnt"))) std::size_t
filter_packed_avx2(const float* x, std::size_t n, std::uint32_t bound, CandidateIndices& cand_idx,
                   CandidateKeys& cand_key, std::size_t& capacity, std::size_t& m) {
  const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF);
  // Keys are at most 0x7FFFFFFF and bound at most kInfKey, so a signed compare
  // orders them; bound 0 gives -1, below every key.
  const __m256i below = _mm256_set1_epi32(static_cast<int>(bound) - 1);
  const __m256i eight = _mm256_set1_epi32(8);
  __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (m + 8 > capacity) {
      capacity *= 2;
      cand_idx.resize(capacity);
      cand_key.resize(capacity);
    }
    const __m256i keys = _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x + i)), magnitude);
    const auto mask = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(keys, below))));
    const __m256i order = detail::left_pack_order(mask);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(cand_key.data() + m),
                        _mm256_permutevar8x32_epi32(keys, order));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(cand_idx.data() + m),
                        _mm256_permutevar8x32_epi32(lanes, order));
    m += static_cast<std::size_t>(__builtin_popcount(mask));
    lanes = _mm256_add_epi32(lanes, eight);
  }
  return i;
}

// emit_by_threshold over the candidates, 8 at a time: the indices of keys
// above t are packed as the filter packs them; a block holding keys equal to
// t while ties remain keeps the lowest `ties` of those lanes.
__attribute__((target("avx2,popcnt"))) void
emit_candidates_avx2(const Index* cand_idx, const std::uint32_t* cand_key, std::size_t m,
                     std::size_t k, std::uint32_t t, std::size_t ties, std::vector<Index>& out) {
  out.resize(k + kEmitSlack);
  Index* kept = out.data();
  std::size_t count = 0;
  // Keys are at most 0x7FFFFFFF, so signed compares order them.
  const __m256i threshold = _mm256_set1_epi32(static_cast<int>(t));
  std::size_t c = 0;
  for (; c + 8 <= m; c += 8) {
    const __m256i keys = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cand_key + c));
    auto mask = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(keys, threshold))));
    if (ties > 0) {
      auto equal = static_cast<unsigned>(
          _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(keys, threshold))));
      for (; equal != 0 && ties > 0; equal &= equal - 1, --ties)
        mask |= equal & (0u - equal); // the lowest equal lane left
    }
    const __m256i indices = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cand_idx + c));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(kept + count),
                        _mm256_permutevar8x32_epi32(indices, detail::left_pack_order(mask)));
    count += static_cast<std::size_t>(__builtin_popcount(mask));
  }
  for (; c < m; ++c)
    emit_one(cand_key[c], cand_idx[c], t, ties, kept, count);
  assert(count == k && "the threshold keeps exactly k");
  out.resize(k);
}

#endif

} // namespace

void check_no_nan(const float* x, std::size_t n) {
  // A block is tested without an early exit (and with a signed compare,
  // which SSE2 has: keys are at most 0x7FFFFFFF), so the compiler vectorizes
  // it and the check runs at about the speed of a read.
  constexpr std::size_t kBlock = 4096;
  for (std::size_t start = 0; start < n; start += kBlock) {
    const std::size_t end = std::min(n, start + kBlock);
    std::uint32_t any = 0;
    for (std::size_t i = start; i < end; ++i) {
      any |= static_cast<std::uint32_t>(static_cast<std::int32_t>(key_of(x[i])) >
                                        static_cast<std::int32_t>(kInfKey));
    }
    if (any == 0) {
      continue;
    }
    for (std::size_t i = start; i < end; ++i) {
      if (key_of(x[i]) > kInfKey) {
        throw_nan(i);
      }
    }
  }
}

void topk_indices_radix(const float* x, std::size_t n, std::size_t k, std::vector<Index>& out) {
  check_arguments(n, k);
  out.clear();
  if (k == 0 || k == n) {
    check_no_nan(x, n);
    for (std::size_t i = 0; i < k; ++i) {
      out.push_back(static_cast<Index>(i));
    }
    return;
  }
  const RadixThreshold found = radix_threshold(n, k, [x](std::size_t i) { return key_of(x[i]); });
  if (found.max_key > kInfKey) {
    check_no_nan(x, n);
  }
  emit_by_threshold(
      n, k, found.threshold, found.ties, [x](std::size_t i) { return key_of(x[i]); },
      [](std::size_t i) { return static_cast<Index>(i); }, out);
}

namespace {

void topk_indices_sampled(const float* x, std::size_t n, std::size_t k, std::vector<Index>& out,
                          [[maybe_unused]] bool packed_simd) {
  check_arguments(n, k);
  // The sampled path beats the radix passes from about 2^10 elements; below
  // that, and for large shares of the input, radix is cheaper.
  constexpr std::size_t kMinSampled = std::size_t{1} << 10;
  if (n < kMinSampled || k == 0 || k * 8 > n) {
    topk_indices_radix(x, n, k, out);
    return;
  }
  // 1. Strided sample of keys; its r-th largest is, with high probability, below
  //    the k-th largest key of the whole input. r has a 20% margin plus three
  //    standard deviations of the binomial count, so misses are rare; a miss only
  //    costs the fallback, never exactness.
  //    The sample is sized for about 256 expected hits: more only costs cache
  //    misses. At least n / 32 keys (256 to 4096), at most 65536 or n / 128,
  //    whichever is smaller, but never below that floor. A floor of 4096 at
  //    every n cost about 10 us below 2^17 elements, a plateau the cost
  //    model's families could not follow, and tripled the time of layers of
  //    2^11 to 2^15 elements. A sample of sqrt(8 n) keys, tried instead, made
  //    top-k 1.4-1.7x slower at 2^20-2^22 and densities 1e-4 and 1e-3, where
  //    its looser bound lets more candidates through.
  const std::size_t min_samples = std::clamp<std::size_t>(n / 32, 256, 4096);
  const std::size_t max_samples = std::max(min_samples, std::min<std::size_t>(65536, n / 128));
  const std::size_t samples = std::clamp<std::size_t>(
      static_cast<std::size_t>(256.0 * static_cast<double>(n) / static_cast<double>(k)),
      min_samples, max_samples);
  const std::size_t stride = n / samples;
  std::vector<std::uint32_t> keys(samples);
  for (std::size_t s = 0; s < samples; ++s) {
    keys[s] = key_of(x[s * stride + (s * 7919) % stride]);
  }
  const double expected =
      static_cast<double>(k) * static_cast<double>(samples) / static_cast<double>(n);
  const auto rank = static_cast<std::size_t>(1.2 * expected + 3.0 * std::sqrt(expected) + 8.0);
  if (rank >= samples) {
    topk_indices_radix(x, n, k, out);
    return;
  }
  std::nth_element(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(rank), keys.end(),
                   std::greater<>());
  // A NaN anywhere sorts above every finite key; clamping the bound to +inf keeps
  // every NaN among the candidates, where it is reported.
  const std::uint32_t bound = std::min(keys[rank], kInfKey);

  // 2. One streaming pass keeps the indices (and keys) with key >= bound.
  std::size_t capacity =
      static_cast<std::size_t>(1.5 * static_cast<double>(rank) * static_cast<double>(stride)) + 256;
  CandidateIndices cand_idx(capacity);
  CandidateKeys cand_key(capacity);
  std::size_t m = 0;
  std::size_t i = 0;
  // By the expected share of candidates: long blocks skip more cheaply when
  // hits are rare, short ones compact less when they are not. AVX2's packing
  // has no branch on the data and beats blocks of 64 from a share of about
  // 1e-3 (blocks of 64 with a hit, a sixth of them at 3e-3, go element by
  // element): where the two were switched at 4e-3, top-k at densities 1e-4
  // and 1e-3 took up to 1.7x longer, a step the cost model could not follow.
  const double hit_rate = static_cast<double>(rank) / static_cast<double>(samples);
  const double rare_hits = packed_simd ? 0.001 : 0.004;
  if (hit_rate < rare_hits) {
    i = filter_blocks<64>(x, n, bound, cand_idx, cand_key, capacity, m);
#ifdef GCSIM_LEFT_PACK_AVX2
  } else if (packed_simd) {
    i = filter_packed_avx2(x, n, bound, cand_idx, cand_key, capacity, m);
#endif
  } else {
    i = filter_blocks<8>(x, n, bound, cand_idx, cand_key, capacity, m);
  }
  for (; i < n; ++i) {
    const std::uint32_t key = key_of(x[i]);
    if (key >= bound) {
      if (m == capacity) {
        capacity *= 2;
        cand_idx.resize(capacity);
        cand_key.resize(capacity);
      }
      cand_idx[m] = static_cast<Index>(i);
      cand_key[m] = key;
      ++m;
    }
  }
  if (m < k) {
    topk_indices_radix(x, n, k, out);
    return;
  }

  // 3. Exact threshold among the candidates, then keep them in index order.
  const std::uint32_t* candidate_keys = cand_key.data();
  const RadixThreshold found =
      radix_threshold(m, k, [candidate_keys](std::size_t c) { return candidate_keys[c]; });
  if (found.max_key > kInfKey) {
    check_no_nan(x, n);
  }
#ifdef GCSIM_LEFT_PACK_AVX2
  if (packed_simd) {
    emit_candidates_avx2(cand_idx.data(), cand_key.data(), m, k, found.threshold, found.ties, out);
    return;
  }
#endif
  const Index* indices = cand_idx.data();
  emit_by_threshold(
      m, k, found.threshold, found.ties,
      [candidate_keys](std::size_t c) { return candidate_keys[c]; },
      [indices](std::size_t c) { return indices[c]; }, out);
}

} // namespace

void topk_indices(const float* x, std::size_t n, std::size_t k, std::vector<Index>& out) {
  topk_indices_sampled(x, n, k, out, detail::cpu_has_avx2());
}

void topk_indices_portable(const float* x, std::size_t n, std::size_t k, std::vector<Index>& out) {
  topk_indices_sampled(x, n, k, out, false);
}

std::vector<Index> topk_indices(const float* x, std::size_t n, std::size_t k) {
  std::vector<Index> out;
  topk_indices(x, n, k, out);
  return out;
}

} // namespace gcsim::compress
