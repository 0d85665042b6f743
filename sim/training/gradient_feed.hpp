#pragma once
// Where the P workers' gradients of each iteration come from: a real
// captured trace (sim/trace/), or — for layer-spec workloads that have no
// trace — a synthetic stand-in that is labelled as such in result.json.

#include "compressors/tensor.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::training {

struct Workload;

class GradientFeed {
public:
  virtual ~GradientFeed() = default;
  virtual const compress::LayerLayout& layout() const = 0;
  /// Worker `worker`'s gradient at iteration `iteration` (0, 1, 2...; a
  /// trace wraps around its captured iterations).
  virtual void gradient(int iteration, int worker, std::vector<float>& out) = 0;
  /// The weights at that iteration; false when the feed has none.
  virtual bool weights(int iteration, std::vector<float>& out) = 0;
  /// For result.json: what produced the gradients.
  virtual nlohmann::json describe() const = 0;
};

/// Real gradients from a trace folder; P may exceed the captured workers
/// (the trace's documented synthesis method then makes the extra ones).
std::unique_ptr<GradientFeed> make_trace_feed(const std::filesystem::path& trace, int workers,
                                              uint64_t seed, const std::string& synthesis);

/// How a layer spec's synthetic gradients are made (a scenario's
/// `gradients`; workloads/scenarios/README.md, "Where the gradients come
/// from").
struct SyntheticGradients {
  /// "capture_fitted": per element, a log-normal scale every worker shares
  /// times a normal signal every worker shares plus each worker's own
  /// normal noise, fitted to a ResNet-18 capture's top-1% overlap between
  /// workers and top-1% energy share. "shared_heavy_signal" (the only one
  /// before 2026-12-08): a shared cubed-Laplace signal plus a small
  /// triangular noise per worker, so workers select nearly the same
  /// elements.
  std::string method = "capture_fitted";
  /// capture_fitted: the share of a worker's expected squared norm that
  /// all workers share (their values' correlation), in [0, 1].
  double signal_share = 0.1;
  /// capture_fitted: the standard deviation of the log of an element's
  /// scale; larger makes workers' top sets overlap more, in [0, 2].
  double spread = 0.28;

  static const std::vector<std::string>& methods();
};

/// Synthetic gradients sized like `workload` (SyntheticGradients;
/// capture_fitted: each weight's expected squared norm 1, a vector's
/// elements half its weight's). Their density and fidelity figures are the
/// synthesizer's, labelled so in result.json.
std::unique_ptr<GradientFeed> make_synthetic_feed(const Workload& workload, int workers,
                                                  uint64_t seed,
                                                  const SyntheticGradients& how = {});

} // namespace gcsim::training
