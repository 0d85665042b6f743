#pragma once
// manifest.json of a gradient trace folder (format: workloads/README.md,
// "Gradient traces"). Loading checks every field and every cross-field fact
// the reader relies on (offsets, sizes, module grouping), so later code can
// trust the Manifest it is given.

#include "sim/trace/npy.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::trace {

/// One parameter tensor; its gradient is elements [offset, offset + params)
/// of every worker's flattened gradient file.
struct TraceLayer {
  std::string name;   // "layer1.0.conv1.weight"
  std::string module; // "layer1.0.conv1": the module owning the tensor
  std::vector<int64_t> shape;
  int64_t params = 0;
  int64_t offset = 0;
};

/// One leaf module of the captured model in forward execution order, with the
/// mean measured time per micro-batch on the capture machine (when measured).
struct TraceModule {
  std::string name;
  std::string type; // "Conv2d", "ReLU", ...
  int64_t params = 0;
  std::optional<double> forward_s;
  std::optional<double> backward_s;
};

/// How and where the module times were measured.
struct CaptureTiming {
  std::string device; // "cpu"
  std::string cpu;
  int64_t threads = 0;
  int64_t micro_batch = 0;
  int64_t samples = 0; // forward+backward passes averaged
  double forward_total_s = 0;
  double backward_total_s = 0;
  std::string method;
};

struct Manifest {
  std::filesystem::path folder;
  std::string file; // path of manifest.json, for error messages

  int64_t format_version = 1;
  std::string model;
  std::string dataset;
  std::vector<int64_t> input_shape;
  int64_t workers = 0;     // W, the captured workers
  int64_t micro_batch = 0; // samples per worker per iteration
  std::string optimizer;
  double learning_rate = 0;
  int64_t seed = 0;
  int64_t iterations_trained = 0;
  int64_t capture_start = 0;
  int64_t capture_stride = 1;
  /// Training iteration numbers captured, increasing. Readers index them
  /// 0..iterations.size()-1 ("iteration index").
  std::vector<int64_t> iterations;
  /// False for a statistics-only trace (layers and timings, no .npy files).
  bool has_tensors = true;
  NpyDtype dtype = NpyDtype::float32;         // of the gradient files
  NpyDtype weights_dtype = NpyDtype::float32; // of the weight files
  int64_t total_params = 0;
  std::vector<TraceLayer> layers;
  std::vector<TraceModule> modules; // empty when the capture measured no times
  std::optional<CaptureTiming> timing;
  std::string capture_command;
  /// Informational fields kept verbatim (capture, loss, test_accuracy,
  /// float16_loss): for result files and `gcsim inspect`.
  nlohmann::json provenance = nlohmann::json::object();

  size_t iteration_count() const { return iterations.size(); }
  std::filesystem::path gradient_file(size_t iteration_index, int64_t worker) const;
  std::filesystem::path weights_file(size_t iteration_index) const;
};

/// The manifest's file name in a trace folder.
inline constexpr const char* kManifestFileName = "manifest.json";

/// Loads `path`, a trace folder or its manifest.json. Bad content is an
/// InputError naming manifest.json and the JSON path.
Manifest load_manifest(const std::filesystem::path& path);

} // namespace gcsim::trace
