#pragma once
// Runs a real compressor on real (or labelled synthetic) gradients,
// iteration by iteration, and turns what it did into the iteration model's
// schedule: its steps with the bytes it really selected, its kernels priced
// by the device profile. The numbers about quality (density after
// aggregation, fidelity against the dense average) come from the tensors.

#include "compressors/compressor.hpp"
#include "sim/training/gradient_feed.hpp"
#include "sim/training/iteration_model.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::cost {
class DeviceProfile;
}

namespace gcsim::training {

struct CompressionQuality {
  double density_after_aggregation = 0; // selected coordinates of the update / d
  double cosine = 0;                    // applied update vs the dense average
  double rel_l2 = 0;
  double energy_share = 0;
  double bytes_sent_mean = 0; // per worker, from the compressor's own steps
  nlohmann::json info;        // the compressor's facts (leader, threshold...)
};

struct CompressedRun {
  std::vector<CompressedIteration> schedule;
  std::vector<CompressionQuality> quality;
};

/// One schedule part from a compressor's iteration result (ready_layer 0).
CompressionPart schedule_of(const compress::IterationResult& result, int workers,
                            const cost::DeviceProfile& profile);

/// Runs `iterations` iterations of `compressor` on `feed` for `workers`
/// workers (error feedback memories kept across iterations), on the whole
/// model: each iteration is one part, ready when the backward pass ends.
/// With a `residual_dir`, the residuals are mapped from an unlinked scratch
/// file there instead of kept in memory (same results).
CompressedRun run_compressor(compress::Compressor& compressor, GradientFeed& feed, int workers,
                             int iterations, uint64_t seed, const cost::DeviceProfile& profile,
                             const std::string& residual_dir = {});

using CompressorFactory = std::function<std::unique_ptr<compress::Compressor>()>;

/// The same with one compressor (made by `make`, so each keeps its own
/// state) per bucket, on that bucket's layers: each iteration has one part
/// per bucket, in the buckets' (backward) order, ready when the backward
/// pass reaches the bucket's first layer. `buckets` and `layer_bytes` are
/// the plan's (make_buckets over IterationPlan::layer_bytes; layers without
/// parameters, which the feed leaves out, included). Only for compressors
/// that can_run_per_bucket(). Bucket 0 uses `seed`, bucket b another stream.
CompressedRun run_compressor_per_bucket(const CompressorFactory& make, GradientFeed& feed,
                                        const std::vector<Bucket>& buckets,
                                        const std::vector<uint64_t>& layer_bytes, int workers,
                                        int iterations, uint64_t seed,
                                        const cost::DeviceProfile& profile,
                                        const std::string& residual_dir = {});

} // namespace gcsim::training
