#pragma once
// The data-parallel training iteration on SimGrid actors.
//
// Per worker: forward, then backward layer by layer in reverse; gradients
// are fused into buckets (PyTorch DDP style) and each bucket's allreduce
// starts when its last gradient is ready, overlapping the rest of the
// backward pass (or after it, with overlap off); the optimizer step follows
// the last bucket. One communication actor per worker runs the buckets'
// collectives in order, so concurrent traffic shares the network as SimGrid
// says it does.

#include "sim/network/platform.hpp"
#include "sim/scenario/scenario.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gcsim::training {

struct LayerTimes {
  double forward_s = 0;
  double backward_s = 0;
};

/// Everything one simulated training run needs, in plain numbers.
struct IterationPlan {
  std::vector<LayerTimes> layers;    // forward order, for one micro-batch
  std::vector<uint64_t> layer_bytes; // gradient bytes per layer
  double optimizer_s = 0;
  uint64_t bucket_bytes = 0;
  bool overlap = true;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::ring;
  int iterations = 1;
};

/// A bucket: layers [first_layer, last_layer] in forward order, reduced once
/// the backward pass reaches first_layer.
struct Bucket {
  int first_layer = 0;
  int last_layer = 0;
  uint64_t bytes = 0;
};

/// DDP-style bucketing: walk the layers in backward order and close a
/// bucket once it holds at least `bucket_bytes`.
std::vector<Bucket> make_buckets(const std::vector<uint64_t>& layer_bytes, uint64_t bucket_bytes);

struct IterationRecord {
  double start_s = 0;               // simulated clock when the iteration began
  double iteration_s = 0;           // from the previous iteration's end to this one's
  double compute_s = 0;             // forward + backward + optimizer on one worker
  double communication_s = 0;       // communication not hidden by compute
  double communication_total_s = 0; // time the collectives ran, hidden or not
  double bytes_sent_per_worker = 0; // mean over workers
  double bytes_sent_max_worker = 0;
};

struct RunResult {
  std::vector<Bucket> buckets;
  std::vector<IterationRecord> iterations;
};

/// Called after each iteration with (iteration index, simulated clock).
using ProgressCallback = std::function<void(int, double)>;

/// Creates the SimGrid engine, builds the platform and runs each plan in
/// turn on it (one engine per process: this can be called once). Plans run
/// one after the other, so a dense baseline and a compressed run share a
/// platform without disturbing each other.
std::vector<RunResult> simulate(const net::PlatformSpec& platform,
                                const std::vector<IterationPlan>& plans,
                                const ProgressCallback& progress = {});

} // namespace gcsim::training
