#pragma once
// A compressed run's schedule as a file (DIR/schedule.json): the steps with
// the bytes the compressor really selected and each worker's kernels with
// the sizes it processed, plus the measured quality. `gcsim run --replay`
// simulates it again on another platform or device without tensors: the
// timing-only path for what-if studies.

#include "sim/scenario/scenario.hpp"
#include "sim/training/compression.hpp"
#include "sim/training/workload.hpp"

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace gcsim::training {

/// The schedule of `run`, recorded with the model it ran on (`workload`'s
/// name, parameters and layers), which a replay must match, and its
/// compressor twice: with every parameter (what a replay runs) and as the
/// scenario wrote it (what a replay's result.json says the scenario asked).
nlohmann::json schedule_to_json(const CompressedRun& run, int workers,
                                const nlohmann::json& compressor,
                                const nlohmann::json& scenario_compressor,
                                const nlohmann::json& gradient_source, const Workload& workload);

/// Reads a schedule for `workers` workers of `workload` and prices its
/// kernels with `profile`; every problem is an InputError naming the file
/// and JSON path. A schedule recorded on another model (another parameter
/// or layer count) is refused: its bytes and kernel sizes are that model's.
/// (Schedules of gcsim before the model was recorded carry none to check.)
/// `scenario_compressor` is the compressor as the recorded run's scenario
/// wrote it, or `compressor` for a schedule that did not keep it.
CompressedRun schedule_from_file(const std::filesystem::path& file, int workers,
                                 const Workload& workload, const cost::DeviceProfile& profile,
                                 nlohmann::json& compressor, nlohmann::json& gradient_source,
                                 nlohmann::json& scenario_compressor);

/// How a schedule's compression ran: parts that start before the backward
/// pass ends come from per-bucket compression ("bucket"), else "model".
std::string compression_scope_of(const std::vector<CompressionPart>& parts);

/// A schedule replayed on a scenario (`gcsim run --replay`, and each point
/// of `gcsim sweep --replay`).
struct Replay {
  CompressedRun compressed;
  nlohmann::json compressor; // the schedule's, with its parameters
  // As the recorded run's scenario wrote it (the full parameters for a
  // schedule written before 2026-12-07, which did not keep it).
  nlohmann::json scenario_compressor;
  nlohmann::json gradient_source; // result.json's model.gradients
};

/// Reads `file` for `scenario`'s workers and model and makes the scenario
/// the replay's: its compressor, iteration count (all the schedule's, or the
/// first N of a --set training.iterations=N) and compression scope are the
/// schedule's, in `scenario.resolved` too, which result.json records. Every
/// problem (too few iterations, a layer the workload does not have) is an
/// InputError naming the file or the --set.
Replay replay_schedule(Scenario& scenario, const std::string& file,
                       const cost::DeviceProfile& profile);

} // namespace gcsim::training
