#pragma once
// A scenario: the platform, the workload, the device profile, the training
// loop settings, the compressor and the seed. Format: workloads/README.md.

#include "compressors/compressor.hpp"
#include "sim/input/paths.hpp"
#include "sim/network/platform.hpp"
#include "sim/scenario/overrides.hpp"
#include "sim/training/gradient_feed.hpp"
#include "sim/training/workload.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim {

enum class AllreduceAlgorithm {
  ring,
  recursive_doubling,
  double_binary_tree,
  hierarchical,
  parameter_server
};
const char* algorithm_name(AllreduceAlgorithm algorithm);

/// A compressor's broadcast steps (a leader's indices, gTop-k's result): a
/// binomial tree (MPI's, gloo's), or NCCL's pipelined ring along the ranks.
enum class BroadcastAlgorithm { binomial, ring };
const char* broadcast_name(BroadcastAlgorithm algorithm);

struct TrainingSpec {
  int iterations = 3;
  /// The first iterations, left out of the summary (a compressor's dense
  /// warm-up, a threshold settling); still listed per iteration.
  int warmup_iterations = 0;
  int batch_per_worker = 32;
  double bucket_bytes = 25.0 * 1048576; // PyTorch DDP's default bucket_cap_mb
  /// The first bucket to fill (the last layers, first ready): DDP's 1 MiB
  /// (dist._DEFAULT_FIRST_BUCKET_BYTES), so the first allreduce starts early;
  /// by default never more than bucket_bytes.
  double first_bucket_bytes = 1048576;
  bool overlap = true; // communication overlaps the backward pass
  /// Where a compressor runs: "model" (on the whole gradient, once the
  /// backward pass is over), "bucket" (one instance per bucket, overlapping
  /// the backward pass; only compressors that can), or "auto" (bucket where
  /// the compressor can, model otherwise).
  std::string compression_scope = "auto";
  /// Whether compression kernels that run while the backward pass computes
  /// share the worker's device with it (each slowed while both run), or
  /// overlap it for free (the default, an optimistic bound).
  bool kernels_share_device = false;
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::ring;
  BroadcastAlgorithm broadcast = BroadcastAlgorithm::binomial;
  /// Stragglers: the coefficient of variation of a worker's compute time
  /// from one iteration to the next. 0: every worker computes alike.
  double compute_variation = 0;
};

struct Scenario {
  std::string name;
  std::filesystem::path file;
  net::PlatformSpec platform;
  std::string platform_source; // the file the platform came from (or the scenario)
  /// The JSON path of the platform in platform_source: "/platform" when it
  /// is inline in the scenario, the whole file otherwise.
  std::string platform_path() const { return platform_source == file.string() ? "/platform" : ""; }
  training::Workload workload;
  /// Set when the workload is a captured trace: its gradients drive the
  /// compressors. Otherwise compressors run on labelled synthetic gradients.
  std::optional<std::filesystem::path> trace_folder;
  /// How a trace makes gradients for more workers than it captured.
  std::string synthesis = "shrunk_mean_scaling"; // trace::GradientSource::default_synthesis()
  /// How a layer spec's synthetic gradients are made.
  training::SyntheticGradients synthetic;
  std::filesystem::path device_file;
  TrainingSpec training;
  nlohmann::json compressor = {{"name", "dense"}};
  uint64_t seed = 1;
  /// The scenario after overrides, with the platform inlined: written into
  /// result.json so a run can be repeated.
  nlohmann::json resolved;
  /// The --set overrides applied to it.
  std::vector<Override> overrides;

  /// Every file the scenario reads (itself, its platform file and SimGrid
  /// XML, layer specs, trace manifest, device profile), each named as a
  /// command's error says it: what no output may be written over.
  std::vector<NamedFile> input_files() const;

  /// What an error at `pointer` (a field of the scenario, e.g. a compressor
  /// parameter checked after loading) names: the --set that wrote the field
  /// or one holding it, else the scenario file.
  std::string source_of(const std::string& pointer) const;

  /// Whether a --set wrote the field at `pointer` or one holding it.
  bool overridden(const std::string& pointer) const;

  /// The scenario's compressor, from the registry, which checks the name and
  /// every parameter: one at fault is an InputError at its field.
  std::unique_ptr<compress::Compressor> make_compressor() const;
};

/// Loads, applies overrides and a seed override, and validates everything
/// but the device profile and the compressor parameters (their own modules
/// validate those). Every problem is an InputError naming the file and the
/// JSON path (or the --set that caused it). With `schedule_replayed` the
/// run's iterations are a replayed schedule's, which the replay checks the
/// warm-up against instead of training.iterations.
Scenario load_scenario(const std::filesystem::path& file, const std::vector<Override>& overrides,
                       std::optional<uint64_t> seed, bool schedule_replayed = false);

} // namespace gcsim
