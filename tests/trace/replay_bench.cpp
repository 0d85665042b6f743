// Replays a trace the way the simulator does: for every captured iteration,
// every simulated worker's gradient is read into memory it keeps for that
// iteration (P vectors of total_params floats), plus the weights. Run under
// /usr/bin/time -v to measure the peak resident set (workloads/README.md).
// Usage: trace_replay_bench TRACE WORKERS [ITERATIONS] [METHOD]

#include "sim/trace/gradient_source.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TRACE WORKERS [ITERATIONS] [METHOD]\n", argv[0]);
    return 2;
  }
  try {
    gcsim::trace::Trace trace = gcsim::trace::Trace::open(argv[1]);
    const int64_t workers = std::atoll(argv[2]);
    size_t iterations =
        argc > 3 ? static_cast<size_t>(std::atoll(argv[3])) : trace.iteration_count();
    iterations = std::min(iterations, trace.iteration_count());
    gcsim::trace::GradientSource source(trace, workers, 1,
                                        argc > 4 ? argv[4] : "gaussian_deviation");
    std::vector<std::vector<float>> gradients(static_cast<size_t>(workers));
    std::vector<float> weights;
    auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < iterations; ++i) {
      source.weights(i, weights);
      double mass = 0;
      for (int64_t w = 0; w < workers; ++w) {
        source.gradient(i, w, gradients[static_cast<size_t>(w)]);
        for (float v : gradients[static_cast<size_t>(w)])
          mass += static_cast<double>(v) * static_cast<double>(v);
      }
      std::printf("iteration %lld: %lld workers x %lld params, mean gradient norm %.4f\n",
                  static_cast<long long>(trace.manifest().iterations[i]),
                  static_cast<long long>(workers), static_cast<long long>(trace.total_params()),
                  std::sqrt(mass / static_cast<double>(workers)));
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("method %s, %.2f s\n", source.method().c_str(), seconds);
    return 0;
  } catch (const gcsim::InputError& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 2;
  }
}
