#pragma once
// A measured run of a real cluster: the cluster as measured, collective
// benchmark points and training runs with per-iteration times and phases.
// Format ("gcsim-measured-run/1"): results/validation/README.md. Written by
// scripts/minicluster/run.py; runs on other clusters are converted to it.

#include "sim/input/paths.hpp"
#include "sim/network/collectives.hpp"
#include "sim/network/platform.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::validate {

enum class Collective { allreduce, allgather, broadcast };
/// The algorithm the measured library used: gloo's and NCCL's allreduce
/// and allgather are rings, and NCCL's allreduce may be its double binary
/// tree (NCCL_ALGO=Tree; "tree"); gloo's broadcast is a binomial tree whose
/// senders post all their sends at once (gloo/broadcast.cc), NCCL's a ring
/// (a chain from the root) pipelined in chunks.
enum class Algorithm { ring, binomial_tree, tree };
/// The elements' type, as torch names it. A float16 ring allreduce moves the
/// bytes a float32 one of that size does; where the library sums float16 in
/// software on the CPU (gloo), its sums can outlast the transfers: the
/// platform's float16_sum (validate --fit derives it from these points).
enum class DataType { float32, float16 };

const char* collective_name(Collective collective);
const char* algorithm_name(Algorithm algorithm);
const char* data_type_name(DataType type);
/// What a point of `collective` runs when it names no algorithm: gloo's.
Algorithm default_algorithm(Collective collective);

/// One collective benchmark point. `bytes` is the whole buffer, as
/// nccl-tests reports it: for allgather the output, each rank giving bytes/P.
struct CollectivePoint {
  Collective collective = Collective::allreduce;
  Algorithm algorithm = Algorithm::ring;
  DataType dtype = DataType::float32; // float16: ring allreduce only
  int ranks = 0;
  uint64_t bytes = 0;
  uint64_t chunk_bytes = net::kNcclChunkBytes; // a ring broadcast's pipeline piece
  double seconds = 0;                          // the median over the repetitions
  int repetitions = 0;
};
/// "allreduce", or "allreduce/tree" where the algorithm is not the default,
/// "allreduce/float16" for float16 elements: how the comparison and its plot
/// name a point's kind.
std::string point_label(const CollectivePoint& point);

struct IterationTimes {
  double iteration_s = 0;
  double forward_s = 0;
  double backward_s = 0;
  double compute_s = 0; // forward + backward
  double compression_s = 0;
  double communication_s = 0;
  double optimizer_s = 0;
};

/// A rank's compute measured while every other rank waited: its cost on a
/// core of its own (the in-run times hold whatever core sharing there was).
struct ComputeAlone {
  double forward_s = 0;
  double backward_s = 0;
  double optimizer_s = 0;
  /// The compressor's selection per iteration, mean over iterations in which
  /// the rank leads as often as in the run (absent: priced by the device
  /// profile instead).
  std::optional<double> compression_s;
};

struct TrainingRun {
  std::string name;
  /// Where set, the run is simulated as this gcsim scenario (its workload,
  /// compute model, training loop and compressor) on the validated platform,
  /// and the file gives no compressor, workload, overlap or compute_alone:
  /// compressor and compressor_params then come from the scenario, and the
  /// workload's fields stay empty.
  std::filesystem::path scenario;
  /// The files that scenario reads (its own first), which no output may be
  /// written over.
  std::vector<NamedFile> scenario_inputs;
  std::string compressor; // known_compressors(), or any of a scenario's
  nlohmann::json compressor_params;
  int ranks = 0;
  std::vector<uint64_t> layer_bytes; // forward order
  /// Optional, for every layer or none: each layer's tensor shape (its
  /// elements times 4 bytes are its bytes); compared with the trace's where
  /// the compressors run on one.
  std::vector<std::vector<int64_t>> layer_shapes;
  /// Optional, for every layer or none: the backward pass's time in each
  /// (for DDP's buckets, from the previous bucket's data ready to this
  /// one's); the simulation then reduces each layer's gradient on its own as
  /// the backward pass reaches it.
  std::vector<double> layer_backward_s;
  int batch_per_worker = 0;
  bool overlap = false;
  int warmup_iterations = 0;
  std::vector<IterationTimes> iterations; // every iteration, warm-up included
  /// Optional (run.py writes it); mean over ranks.
  std::optional<ComputeAlone> compute_alone;
  /// As the script counted it (optional; -1 when absent): informative only.
  double bytes_sent_per_worker = -1;

  /// Mean of the iterations after the warm-up.
  IterationTimes steady_mean() const;
  uint64_t gradient_bytes() const;
};

struct MeasuredRun {
  std::filesystem::path file;
  std::string name;
  net::PlatformSpec cluster;          // as measured: rated bandwidth, measured latency
  nlohmann::json cluster_description; // the cluster as the file writes it
  std::vector<CollectivePoint> collectives;
  std::vector<TrainingRun> training;
};

/// The compressors a measured training run may name: the mini-cluster's
/// (dense, topk, cltk, deft, with a density) and DDP's hooks fp16 and
/// powersgd (with gcsim's parameters of that name).
const std::vector<std::string>& known_compressors();
/// topk, cltk and deft: those a measured run gives a density.
bool selects_by_density(const std::string& compressor);

/// Reads and validates; every problem is an InputError naming the file and
/// the JSON path.
MeasuredRun read_measured_run(const std::filesystem::path& file);

} // namespace gcsim::validate
