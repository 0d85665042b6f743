#pragma once
// Gradients for P simulated workers from a trace that captured W workers.
//
// P <= W (method "captured"): worker p is captured worker p; the first P
// captured workers are used.
//
// P > W: workers 0..W-1 are still the captured ones; the others come from
// one of four documented methods (workloads/README.md, "More workers than
// captured", has the measured fidelity of each). With m the captured
// workers' mean and d_w = g_w - m the deviation of captured worker w:
//
// "shrunk_mean_scaling" (default): mean_scaling below, with the captured mean
//   shrunk by its sampling noise, g_p[j] = (1 + a_q[l]) c_l m[j] + s_q[l] r'[j] z.
//   m = mu + e holds the mean e of W workers' noise, and every synthesized
//   worker shares it where real workers share only mu: on a 16-worker
//   ResNet-18 capture, where |m|^2 is only 1.3-4.2 times E|e|^2 (a worker's
//   summed per-element variance over W), mean_scaling's top-1% overlap is up
//   to 28% high. With T the summed variance of a worker's residual (about
//   the scaled mean, sum_w |d_w - a_w m|^2 / (W - 1)), c_l^2 = max(0, 1 - T / (W |m|_l^2)) (|c m|^2
//   estimates |mu|^2), the energy taken from the mean is added to r^2 in proportion (r'^2), and
//   s_q[l], the scale-source worker's residual norm over the captured workers' rms, goes with its
//   scales. Each layer's expected squared norm over a group is the captured workers' mean squared
//   norm.
//
// "mean_scaling" (the default before shrunk_mean_scaling): real deviations are not independent
// across
//   elements: a worker's micro-batch scales its whole layer gradient along
//   the mean (11-40% of the deviation energy of the shipped CNN trace at
//   iterations 50-150, and a worker's scale in conv2.weight is 0.79-0.95
//   correlated with its scale in fc1.weight). So, per layer l,
//     g_p[j] = (1 + a_q[l]) m[j] + r[j] z,
//   with a_w[l] = <d_w, m>_l / |m|_l^2 captured worker w's scale along the
//   mean, q the captured worker whose scales p takes (group g = p / W takes
//   the captured workers in a permutation keyed by (seed, iteration, g), so
//   each group holds every captured scale profile once, across layers), z
//   standard normal as below, and r[j]^2 the per-element variance of what is
//   left, v[j] = (1/W) sum_w (d_w[j] - a_w[l] m[j])^2, shrunk toward a
//   separable row x column model of a weight gradient's variance by as much
//   as v's sampling noise calls for (detail::shrink_variance): with v[j]
//   itself, synthesized workers share the noise of a W-sample estimate and
//   their top-k sets gather where it came out high (on a 16-worker ResNet-18
//   capture, overlap 18-90% high; within 28.5% with the shrinkage). Over a group,
//   each layer's expected mean squared norm equals the captured workers'.
//   Synthesized workers are not quite independent given the trace: two of
//   different groups take the same scale profile with probability 1/W.
//
// "gaussian_deviation": g_p[j] = m[j] + s[j] * z, with s[j]^2 = (1/W)
//   sum_w d_w[j]^2 the per-element variance, and z a standard normal drawn
//   from a counter-based generator keyed by (seed, iteration index, p, j).
//   Expected squared norms equal the captured workers' mean squared norm;
//   synthesized workers are independent given m, as data-parallel workers on
//   disjoint micro-batches are. Element-wise noise destroys the shared
//   scaling, so workers' top-k sets overlap up to 22% less than captured ones
//   on the CNN trace; on ResNet-18 18-90% more (the unshrunk variance).
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

  /// Names accepted by the constructor, for validating scenario input; the
  /// first is the default.
  static const std::vector<std::string>& synthesis_methods();
  /// "shrunk_mean_scaling"
  static const std::string& default_synthesis();

  /// `workers` is P >= 1; `seed` is the scenario seed; `synthesis` one of
  /// synthesis_methods(), used only when P exceeds the captured workers.
  GradientSource(Trace trace, int64_t workers, uint64_t seed,
                 const std::string& synthesis = default_synthesis(),
                 int64_t block_elements = kDefaultBlockElements);

  const Trace& trace() const { return trace_; }
  int64_t workers() const { return workers_; }
  size_t iteration_count() const { return trace_.iteration_count(); }
  int64_t total_params() const { return trace_.total_params(); }
  /// "captured" or the synthesis method: what result.json should report.
  const std::string& method() const { return method_; }
  /// {"method", "trace", "captured_workers", "workers", "iterations", and for
  /// synthesis "seed"; "block_elements" for blockwise_shuffle; for
  /// mean_scaling "scale_resampling" and "residual", in words, and for
  /// shrunk_mean_scaling also "mean"}
  nlohmann::json describe() const;

  /// Gradient of simulated worker `worker` (0..P-1) at captured iteration
  /// index `iteration_index`, float32, layers at their manifest offsets.
  void gradient(size_t iteration_index, int64_t worker, std::vector<float>& out);
  /// gaussian_deviation and the mean-scaling methods: the per-element standard
  /// deviation of the noise added at that iteration (s; r after the variance
  /// shrinkage; for shrunk_mean_scaling r', before a worker's residual scale).
  const std::vector<float>& noise_spread(size_t iteration_index);
  /// shrunk_mean_scaling: per layer, the factor c that multiplies the captured
  /// mean (1 for the other methods).
  const std::vector<double>& mean_factors(size_t iteration_index);
  /// shrunk_mean_scaling: captured worker `captured_worker`'s residual norm in
  /// `layer` over the captured workers' rms (1 for the other methods).
  double residual_scale(size_t iteration_index, int64_t captured_worker, size_t layer);
  /// Weights of that iteration (the same for every worker).
  void weights(size_t iteration_index, std::vector<float>& out) const;

  /// blockwise_shuffle: the captured worker that supplies block `block`.
  int64_t source_worker(size_t iteration_index, int64_t worker, int64_t block) const;
  /// mean_scaling and shrunk_mean_scaling: the captured worker whose per-layer
  /// scales (and residual scales) worker `worker` takes (itself for a
  /// captured worker).
  int64_t scale_source(size_t iteration_index, int64_t worker) const;

private:
  void shuffled(size_t iteration_index, int64_t worker, std::vector<float>& out) const;
  void gaussian(size_t iteration_index, int64_t worker, std::vector<float>& out);
  void scaled(size_t iteration_index, int64_t worker, std::vector<float>& out);
  void add_normal(size_t iteration_index, int64_t worker, std::vector<float>& out,
                  const double* layer_scales = nullptr) const;
  void load_moments(size_t iteration_index);
  void shrink_mean(const std::vector<double>& energy, std::vector<double>& second);
  bool scales_mean() const { return method_ == "mean_scaling" || method_ == "shrunk_mean_scaling"; }

  Trace trace_;
  int64_t workers_;
  uint64_t seed_;
  int64_t block_elements_;
  std::string method_;
  // At moments_iteration_ (gaussian_deviation, mean_scaling): the captured
  // workers' mean, the per-element standard deviation of the noise that is
  // added (of the deviations, or of their residuals after the scaling), and
  // for mean_scaling the scales a_w[l], row-major [captured worker][layer].
  size_t moments_iteration_ = static_cast<size_t>(-1);
  std::vector<float> mean_;
  std::vector<float> spread_;
  std::vector<double> scales_;
  // shrunk_mean_scaling: per layer, the factor c on the captured mean; per
  // [captured worker][layer], the worker's residual norm over the rms.
  std::vector<double> mean_factors_;
  std::vector<double> residual_scales_;
};

namespace detail {
/// mean_scaling's shrinkage of one layer's residual variance (sums over
/// `workers` workers of r^2 in `second`, rewritten, and of r^4 in `fourth`)
/// toward a separable row x column model; gradient_source.cpp says why.
void shrink_variance(const TraceLayer& layer, double workers, std::vector<double>& second,
                     const std::vector<double>& fourth);
} // namespace detail

} // namespace gcsim::trace
