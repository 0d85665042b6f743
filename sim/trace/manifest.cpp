#include "sim/trace/manifest.hpp"

#include "compressors/params.hpp"
#include "sim/input/json_reader.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

namespace gcsim::trace {
namespace {

constexpr int64_t kMaxCount = int64_t{1} << 50;

std::string index_path(const std::string& path, size_t index) {
  return path + "/" + std::to_string(index);
}

const nlohmann::json& array_field(ObjectReader& reader, std::string_view key) {
  const nlohmann::json& value = reader.require(key);
  if (!value.is_array())
    reader.fail(key, "expected an array, got " + describe_json(value));
  return value;
}

std::optional<double> seconds_or_none(ObjectReader& reader, std::string_view key) {
  if (!reader.has(key)) {
    reader.allow(key);
    return std::nullopt;
  }
  return reader.seconds(key);
}

NpyDtype dtype_field(ObjectReader& reader, std::string_view key, NpyDtype fallback) {
  return reader.named_or(key, {NpyDtype::float32, NpyDtype::float16}, dtype_name, fallback);
}

TraceLayer read_layer(const nlohmann::json& value, const std::string& file,
                      const std::string& path) {
  ObjectReader reader(value, file, path);
  TraceLayer layer;
  layer.name = reader.string("name");
  if (layer.name.empty())
    reader.fail("name", "must not be empty");
  layer.module = reader.string("module");
  layer.shape = reader.integers("shape", 0, kMaxCount);
  layer.params = reader.integer("params", 1, kMaxCount);
  layer.offset = reader.integer("offset", 0, kMaxCount);
  reader.finish();
  int64_t product = 1;
  for (int64_t dim : layer.shape) {
    if (dim != 0 && product > kMaxCount / dim)
      reader.fail("shape", "is implausibly large");
    product *= dim;
  }
  if (product != layer.params)
    reader.fail("params", std::to_string(layer.params) + " is not the product of the shape (" +
                              std::to_string(product) + ")");
  return layer;
}

TraceModule read_module(const nlohmann::json& value, const std::string& file,
                        const std::string& path) {
  ObjectReader reader(value, file, path);
  TraceModule module;
  module.name = reader.string("name");
  module.type = reader.string_or("type", "");
  module.params = reader.integer("params", 0, kMaxCount);
  module.forward_s = seconds_or_none(reader, "forward_s");
  module.backward_s = seconds_or_none(reader, "backward_s");
  reader.finish();
  return module;
}

CaptureTiming read_timing(ObjectReader reader) {
  CaptureTiming timing;
  timing.device = reader.string("device");
  timing.cpu = reader.string_or("cpu", "");
  timing.threads = reader.integer_or("threads", 0, 1 << 20, 0);
  timing.micro_batch = reader.integer("micro_batch", 1, kMaxCount);
  timing.samples = reader.integer_or("samples", 0, kMaxCount, 0);
  timing.forward_total_s = seconds_or_none(reader, "forward_total_s").value_or(0);
  timing.backward_total_s = seconds_or_none(reader, "backward_total_s").value_or(0);
  timing.method = reader.string_or("method", "");
  if (reader.has("load_average")) // informational: how busy the capture machine was
    array_field(reader, "load_average");
  reader.finish();
  return timing;
}

// Layers tile [0, total_params) in order, and each module's tensors are
// adjacent, so a module is one contiguous slice of the flattened gradient.
void check_layout(const Manifest& manifest) {
  const std::string& file = manifest.file;
  int64_t next = 0;
  std::set<std::string> names;
  std::set<std::string> finished_modules;
  for (size_t i = 0; i < manifest.layers.size(); ++i) {
    const TraceLayer& layer = manifest.layers[i];
    const std::string path = index_path("/layers", i);
    if (!names.insert(layer.name).second)
      throw InputError(file, path + "/name", "layer '" + layer.name + "' appears twice");
    if (layer.offset != next)
      throw InputError(file, path + "/offset",
                       "is " + std::to_string(layer.offset) + " but the layers before it end at " +
                           std::to_string(next) + "; layers must tile the gradient in order");
    next += layer.params;
    if (i > 0 && manifest.layers[i - 1].module != layer.module)
      finished_modules.insert(manifest.layers[i - 1].module);
    if (finished_modules.count(layer.module) != 0)
      throw InputError(file, path + "/module",
                       "tensors of module '" + layer.module + "' are not adjacent");
  }
  if (next != manifest.total_params)
    throw InputError(file, "/total_params",
                     "is " + std::to_string(manifest.total_params) + " but the layers hold " +
                         std::to_string(next) + " parameters");
  if (manifest.modules.empty())
    return;
  std::set<std::string> module_names;
  for (size_t i = 0; i < manifest.modules.size(); ++i)
    if (!module_names.insert(manifest.modules[i].name).second)
      throw InputError(file, index_path("/modules", i) + "/name",
                       "module '" + manifest.modules[i].name + "' appears twice");
  // Before the modules' sizes: a typo in a layer's module leaves the module
  // it meant short, which would be blamed instead.
  for (size_t i = 0; i < manifest.layers.size(); ++i) {
    const std::string& module = manifest.layers[i].module;
    if (module_names.count(module) != 0)
      continue;
    const std::string near = compress::did_you_mean(
        module, std::vector<std::string>(module_names.begin(), module_names.end()));
    throw InputError(file, index_path("/layers", i) + "/module",
                     "module '" + module + "' is not listed in /modules" +
                         (near.empty() ? "" : "; did you mean '" + near + "'?"));
  }
  std::map<std::string, int64_t> params_by_module;
  for (const TraceLayer& layer : manifest.layers)
    params_by_module[layer.module] += layer.params;
  for (size_t i = 0; i < manifest.modules.size(); ++i) {
    const TraceModule& module = manifest.modules[i];
    const std::string path = index_path("/modules", i);
    auto it = params_by_module.find(module.name);
    int64_t owned = it == params_by_module.end() ? 0 : it->second;
    if (owned != module.params)
      throw InputError(file, path + "/params",
                       "is " + std::to_string(module.params) + " but the layers of module '" +
                           module.name + "' hold " + std::to_string(owned));
  }
  // The simulated layers are the modules in this order and the gradient is
  // the tensors in theirs: a bucket's edge, drawn between modules, fell
  // inside another module's tensors (an internal error), or silently gave a
  // bucket another module's gradient.
  std::vector<std::string> tensor_order;
  for (const TraceLayer& layer : manifest.layers)
    if (tensor_order.empty() || tensor_order.back() != layer.module)
      tensor_order.push_back(layer.module);
  size_t owning = 0;
  for (size_t i = 0; i < manifest.modules.size(); ++i) {
    const TraceModule& module = manifest.modules[i];
    if (module.params == 0)
      continue;
    if (module.name != tensor_order[owning])
      throw InputError(file, index_path("/modules", i) + "/name",
                       "module '" + module.name + "' comes where /layers has the tensors of '" +
                           tensor_order[owning] +
                           "': modules with parameters must be listed in the order of their "
                           "tensors");
    ++owning;
  }
}

} // namespace

std::filesystem::path Manifest::gradient_file(size_t iteration_index, int64_t worker) const {
  if (iteration_index >= iterations.size() || worker < 0 || worker >= workers)
    throw std::out_of_range("Manifest::gradient_file: iteration index " +
                            std::to_string(iteration_index) + " or worker " +
                            std::to_string(worker) + " outside the trace");
  char name[64];
  std::snprintf(name, sizeof name, "worker_%03lld.npy", static_cast<long long>(worker));
  return weights_file(iteration_index).parent_path() / name;
}

std::filesystem::path Manifest::weights_file(size_t iteration_index) const {
  if (iteration_index >= iterations.size())
    throw std::out_of_range("Manifest::weights_file: iteration index " +
                            std::to_string(iteration_index) + " outside the trace");
  char name[64];
  std::snprintf(name, sizeof name, "%06lld", static_cast<long long>(iterations[iteration_index]));
  return folder / "iterations" / name / "weights.npy";
}

Manifest load_manifest(const std::filesystem::path& path) {
  std::error_code error;
  const bool is_folder = std::filesystem::is_directory(path, error);
  const std::filesystem::path file = is_folder ? path / kManifestFileName : path;
  // A folder without a manifest is no trace at all ("file not found" named
  // a file the user never gave).
  if (is_folder && !std::filesystem::exists(file, error) && !error)
    throw InputError(path.string(), "",
                     "not a trace folder: it holds no " + std::string(kManifestFileName) +
                         " (a gradient trace is the folder scripts/capture_traces.py writes)");
  const nlohmann::json json = load_json_file(file);

  Manifest manifest;
  manifest.folder = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  manifest.file = file.string();
  ObjectReader reader(json, manifest.file, "");
  reader.format("gcsim-trace", "a gradient trace's manifest");
  manifest.format_version = reader.integer("format_version", 1, 1);
  manifest.model = reader.string("model");
  manifest.dataset = reader.string("dataset");
  if (reader.has("input_shape"))
    manifest.input_shape = reader.integers("input_shape", 1, kMaxCount);
  reader.number_or("num_classes", 0);
  manifest.workers = reader.integer("workers", 1, 1 << 20);
  manifest.micro_batch = reader.integer("micro_batch", 1, kMaxCount);
  manifest.optimizer = reader.string_or("optimizer", "sgd");
  manifest.learning_rate = reader.positive_number("learning_rate");
  manifest.seed = reader.integer("seed", std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max());
  manifest.iterations = reader.integers("iterations", 0, kMaxCount);
  for (size_t i = 1; i < manifest.iterations.size(); ++i)
    if (manifest.iterations[i] <= manifest.iterations[i - 1])
      throw InputError(manifest.file, index_path("/iterations", i),
                       "iteration numbers must increase");
  int64_t last = manifest.iterations.empty() ? 0 : manifest.iterations.back() + 1;
  manifest.iterations_trained = reader.integer_or("iterations_trained", last, kMaxCount, last);
  manifest.capture_start = reader.integer_or("capture_start", 0, kMaxCount, 0);
  manifest.capture_stride = reader.integer_or("capture_stride", 1, kMaxCount, 1);
  manifest.has_tensors = reader.boolean_or("has_tensors", true);
  if (manifest.has_tensors && manifest.iterations.empty())
    reader.fail("iterations", "a trace with tensors must capture at least one iteration");
  manifest.dtype = dtype_field(reader, "dtype", NpyDtype::float32);
  manifest.weights_dtype = dtype_field(reader, "weights_dtype", NpyDtype::float32);
  manifest.total_params = reader.integer("total_params", 1, kMaxCount);

  const nlohmann::json& layers = array_field(reader, "layers");
  if (layers.empty())
    reader.fail("layers", "must list at least one layer");
  for (size_t i = 0; i < layers.size(); ++i)
    manifest.layers.push_back(read_layer(layers[i], manifest.file, index_path("/layers", i)));
  if (reader.has("modules")) {
    const nlohmann::json& modules = array_field(reader, "modules");
    for (size_t i = 0; i < modules.size(); ++i)
      manifest.modules.push_back(read_module(modules[i], manifest.file, index_path("/modules", i)));
  }
  if (reader.has("timing"))
    manifest.timing = read_timing(reader.object("timing"));
  for (const char* key : {"loss", "test_accuracy", "float16_loss", "capture"})
    if (const nlohmann::json* value = reader.find(key))
      manifest.provenance[key] = *value;
  if (manifest.provenance.contains("capture") && manifest.provenance["capture"].is_object() &&
      manifest.provenance["capture"].contains("command") &&
      manifest.provenance["capture"]["command"].is_string())
    manifest.capture_command = manifest.provenance["capture"]["command"].get<std::string>();
  reader.string_or("comment", "");
  reader.finish();
  check_layout(manifest);
  return manifest;
}

} // namespace gcsim::trace
