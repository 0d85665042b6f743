#pragma once
// A compressed run's schedule as a file (DIR/schedule.json): the steps with
// the bytes the compressor really selected and each worker's kernels with
// the sizes it processed, plus the measured quality. `gcsim run --replay`
// simulates it again on another platform or device without tensors: the
// timing-only path for what-if studies.

#include "sim/training/compression.hpp"

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace gcsim::training {

nlohmann::json schedule_to_json(const CompressedRun& run, int workers,
                                const nlohmann::json& compressor,
                                const nlohmann::json& gradient_source);

/// Reads a schedule for `workers` workers and prices its kernels with
/// `profile`; every problem is an InputError naming the file and JSON path.
CompressedRun schedule_from_file(const std::filesystem::path& file, int workers,
                                 const cost::DeviceProfile& profile, nlohmann::json& compressor,
                                 nlohmann::json& gradient_source);

} // namespace gcsim::training
