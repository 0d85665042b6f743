#pragma once
// Runs a real compressor on real (or labelled synthetic) gradients,
// iteration by iteration, and turns what it did into the iteration model's
// schedule: its steps with the bytes it really selected, its kernels priced
// by the device profile. The numbers about quality (density after
// aggregation, fidelity against the dense average) come from the tensors.

#include "compressors/compressor.hpp"
#include "sim/training/gradient_feed.hpp"
#include "sim/training/iteration_model.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::cost {
class DeviceProfile;
}

namespace gcsim::training {

struct CompressionQuality {
  double density_after_aggregation = 0; // nonzeros of the applied update / d
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

/// Where the per-worker state lives: in memory, or in unlinked scratch
/// files in `dir` (same results, slower). Two kinds: the dense state a
/// compressor keeps besides the residuals (DGC's and Sketched-SGD's local
/// momentum, read and written a row per worker) and the error-feedback
/// residuals themselves (mapped from the file, paged by the kernel). "auto"
/// spills the momenta when residuals and momenta of all workers together
/// would not fit (state_fits, memory_limits()), and the residuals too when
/// they alone would not; "always" spills both, "never" neither.
struct StateSpill {
  std::string mode = "auto"; // "auto", "always" or "never"
  std::string dir;           // the scratch directory (default_scratch_dir())
};

/// $TMPDIR when set and not empty, /tmp otherwise.
std::string default_scratch_dir();

/// The memory this process may use: the machine's, and the memory limit of
/// its cgroup if it has one (a container, a batch job, `systemd-run -p
/// MemoryMax=`).
struct MemoryLimits {
  double physical_bytes = 0;
  std::optional<double> cgroup_bytes;
};
MemoryLimits memory_limits();
/// Whether `state_floats` floats of per-worker state (for a gradient of d
/// values) may stay in memory: at most half of the physical memory, and,
/// under a cgroup limit, with room for about eight gradient-sized buffers
/// besides it inside 95% of the limit. "auto" spills what does not fit.
bool state_fits(double state_floats, size_t d, const MemoryLimits& limits);
/// The lowest memory limit that `proc_self_cgroup` (the text of
/// /proc/self/cgroup) names under `cgroup_root` (/sys/fs/cgroup): v1's
/// memory.limit_in_bytes, v2's memory.max (pure or hybrid); none when
/// every one is "max" or missing.
std::optional<double> cgroup_memory_limit(const std::string& proc_self_cgroup,
                                          const std::filesystem::path& cgroup_root);

/// Whether `policy` spills the per-worker state of `compressor` for a
/// gradient of d values on `workers` workers (never when it keeps none).
bool should_spill(const StateSpill& policy, const compress::Compressor& compressor, size_t d,
                  int workers);
/// Whether `policy` maps the residuals of `workers` workers (d values each)
/// from a scratch file.
bool should_spill_residuals(const StateSpill& policy, size_t d, int workers);

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
