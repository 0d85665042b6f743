#pragma once
// Simulating the points of a measured run on a platform.
//
// SimGrid allows one engine per process, and training::simulate() creates
// its own; so every simulation here runs in a forked child process that
// sends its numbers back through a pipe. The caller's process never holds an
// engine and can simulate as often as it likes (the CLI, the tests).

#include "sim/network/platform.hpp"
#include "sim/validate/measured_run.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::validate {

/// Simulated seconds of each collective point, in order, each run alone on
/// the first `ranks` workers of `platform`, with the algorithm the measured
/// library used (ring allreduce and allgather; gloo's binomial-tree
/// broadcast whose senders post all their sends at once, or NCCL's
/// pipelined ring). Throws std::runtime_error when the simulation fails.
std::vector<double> simulate_collectives(const net::PlatformSpec& platform,
                                         const std::vector<CollectivePoint>& points);

struct SimulatedIteration {
  double iteration_s = 0;
  double compute_s = 0;       // forward + backward + optimizer (the measured inputs)
  double compression_s = 0;   // the compressor's kernels, mean over workers
  double communication_s = 0; // iteration - compute - compression_s, as measured
  double bytes_sent_per_worker = 0;
  /// What the simulation took as the run's compute and, for a compressed
  /// run, its kernels' times (for the report; empty for a scenario's run).
  std::string compute_inputs;
  std::string compression_inputs;
};

/// Where compressed runs take what the measured file does not hold.
struct TrainingInputs {
  /// The gradients the compressors run on: a captured trace of the same
  /// model (workloads/traces/fmnist-cnn-16w for the mini-cluster's CNN);
  /// its layers must match the measured run's.
  std::filesystem::path trace;
  /// Prices the compression kernels (the CPU profile for the mini-cluster).
  std::filesystem::path device;
  /// What named them (gcsim validate's options), for the errors of a file
  /// that cannot be read.
  std::string trace_source = "--trace";
  std::string device_source = "--device";
  uint64_t seed = 1;
  /// For error messages: the measured file; `runs` are its training[] in order.
  std::string measured_file;
};

/// The parameters the simulated compressor gets for a measured run: its
/// density, and the wire format closest to scripts/minicluster/worker.py's
/// (results/validation/README.md lists what still differs).
nlohmann::json simulated_compressor_params(const TrainingRun& run);

/// Simulated mean iteration (after the run's warm-up) of each training run
/// through training::simulate(): the measured forward, backward and
/// optimizer means are the workload's inputs (this validates the network,
/// the compressors' communication and the iteration's composition, not the
/// compute cost model). On a platform whose workers share a machine's cores
/// (`shared_cores`) the inputs are the run's `compute_alone` times instead (a
/// run without them is refused: its in-run times hold the sharing, which the
/// simulation would add again). Dense runs reduce the gradient in one
/// bucket after the backward pass, as scripts/minicluster/worker.py does (overlap as recorded).
/// Compressed runs run the real compressor (compressors/) on the trace's gradients for as many
/// iterations as were measured, with its kernels priced by the device profile or scaled to the
/// run's measured compression (`compute_alone.compression_s` on shared cores, else the in-run
/// mean), through the compressed iteration model.
/// Runs with a scenario are left at zero: `gcsim validate` simulates them with `gcsim run`. Throws
/// InputError for a trace that does not fit a run, for a run without `compute_alone` on shared
/// cores and for measured times that alone make an iteration compute past kLongestSeconds, and
/// training::IterationTooLong for a simulated iteration longer than kLongestSeconds.
std::vector<SimulatedIteration> simulate_training(const net::PlatformSpec& platform,
                                                  const std::vector<TrainingRun>& runs,
                                                  const TrainingInputs& inputs);

} // namespace gcsim::validate
