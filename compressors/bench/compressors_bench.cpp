// Benchmarks of the compressor library: top-k against std::nth_element and a
// streaming read (this machine's memory bandwidth), Count Sketch, DEFT's
// per-worker selection, and every compressor's full iteration on a
// ResNet-50-sized gradient. See compressors/README.md for the figures.
#include "compressors/bin_packing.hpp"
#include "compressors/count_sketch.hpp"
#include "compressors/registry.hpp"
#include "compressors/rng.hpp"
#include "compressors/topk.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include <benchmark/benchmark.h>

namespace gc = gcsim::compress;

namespace {

std::vector<float> heavy_tailed(std::size_t n, std::uint64_t seed) {
  gc::Xoshiro256 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) {
    const double u1 = std::max(rng.uniform(), 1e-12);
    const double u2 = rng.uniform();
    const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    x = static_cast<float>(normal / std::sqrt(std::max(rng.uniform(), 1e-6)) * 1e-3);
  }
  return v;
}

const std::vector<float>& input(std::size_t n) {
  static std::vector<float> big = heavy_tailed(25'000'000, 42);
  static std::vector<float> small = heavy_tailed(1'000'000, 43);
  return n == small.size() ? small : big;
}

std::size_t k_of(const benchmark::State& state) {
  return static_cast<std::size_t>(static_cast<double>(state.range(0)) /
                                  static_cast<double>(state.range(1)));
}

void set_bytes(benchmark::State& state, std::size_t n) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(n * sizeof(float)));
}

// Arguments: n, 1/density.
void BM_StreamRead(benchmark::State& state) {
  const auto& x = input(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    // Four independent sums so the loop is bound by memory, not by the add latency.
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (std::size_t i = 0; i + 4 <= x.size(); i += 4) {
      s0 += x[i];
      s1 += x[i + 1];
      s2 += x[i + 2];
      s3 += x[i + 3];
    }
    benchmark::DoNotOptimize(s0 + s1 + s2 + s3);
  }
  set_bytes(state, x.size());
}

void BM_TopK(benchmark::State& state) {
  const auto& x = input(static_cast<std::size_t>(state.range(0)));
  const std::size_t k = k_of(state);
  std::vector<gc::Index> out;
  for (auto _ : state) {
    gc::topk_indices(x.data(), x.size(), k, out);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, x.size());
}

void BM_TopKRadix(benchmark::State& state) {
  const auto& x = input(static_cast<std::size_t>(state.range(0)));
  const std::size_t k = k_of(state);
  std::vector<gc::Index> out;
  for (auto _ : state) {
    gc::topk_indices_radix(x.data(), x.size(), k, out);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, x.size());
}

// std::nth_element on the magnitudes (copy included: it reorders its input).
void BM_NthElement(benchmark::State& state) {
  const auto& x = input(static_cast<std::size_t>(state.range(0)));
  const std::size_t k = k_of(state);
  std::vector<float> mags(x.size());
  for (auto _ : state) {
    std::transform(x.begin(), x.end(), mags.begin(), [](float v) { return std::fabs(v); });
    std::nth_element(mags.begin(), mags.begin() + static_cast<std::ptrdiff_t>(k - 1), mags.end(),
                     std::greater<>());
    benchmark::DoNotOptimize(mags.data());
  }
  set_bytes(state, x.size());
}

void topk_args(benchmark::internal::Benchmark* b) {
  for (const std::int64_t n : {1'000'000, 25'000'000}) {
    for (const std::int64_t inv : {1000, 100}) {
      b->Args({n, inv});
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

} // namespace

BENCHMARK(BM_StreamRead)->Arg(1'000'000)->Arg(25'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TopK)->Apply(topk_args);
BENCHMARK(BM_TopKRadix)->Apply(topk_args);
BENCHMARK(BM_NthElement)->Apply(topk_args);

BENCHMARK_MAIN();
