#pragma once
// result.json and the human-readable summary of a run.
//
// result.json (seconds and bytes throughout):
//   scenario  - the scenario as run (overrides applied, platform inlined)
//   summary   - iteration_time_s, throughput_samples_per_s, compute_s,
//               compression_s, communication_s, communication_total_s,
//               bytes_sent_per_worker, ... (means over iterations)
//   iterations[] - the same fields per iteration
//   buckets[] - the gradient buckets and their sizes

#include "sim/cost/device_profile.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/training/compression.hpp"
#include "sim/training/iteration_model.hpp"
#include "sim/training/plan.hpp"

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace gcsim::output {

/// What a compressed run adds to a result: the dense baseline simulated in
/// the same invocation, the measured quality per iteration, and where the
/// gradients came from.
struct CompressionExtras {
  const training::RunResult* dense_baseline = nullptr;
  const std::vector<training::CompressionQuality>* quality = nullptr;
  std::string compressor_name = "dense";
  nlohmann::json compressor_params; // without the name
  nlohmann::json gradient_source;
  std::string compression_scope; // "model" or "bucket"; empty for dense runs
  int compression_parts = 0;     // parts per iteration (buckets compressed apart)
  /// Kernels priced past the sizes the device profile was fitted on
  /// (training::extrapolated_kernels), said in result.json and the summary.
  std::vector<training::Extrapolation> extrapolated;
};

/// result.json's model.input_digests: the files the scenario names by path
/// only (its platform is inlined in `scenario`), `fnv1a64:` digests of
/// their bytes: which bytes ran, whatever folder the paths resolved from.
/// With a `cache` (file -> digest), a file is read once however many
/// scenarios name it (a sweep's points).
nlohmann::json input_digests(const Scenario& scenario,
                             std::map<std::filesystem::path, std::string>* cache = nullptr);

nlohmann::json make_result(const Scenario& scenario, const training::RunResult& run,
                           const cost::DeviceProfile& profile,
                           const CompressionExtras& extras = CompressionExtras{});

/// The aligned table printed on stdout.
std::string format_summary(const nlohmann::json& result);

/// A JSON document as gcsim writes it (indent -1: compact), ending in a
/// newline; paths the user gave that are not UTF-8 get U+FFFD.
std::string json_text(const nlohmann::json& document, int indent = 1);

/// Writes any JSON document whole or not at all (write_file_atomically).
/// Throws WriteError.
void write_json_file(const std::filesystem::path& file, const nlohmann::json& document,
                     int indent = 1);

} // namespace gcsim::output
