#pragma once
// Simulating the points of a measured run on a platform.
//
// SimGrid allows one engine per process, and training::simulate() creates
// its own; so every simulation here runs in a forked child process that
// sends its numbers back through a pipe. The caller's process never holds an
// engine and can simulate as often as it likes (the CLI, the tests).

#include "sim/network/platform.hpp"
#include "sim/validate/measured_run.hpp"

#include <vector>

namespace gcsim::validate {

/// Simulated seconds of each collective point, in order, each run alone on
/// the first `ranks` workers of `platform`, with the algorithm the measured
/// library used (gloo: ring allreduce and allgather, binomial-tree
/// broadcast whose senders post all their sends at once). Throws
/// std::runtime_error when the simulation fails.
std::vector<double> simulate_collectives(const net::PlatformSpec& platform,
                                         const std::vector<CollectivePoint>& points);

struct SimulatedIteration {
  double iteration_s = 0;
  double compute_s = 0;
  double communication_s = 0; // not hidden by compute
};

/// Simulated mean iteration of each dense training run (the rest must be
/// filtered out by the caller) through training::simulate(): the measured
/// forward, backward and optimizer times are the workload's inputs (this
/// validates the network and the iteration's composition, not the cost
/// model), the gradient is reduced in one bucket after the backward pass as
/// scripts/minicluster/worker.py does (overlap as recorded).
std::vector<SimulatedIteration> simulate_dense_training(const net::PlatformSpec& platform,
                                                        const std::vector<TrainingRun>& runs);

} // namespace gcsim::validate
