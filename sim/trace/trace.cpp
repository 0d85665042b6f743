#include "sim/trace/trace.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <system_error>

namespace gcsim::trace {

Trace Trace::open(const std::filesystem::path& folder) {
  Trace trace(load_manifest(folder));
  const Manifest& manifest = trace.manifest_;
  if (!manifest.has_tensors)
    return trace;
  for (size_t i = 0; i < manifest.iterations.size(); ++i) {
    std::filesystem::path weights = manifest.weights_file(i);
    // A missing iteration is the manifest's word against the folder's, not
    // a missing weights.npy.
    std::error_code error;
    if (!std::filesystem::is_directory(weights.parent_path(), error))
      throw InputError(manifest.file, "/iterations/" + std::to_string(i),
                       "lists iteration " + std::to_string(manifest.iterations[i]) + ", but " +
                           weights.parent_path().string() + " is not a folder" +
                           (error && error != std::errc::no_such_file_or_directory
                                ? " (" + error.message() + ")"
                                : ""));
    trace.check_header(read_npy_header(weights), weights.string(), manifest.weights_dtype);
    for (int64_t w = 0; w < manifest.workers; ++w) {
      std::filesystem::path gradient = manifest.gradient_file(i, w);
      trace.check_header(read_npy_header(gradient), gradient.string(), manifest.dtype);
    }
  }
  return trace;
}

void Trace::check_header(const NpyHeader& header, const std::string& file,
                         NpyDtype expected) const {
  if (header.dtype != expected)
    throw InputError(file, "",
                     "holds " + dtype_name(header.dtype) + " but " + manifest_.file + " says " +
                         dtype_name(expected));
  if (header.shape.size() != 1 || header.shape[0] != manifest_.total_params) {
    std::string shape = "(";
    for (size_t i = 0; i < header.shape.size(); ++i)
      shape += (i ? ", " : "") + std::to_string(header.shape[i]);
    shape += header.shape.size() == 1 ? ",)" : ")";
    throw InputError(file, "",
                     "has shape " + shape + " but " + manifest_.file + " says total_params " +
                         std::to_string(manifest_.total_params) + ", so the shape must be (" +
                         std::to_string(manifest_.total_params) + ",)");
  }
}

MappedNpy Trace::map_checked(const std::filesystem::path& file, NpyDtype expected) const {
  if (!manifest_.has_tensors)
    throw InputError(manifest_.file, "/has_tensors",
                     "this trace holds statistics only, no gradient or weight tensors");
  MappedNpy array = MappedNpy::open(file);
  check_header(array.header(), array.file(), expected);
  return array;
}

MappedNpy Trace::map_gradient(size_t iteration_index, int64_t worker) const {
  return map_checked(manifest_.gradient_file(iteration_index, worker), manifest_.dtype);
}

void Trace::fail_unusable(const MappedNpy& array, size_t element, float value) const {
  // The layers tile the gradient in order, so the holder is found by offset.
  auto holder = std::upper_bound(
      manifest_.layers.begin(), manifest_.layers.end(), static_cast<int64_t>(element),
      [](int64_t e, const TraceLayer& layer) { return e < layer.offset; });
  std::string where =
      holder == manifest_.layers.begin()
          ? std::string()
          : " (layer " + std::prev(holder)->name + ", element " +
                std::to_string(static_cast<int64_t>(element) - std::prev(holder)->offset) + ")";
  throw InputError(array.file(), "",
                   "element " + std::to_string(element) + where + " is " +
                       describe_unusable(value));
}

void Trace::read_all(const MappedNpy& array, std::vector<float>& out) const {
  out.resize(static_cast<size_t>(manifest_.total_params));
  size_t bad = array.read_float32(0, out.size(), out.data());
  if (bad != MappedNpy::npos)
    fail_unusable(array, bad, out[bad]);
}

void Trace::read_gradient(size_t iteration_index, int64_t worker, std::vector<float>& out) const {
  read_all(map_gradient(iteration_index, worker), out);
}

void Trace::read_weights(size_t iteration_index, std::vector<float>& out) const {
  read_all(map_checked(manifest_.weights_file(iteration_index), manifest_.weights_dtype), out);
}

} // namespace gcsim::trace
