#pragma once
// Gradients for P simulated workers from a trace that captured W workers.
//
// P <= W: worker p is captured worker p (the first P are used); method
// "captured".
// P > W: method "blockwise_shuffle". Workers 0..W-1 are the captured ones.
// Worker p >= W belongs to group g = p / W and has rank r = p % W; its
// gradient is cut into blocks of `block_elements` consecutive elements
// (default 64) and block b is copied from captured worker
//     (r + o(seed, iteration index, g, b)) mod W
// with o a hash-derived offset in [0, W). Equivalently: the captured mean
// plus a deviation resampled, block by block, from the captured workers'
// deviations, without replacement within each group of W workers (within a
// group every block comes from W distinct captured workers, so pairs in a
// group look exactly like pairs of captured workers). Per-element marginals,
// the expected per-layer norm and the mean of the gradients are those of the
// capture; two workers of different groups share a block's source with
// probability 1/W, which slightly raises their top-k overlap (measured in
// workloads/README.md). Deterministic from the seed.

#include "sim/trace/trace.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::trace {

class GradientSource {
public:
  static constexpr int64_t kDefaultBlockElements = 64;

  /// `workers` is P >= 1; `seed` is the scenario seed.
  GradientSource(Trace trace, int64_t workers, uint64_t seed,
                 int64_t block_elements = kDefaultBlockElements);

  const Trace& trace() const { return trace_; }
  int64_t workers() const { return workers_; }
  size_t iteration_count() const { return trace_.iteration_count(); }
  int64_t total_params() const { return trace_.total_params(); }
  /// "captured" or "blockwise_shuffle": what result.json should report.
  const std::string& method() const { return method_; }
  /// {"method", "trace", "captured_workers", "workers", "seed", "block_elements"}
  nlohmann::json describe() const;

  /// Gradient of simulated worker `worker` (0..P-1) at captured iteration
  /// index `iteration_index`, float32, layers at their manifest offsets.
  void gradient(size_t iteration_index, int64_t worker, std::vector<float>& out) const;
  /// Weights of that iteration (the same for every worker).
  void weights(size_t iteration_index, std::vector<float>& out) const;

  /// The captured worker that supplies block `block` of `worker`.
  int64_t source_worker(size_t iteration_index, int64_t worker, int64_t block) const;

private:
  Trace trace_;
  int64_t workers_;
  uint64_t seed_;
  int64_t block_elements_;
  std::string method_;
};

} // namespace gcsim::trace
