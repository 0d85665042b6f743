// The comparison of tests/trace/synthesis_test.cpp for any trace, streamed so
// that a large one fits: per layer of at least MIN_PARAMS elements and per
// captured iteration, the synthesized workers' (W..P-1) mean L2 norm,
// pairwise top-1% overlap and top-1% mass against the captured workers'. Not
// a test (it needs a large cached trace); workloads/README.md ("More workers
// than captured") gives its figures for a ResNet-18 capture.
// Usage: trace_synthesis_fidelity TRACE WORKERS METHOD SEED [MIN_PARAMS]

#include "sim/trace/gradient_source.hpp"
#include "sim/trace/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

namespace {

// One worker set's statistics of one layer, a worker at a time: only the top
// sets are kept.
struct Accumulator {
  std::vector<std::vector<gcsim::compress::Index>> tops;
  double norm = 0;
  double mass = 0;

  void add(const float* values, int64_t n, int64_t k) {
    double total = 0;
    for (int64_t i = 0; i < n; ++i)
      total += static_cast<double>(values[i]) * static_cast<double>(values[i]);
    tops.push_back(
        gcsim::compress::topk_indices(values, static_cast<size_t>(n), static_cast<size_t>(k)));
    double top = 0;
    for (gcsim::compress::Index i : tops.back())
      top += static_cast<double>(values[i]) * static_cast<double>(values[i]);
    norm += std::sqrt(total);
    mass += total > 0 ? top / total : 0.0;
  }
  double mean_norm() const { return norm / static_cast<double>(tops.size()); }
  double mean_mass() const { return mass / static_cast<double>(tops.size()); }
  double overlap(int64_t k) const { return gcsim::trace::mean_pairwise_overlap(tops, k); }
};

double percent(double produced, double captured) {
  return 100.0 * (produced / captured - 1.0);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s TRACE WORKERS METHOD SEED [MIN_PARAMS]\n", argv[0]);
    return 2;
  }
  try {
    using namespace gcsim::trace;
    Trace trace = Trace::open(argv[1]);
    const int64_t workers = std::atoll(argv[2]);
    const std::string method = argv[3];
    const auto seed = static_cast<uint64_t>(std::strtoull(argv[4], nullptr, 10));
    const int64_t min_params = argc > 5 ? std::atoll(argv[5]) : 10000;
    const int64_t captured = trace.captured_workers();
    if (workers <= captured + 1) {
      std::fprintf(stderr, "WORKERS must exceed the %lld captured workers by 2 or more\n",
                   static_cast<long long>(captured));
      return 2;
    }
    GradientSource source(trace, workers, seed, method);
    const auto& layers = trace.manifest().layers;
    auto top_size = [](int64_t n) {
      return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(0.01 * static_cast<double>(n))), 1,
                                 n);
    };
    std::printf("%s, %lld workers from %lld, seed %llu; produced / captured - 1\n",
                source.method().c_str(), static_cast<long long>(workers),
                static_cast<long long>(captured), static_cast<unsigned long long>(seed));
    std::vector<float> gradient;
    for (size_t i = 0; i < trace.iteration_count(); ++i) {
      std::vector<Accumulator> real(layers.size()), made(layers.size());
      for (int64_t w = 0; w < workers; ++w) {
        if (w < captured)
          trace.read_gradient(i, w, gradient);
        else
          source.gradient(i, w, gradient);
        for (size_t l = 0; l < layers.size(); ++l)
          if (layers[l].params >= min_params)
            (w < captured ? real : made)[l].add(gradient.data() + layers[l].offset,
                                                layers[l].params, top_size(layers[l].params));
      }
      for (size_t l = 0; l < layers.size(); ++l) {
        if (layers[l].params < min_params)
          continue;
        const int64_t k = top_size(layers[l].params);
        double overlap_real = real[l].overlap(k), overlap_made = made[l].overlap(k);
        std::printf("iteration %5lld  %-28s %9lld  norm %+6.1f%%  overlap %.3f / %.3f %+6.1f%%  "
                    "top mass %+6.1f%%\n",
                    static_cast<long long>(trace.manifest().iterations[i]), layers[l].name.c_str(),
                    static_cast<long long>(layers[l].params),
                    percent(made[l].mean_norm(), real[l].mean_norm()), overlap_made, overlap_real,
                    percent(overlap_made, overlap_real),
                    percent(made[l].mean_mass(), real[l].mean_mass()));
      }
    }
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "trace_synthesis_fidelity: %s\n", error.what());
    return 2;
  }
}
