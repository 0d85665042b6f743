#pragma once
// A captured gradient trace: its manifest plus streaming, memory-mapped
// access to the gradient of captured worker w at captured iteration i and to
// the weights of iteration i. Nothing is held in memory between calls, so a
// trace far larger than memory replays with bounded RSS.

#include "sim/trace/manifest.hpp"
#include "sim/trace/npy.hpp"

#include <filesystem>
#include <vector>

namespace gcsim::trace {

class Trace {
public:
  /// Loads the manifest of `folder` (or of a manifest.json path) and checks
  /// that every .npy file it lists exists with the header the manifest
  /// implies (dtype, one dimension of total_params elements, exact size).
  /// Reading the headers costs a few hundred bytes per file.
  static Trace open(const std::filesystem::path& folder);

  const Manifest& manifest() const { return manifest_; }
  int64_t captured_workers() const { return manifest_.workers; }
  size_t iteration_count() const { return manifest_.iterations.size(); }
  int64_t total_params() const { return manifest_.total_params; }

  /// Gradient of captured worker `worker` at captured iteration index
  /// `iteration_index` (0-based into manifest().iterations), as float32 with
  /// the layers at their manifest offsets. `out` is resized to total_params.
  /// An element is_usable_value refuses (NaN, infinite, or past
  /// kLargestTraceValue) is an InputError naming the file and layer.
  void read_gradient(size_t iteration_index, int64_t worker, std::vector<float>& out) const;
  /// The weights at which the gradients of that iteration were computed.
  void read_weights(size_t iteration_index, std::vector<float>& out) const;

  /// A validated mapping of one gradient file, for readers that want slices.
  MappedNpy map_gradient(size_t iteration_index, int64_t worker) const;
  /// Throws an InputError naming `array`'s file and the layer holding
  /// element `element`, which is_usable_value refused.
  [[noreturn]] void fail_unusable(const MappedNpy& array, size_t element, float value) const;

private:
  explicit Trace(Manifest manifest) : manifest_(std::move(manifest)) {}
  void check_header(const NpyHeader& header, const std::string& file, NpyDtype expected) const;
  MappedNpy map_checked(const std::filesystem::path& file, NpyDtype expected) const;
  void read_all(const MappedNpy& array, std::vector<float>& out) const;

  Manifest manifest_;
};

} // namespace gcsim::trace
