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

/// Synthetic gradients sized like `workload`: per layer, a shared cubed-
/// Laplace "signal" plus a per-worker triangular deviation, scaled per layer. Only for
/// timing studies of models with no captured trace.
std::unique_ptr<GradientFeed> make_synthetic_feed(const Workload& workload, int workers,
                                                  uint64_t seed);

} // namespace gcsim::training
