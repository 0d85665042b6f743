// Benchmarks of the compressor library: top-k against std::nth_element and a
// streaming read (this machine's memory bandwidth), Count Sketch, DEFT's
// per-worker selection, and every compressor's full iteration on a
// ResNet-50-sized gradient. See compressors/README.md for the figures.
#include "compressors/bin_packing.hpp"
#include "compressors/count_sketch.hpp"
#include "compressors/registry.hpp"
#include "compressors/rng.hpp"
#include "compressors/tensor.hpp"
#include "compressors/threshold_estimator.hpp"
#include "compressors/topk.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <random>
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

// The first n values of one of two draws: up to 1M of one, beyond that of
// 25M others, so every size sees the same values as the sizes below it.
const std::vector<float>& input(std::size_t n) {
  static std::vector<float> big = heavy_tailed(25'000'000, 42);
  static std::vector<float> small = heavy_tailed(1'000'000, 43);
  static std::map<std::size_t, std::vector<float>> prefixes;
  assert(n <= big.size() && "benchmark inputs have at most 25M values");
  if (n == big.size())
    return big;
  if (n == small.size())
    return small;
  const std::vector<float>& source = n < small.size() ? small : big;
  auto [found, added] = prefixes.try_emplace(n);
  if (added)
    found->second.assign(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(n));
  return found->second;
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

// Draws of mt19937_64's stream, 1,024 a time: the library's engine, and
// compress::Mt19937_64, which the synthetic feed uses instead.
template <typename Engine> void BM_Mt19937_64(benchmark::State& state) {
  Engine engine(20261207);
  std::uint64_t sum = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1024; ++i)
      sum += engine();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1024);
}

// The NaN check every compressor makes of each worker's gradient: a read of
// the vector, to set beside BM_StreamRead.
void BM_CheckNoNan(benchmark::State& state) {
  const auto& x = input(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    gc::check_no_nan(x.data(), x.size());
    benchmark::ClobberMemory();
  }
  set_bytes(state, x.size());
}

using Select = void (*)(const float*, std::size_t, std::size_t, std::vector<gc::Index>&);

// One top-k variant on the benchmark's input size and density.
void time_select(benchmark::State& state, Select select) {
  const auto& x = input(static_cast<std::size_t>(state.range(0)));
  const std::size_t k = k_of(state);
  std::vector<gc::Index> out;
  for (auto _ : state) {
    select(x.data(), x.size(), k, out);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, x.size());
}

void BM_TopK(benchmark::State& state) {
  time_select(state, gc::topk_indices);
}

// The same without AVX2 in its streaming pass: what the packing gains, in one run.
void BM_TopKPortable(benchmark::State& state) {
  time_select(state, gc::topk_indices_portable);
}

void BM_TopKRadix(benchmark::State& state) {
  time_select(state, gc::topk_indices_radix);
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

using ThresholdSelect = void (*)(const float*, std::size_t, float, std::vector<gc::Index>&);

// DGC's selection at the |x| that keeps the benchmark's density (found once,
// outside the timing).
void time_threshold_select(benchmark::State& state, ThresholdSelect select) {
  const auto& x = input(static_cast<std::size_t>(state.range(0)));
  const std::size_t k = k_of(state);
  std::vector<float> mags(x.size());
  std::transform(x.begin(), x.end(), mags.begin(), [](float v) { return std::fabs(v); });
  std::nth_element(mags.begin(), mags.begin() + static_cast<std::ptrdiff_t>(k - 1), mags.end(),
                   std::greater<>());
  const float threshold = mags[k - 1];
  std::vector<gc::Index> out;
  for (auto _ : state) {
    select(x.data(), x.size(), threshold, out);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, x.size());
}

void BM_ThresholdSelect(benchmark::State& state) {
  time_threshold_select(state, gc::select_at_or_above);
}

// The same without AVX2: what the packing gains, in one run.
void BM_ThresholdSelectPortable(benchmark::State& state) {
  time_threshold_select(state, gc::select_at_or_above_portable);
}

void threshold_args(benchmark::internal::Benchmark* b) {
  for (const std::int64_t n : {1'000'000, 25'000'000}) {
    for (const std::int64_t inv : {1000, 100, 10}) {
      b->Args({n, inv});
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

void topk_args(benchmark::internal::Benchmark* b) {
  // 8,192 and 32,768: small layers (biases, norms, small convolutions);
  // 131,072: a mid-sized convolution; 4M: a large convolution or embedding.
  for (const std::int64_t n : {8'192, 32'768, 131'072, 1'000'000, 4'000'000, 25'000'000}) {
    for (const std::int64_t inv : {10000, 1000, 100, 10}) {
      b->Args({n, inv});
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// ResNet-50's 161 parameter tensors in torchvision order (25,557,032 floats),
// from `torchvision.models.resnet50().parameters()`.
const std::vector<std::size_t>& resnet50_sizes() {
  static const std::vector<std::size_t> sizes = {
      9408,    64,   64,   4096,    64,   64,   36864,   64,   64,   16384,   256,  256,
      16384,   256,  256,  16384,   64,   64,   36864,   64,   64,   16384,   256,  256,
      16384,   64,   64,   36864,   64,   64,   16384,   256,  256,  32768,   128,  128,
      147456,  128,  128,  65536,   512,  512,  131072,  512,  512,  65536,   128,  128,
      147456,  128,  128,  65536,   512,  512,  65536,   128,  128,  147456,  128,  128,
      65536,   512,  512,  65536,   128,  128,  147456,  128,  128,  65536,   512,  512,
      131072,  256,  256,  589824,  256,  256,  262144,  1024, 1024, 524288,  1024, 1024,
      262144,  256,  256,  589824,  256,  256,  262144,  1024, 1024, 262144,  256,  256,
      589824,  256,  256,  262144,  1024, 1024, 262144,  256,  256,  589824,  256,  256,
      262144,  1024, 1024, 262144,  256,  256,  589824,  256,  256,  262144,  1024, 1024,
      262144,  256,  256,  589824,  256,  256,  262144,  1024, 1024, 524288,  512,  512,
      2359296, 512,  512,  1048576, 2048, 2048, 2097152, 2048, 2048, 1048576, 512,  512,
      2359296, 512,  512,  1048576, 2048, 2048, 1048576, 512,  512,  2359296, 512,  512,
      1048576, 2048, 2048, 2048000, 1000,
  };
  return sizes;
}

struct Workers {
  gc::LayerLayout layout;
  std::vector<std::vector<float>> grads;
  std::vector<float> weights;
};

// ResNet-50's tensors with their shapes as PowerSGD views them: a weight
// is followed by its batch norm's (or the classifier's bias), whose size is
// its output channels, shape[0]; the rest are vectors.
gc::LayerLayout resnet50_layout() {
  const std::vector<std::size_t>& sizes = resnet50_sizes();
  std::vector<gc::Layer> layers;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::size_t next = i + 1 < sizes.size() ? sizes[i + 1] : 0;
    const bool weight = next > 0 && sizes[i] > next && sizes[i] % next == 0;
    layers.push_back({"tensor" + std::to_string(i),
                      offset,
                      sizes[i],
                      {weight ? std::vector<std::size_t>{next, sizes[i] / next}
                              : std::vector<std::size_t>{sizes[i]}}});
    offset += sizes[i];
  }
  return gc::LayerLayout(std::move(layers));
}

// P synthetic heavy-tailed worker gradients shaped like ResNet-50.
const Workers& resnet50_workers(std::size_t P) {
  static Workers w = [P] {
    Workers out;
    out.layout = resnet50_layout();
    for (std::size_t r = 0; r < P; ++r) {
      out.grads.push_back(heavy_tailed(out.layout.total(), 100 + r));
    }
    out.weights = heavy_tailed(out.layout.total(), 99);
    return out;
  }();
  return w;
}

constexpr std::size_t kWorkers = 8;

void BM_CountSketchInsert(benchmark::State& state) {
  const auto& x = input(static_cast<std::size_t>(state.range(0)));
  gc::CountSketch sketch(5, static_cast<std::uint32_t>(state.range(1)), 1);
  for (auto _ : state) {
    sketch.clear();
    sketch.insert(x.data(), x.size());
    benchmark::DoNotOptimize(sketch.table().data());
  }
  set_bytes(state, x.size());
}

void BM_CountSketchQuery(benchmark::State& state) {
  const auto& x = input(static_cast<std::size_t>(state.range(0)));
  gc::CountSketch sketch(5, static_cast<std::uint32_t>(state.range(1)), 1);
  sketch.insert(x.data(), x.size());
  std::vector<float> est;
  for (auto _ : state) {
    sketch.estimate_all(x.size(), est);
    benchmark::DoNotOptimize(est.data());
  }
  set_bytes(state, x.size());
}

// DEFT's selection on one worker: top-k_i over the partitions of its bin
// (about 1/P of the gradient), vs every worker's full top-k in BM_TopK.
void BM_DeftWorkerSelection(benchmark::State& state) {
  const Workers& w = resnet50_workers(kWorkers);
  const std::size_t d = w.layout.total();
  const auto parts = gc::deft_partitions(w.layout, kWorkers);
  const std::size_t k = gc::k_for_density(d, 1.0 / static_cast<double>(state.range(0)));
  std::vector<double> norms;
  std::vector<std::size_t> sizes;
  for (const auto& p : parts) {
    double s = 0.0;
    for (std::size_t i = 0; i < p.size; ++i) {
      s += static_cast<double>(w.grads[0][p.offset + i]) *
           static_cast<double>(w.grads[0][p.offset + i]);
    }
    norms.push_back(std::sqrt(s));
    sizes.push_back(p.size);
  }
  const auto ks = gc::deft_allocate_k(norms, sizes, k);
  std::vector<double> costs;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const auto n = static_cast<double>(sizes[p]);
    costs.push_back(ks[p] > 1 ? n * std::log2(static_cast<double>(ks[p])) : n);
  }
  const auto bins = gc::lpt_pack(costs, kWorkers);
  // The most loaded bin: the worker everyone waits for.
  const auto heaviest = static_cast<std::size_t>(
      std::max_element(bins.loads.begin(), bins.loads.end()) - bins.loads.begin());
  std::vector<gc::Index> out;
  std::size_t scanned = 0;
  for (const auto p : bins.bins[heaviest]) {
    scanned += sizes[p];
  }
  for (auto _ : state) {
    for (const auto p : bins.bins[heaviest]) {
      gc::topk_indices(w.grads[0].data() + parts[p].offset, sizes[p], ks[p], out);
      benchmark::DoNotOptimize(out.data());
    }
  }
  state.counters["scanned_share"] = static_cast<double>(scanned) / static_cast<double>(d);
  set_bytes(state, scanned);
}

// One whole iteration of a compressor over P = 8 ResNet-50-sized gradients
// (selection, aggregation and residual updates of all 8 workers, sequentially
// on this one core: divide by 8 for a per-worker figure where work is per worker).
void BM_Iteration(benchmark::State& state, const std::string& name, nlohmann::json params) {
  const Workers& w = resnet50_workers(kWorkers);
  std::vector<gc::GradientView> views;
  for (const auto& g : w.grads) {
    views.push_back(gc::GradientView{g.data(), &w.layout});
  }
  const gc::WeightsView wv{w.weights.data(), &w.layout};
  if (name == "iwp") {
    params["warmup_iterations"] = 0;
  }
  auto compressor = gc::make_compressor(name, params);
  std::vector<gc::ErrorFeedback> memories(kWorkers);
  std::uint64_t t = 0;
  double density = 0.0;
  for (auto _ : state) {
    const auto r =
        compressor->run_iteration(views, &wv, gc::IterationContext{t++, kWorkers, 1}, memories);
    density = r.density();
    benchmark::DoNotOptimize(r.update.data());
  }
  state.counters["density_after_aggregation"] = density;
}

void register_iterations() {
  const nlohmann::json sparse = {{"density", 0.001}};
  for (const std::string name : {"dense", "fp16", "bf16", "powersgd", "topk", "gtopk", "dgc",
                                 "randomk", "cltk", "sketched_sgd", "gs_sgd", "deft", "iwp"}) {
    const auto& specs = gc::compressor_info(name).params;
    const bool sparsifies = std::any_of(specs.begin(), specs.end(), [](const gc::ParamSpec& spec) {
      return spec.name == "density";
    });
    const nlohmann::json params = sparsifies ? sparse : nlohmann::json::object();
    benchmark::RegisterBenchmark(
        ("BM_Iteration/" + name + "/P8/density0.001").c_str(),
        [name, params](benchmark::State& s) { BM_Iteration(s, name, params); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

} // namespace

BENCHMARK(BM_StreamRead)->Arg(1'000'000)->Arg(25'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CheckNoNan)->Arg(1'000'000)->Arg(25'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Mt19937_64, std::mt19937_64);
BENCHMARK_TEMPLATE(BM_Mt19937_64, gc::Mt19937_64);
BENCHMARK(BM_TopK)->Apply(topk_args);
BENCHMARK(BM_TopKPortable)->Apply(topk_args);
BENCHMARK(BM_TopKRadix)->Apply(topk_args);
BENCHMARK(BM_ThresholdSelect)->Apply(threshold_args);
BENCHMARK(BM_ThresholdSelectPortable)->Apply(threshold_args);
BENCHMARK(BM_NthElement)->Apply(topk_args);

BENCHMARK(BM_CountSketchInsert)
    ->Args({1'000'000, 10'000})
    ->Args({25'000'000, 250'000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CountSketchQuery)
    ->Args({1'000'000, 10'000})
    ->Args({25'000'000, 250'000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_DeftWorkerSelection)
    ->Arg(1000)
    ->Arg(100)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  register_iterations();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
