#pragma once
// Gradients for P simulated workers from a trace that captured W workers.
//
// P <= W (method "captured"): worker p is captured worker p; the first P
// captured workers are used.
//
// P > W: workers 0..W-1 are still the captured ones; the others come from
// one of two documented methods (workloads/README.md, "More workers than
// captured", has the measured fidelity of both):
//
// "gaussian_deviation" (default): g_p[j] = m[j] + s[j] * z, with m the
//   captured workers' mean, s[j]^2 = (1/W) sum_w (g_w[j] - m[j])^2 their
//   per-element variance, and z a standard normal drawn from a counter-based
//   generator keyed by (seed, iteration index, p, j). Expected squared norms
//   equal the captured workers' mean squared norm; synthesized workers are
//   independent given m, as data-parallel workers on disjoint micro-batches are.
//
// "blockwise_shuffle": the gradient is cut into blocks of `block_elements`
//   elements; block b of worker p (group g = p / W, rank r = p % W) is copied
//   from captured worker (r + o(seed, iteration, g, b)) mod W. This is the
//   captured mean plus a deviation resampled block by block from the captured
//   deviations (without replacement inside a group of W). It keeps exact
//   captured values but, for P > W, two workers share a block's source with
//   probability 1/W, which raises their top-k overlap.
//
// Deterministic from the seed; not thread-safe (it caches the moments of the
// last iteration used).

#include "sim/trace/trace.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::trace {

class GradientSource {
public:
  static constexpr int64_t kDefaultBlockElements = 64;

  /// Names accepted by the constructor, for validating scenario input.
  static const std::vector<std::string>& synthesis_methods();

  /// `workers` is P >= 1; `seed` is the scenario seed; `synthesis` one of
  /// synthesis_methods(), used only when P exceeds the captured workers.
  GradientSource(Trace trace, int64_t workers, uint64_t seed,
                 const std::string& synthesis = "gaussian_deviation",
                 int64_t block_elements = kDefaultBlockElements);

  const Trace& trace() const { return trace_; }
  int64_t workers() const { return workers_; }
  size_t iteration_count() const { return trace_.iteration_count(); }
  int64_t total_params() const { return trace_.total_params(); }
  /// "captured", "gaussian_deviation" or "blockwise_shuffle": what
  /// result.json should report.
  const std::string& method() const { return method_; }
  /// {"method", "trace", "captured_workers", "workers", "iterations", and for
  /// synthesis "seed" (and "block_elements" for blockwise_shuffle)}
  nlohmann::json describe() const;

  /// Gradient of simulated worker `worker` (0..P-1) at captured iteration
  /// index `iteration_index`, float32, layers at their manifest offsets.
  void gradient(size_t iteration_index, int64_t worker, std::vector<float>& out);
  /// Weights of that iteration (the same for every worker).
  void weights(size_t iteration_index, std::vector<float>& out) const;

  /// blockwise_shuffle: the captured worker that supplies block `block`.
  int64_t source_worker(size_t iteration_index, int64_t worker, int64_t block) const;

private:
  void shuffled(size_t iteration_index, int64_t worker, std::vector<float>& out) const;
  void gaussian(size_t iteration_index, int64_t worker, std::vector<float>& out);
  void load_moments(size_t iteration_index);

  Trace trace_;
  int64_t workers_;
  uint64_t seed_;
  int64_t block_elements_;
  std::string method_;
  // Mean and per-element standard deviation of the captured workers at
  // moments_iteration_ (gaussian_deviation only).
  size_t moments_iteration_ = static_cast<size_t>(-1);
  std::vector<float> mean_;
  std::vector<float> spread_;
};

} // namespace gcsim::trace
