#include "sim/training/workload.hpp"

#include "sim/input/json_reader.hpp"
#include "sim/trace/manifest.hpp"
#include "sim/trace/trace.hpp"
#include "sim/trace/workload.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace gcsim::training {

int64_t Workload::parameters() const {
  return std::accumulate(layers.begin(), layers.end(), int64_t{0},
                         [](int64_t sum, const Layer& layer) { return sum + layer.parameters; });
}

std::string tensor_label(const Tensor& tensor, size_t index) {
  return tensor.name.empty() ? std::to_string(index) : tensor.name;
}

namespace {

// A layer's "tensors": [{"name", "shape"}] in the order the layer holds them,
// their sizes adding up to the layer's parameters.
std::vector<Tensor> read_tensors(ObjectReader& layer, int64_t parameters) {
  if (parameters == 0)
    layer.fail("tensors", "a layer of no parameters holds no tensors: leave \"tensors\" out");
  const nlohmann::json& tensors = layer.require("tensors");
  if (!tensors.is_array() || tensors.empty())
    layer.fail("tensors", "expected a non-empty array of {\"name\", \"shape\"} (the layer's "
                          "parameter tensors), got " +
                              describe_json(tensors));
  std::vector<Tensor> read;
  int64_t elements = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    ObjectReader tensor(tensors[t], layer.file(),
                        layer.path_of("tensors") + "/" + std::to_string(t));
    std::string name = tensor.string_or("name", "");
    if (tensor.has("name") && name.empty())
      tensor.fail("name", "is empty: leave it out for an unnamed tensor");
    // The compressors' layer is named after it (an unnamed one after its
    // index, as the feed names it), in messages.
    const std::string shown = tensor_label({name, {}}, t);
    for (size_t b = 0; b < read.size(); ++b)
      if (tensor_label(read[b], b) == shown) {
        const std::string what = "\"" + shown +
                                 "\" names an earlier tensor of the layer too (an unnamed one "
                                 "is named by its index): a layer's tensor names must be unique";
        if (name.empty())
          tensor.fail_here(what);
        tensor.fail("name", what);
      }
    // Extents bounded as the layer's parameters are; the sizes are checked
    // against the layer below, where a message can say so.
    std::vector<int64_t> shape = tensor.integers("shape", 1, int64_t{1} << 40);
    tensor.finish();
    int64_t product = 1;
    for (const int64_t extent : shape) {
      if (product > parameters / extent)
        tensor.fail("shape", "holds more elements than the layer's " + std::to_string(parameters) +
                                 " parameters");
      product *= extent;
    }
    elements += product;
    if (elements > parameters)
      tensor.fail("shape", "takes the layer's tensors past its " + std::to_string(parameters) +
                               " parameters");
    read.push_back({std::move(name), std::move(shape)});
  }
  if (elements != parameters)
    layer.fail("tensors", "hold " + std::to_string(elements) + " elements, but the layer has " +
                              std::to_string(parameters) + " parameters");
  return read;
}

} // namespace

Workload read_layer_spec(const nlohmann::json& json, const std::string& file) {
  ObjectReader reader(json, file, "");
  for (const char* informative :
       {"description", "dataset", "sample_unit", "input_shape", "flops_per_sample", "generated_by",
        "torch_version", "comment", "parameters"})
    reader.allow(informative);
  Workload workload;
  workload.source = file;
  workload.name = reader.string("name");
  const nlohmann::json& layers = reader.require("layers");
  if (!layers.is_array() || layers.empty())
    reader.fail("layers", "expected a non-empty array of layers, got " + describe_json(layers));
  for (size_t i = 0; i < layers.size(); ++i) {
    ObjectReader item(layers[i], file, "/layers/" + std::to_string(i));
    Layer layer;
    layer.name = item.string("name");
    if (layer.name.empty())
      item.fail("name", "expected the layer's name (a device profile's measured times and the "
                        "trace's tensors are found by it), got \"\"");
    // Required: without them a layer was "other" and computed in no time
    // beyond the latency, silently.
    layer.kind =
        item.choice("kind", {"conv", "linear", "norm", "embedding", "lstm", "attention", "other"});
    layer.parameters = item.integer("parameters", 0, int64_t{1} << 40);
    layer.forward_flops = item.number("forward_flops");
    layer.backward_flops = item.number_or("backward_flops", 2 * layer.forward_flops);
    // Per sample; the largest layers of today's models are around 1e12, and
    // a bound keeps a whole batch's FLOPs finite.
    constexpr double kMostFlopsPerSample = 1e18;
    for (const auto& [key, flops] : {std::pair{"forward_flops", layer.forward_flops},
                                     std::pair{"backward_flops", layer.backward_flops}}) {
      if (!(flops >= 0 && flops <= kMostFlopsPerSample))
        item.fail(key, "expected a number in [0, 1e18] (FLOPs per sample), got " +
                           (item.has(key) ? describe_json(item.require(key))
                                          : fmt::format("{:g} (twice forward_flops)", flops)));
    }
    if (item.has("tensors"))
      layer.tensors = read_tensors(item, layer.parameters);
    item.finish();
    // A profile's measured times are found by layer name.
    for (size_t j = 0; j < workload.layers.size(); ++j)
      if (workload.layers[j].name == layer.name)
        item.fail("name", "\"" + layer.name + "\" is also layer " + std::to_string(j) +
                              "'s name: layer names must be unique");
    workload.layers.push_back(std::move(layer));
  }
  if (workload.parameters() <= 0)
    reader.fail("layers", "the model has no parameters");
  // Informative, but a total that disagrees with the layers says one of
  // them is wrong.
  if (const nlohmann::json* flops = reader.find("flops_per_sample")) {
    ObjectReader totals = reader.object("flops_per_sample");
    totals.string_or("comment", "");
    for (const char* pass : {"forward", "backward"}) {
      double sum = 0;
      for (const Layer& layer : workload.layers)
        sum += pass[0] == 'f' ? layer.forward_flops : layer.backward_flops;
      const double stated = totals.number(pass);
      if (!(std::fabs(stated - sum) <= 1e-6 * std::max(1.0, sum)))
        totals.fail(pass, "says " + (*flops)[pass].dump() + " but the layers add up to " +
                              fmt::format("{:.0f}", sum));
    }
    totals.finish();
  }
  if (const nlohmann::json* total = reader.find("parameters");
      total != nullptr &&
      (!total->is_number_integer() || total->get<int64_t>() != workload.parameters()))
    reader.fail("parameters", "says " + total->dump() + " but the layers add up to " +
                                  std::to_string(workload.parameters()));
  reader.finish();
  return workload;
}

} // namespace gcsim::training

namespace gcsim::training {
namespace {
std::string kind_of_module(const std::string& type) {
  if (type.find("Conv") != std::string::npos)
    return "conv";
  if (type == "Linear")
    return "linear";
  if (type.find("Norm") != std::string::npos)
    return "norm";
  if (type == "Embedding")
    return "embedding";
  if (type == "LSTM")
    return "lstm";
  return "other";
}
} // namespace

Workload workload_from_trace_folder(const std::filesystem::path& folder) {
  trace::Trace opened = trace::Trace::open(folder);
  trace::TraceWorkload layers = trace::workload_from_trace(opened.manifest());
  Workload workload;
  workload.name = layers.model;
  workload.source = folder.string();
  workload.flops_unknown = true;
  if (layers.has_times) {
    workload.measured_batch = static_cast<int>(layers.micro_batch);
    workload.measured_on = layers.timing_device;
  }
  for (const trace::WorkloadLayer& layer : layers.layers) {
    Layer converted;
    converted.name = layer.name;
    converted.kind = kind_of_module(layer.type);
    converted.parameters = layer.params;
    converted.measured_forward_s = layer.forward_s;
    converted.measured_backward_s = layer.backward_s;
    workload.layers.push_back(std::move(converted));
  }
  return workload;
}

void take_compute_from(Workload& trace, const Workload& spec) {
  if (spec.layers.size() != trace.layers.size())
    throw std::invalid_argument(spec.source + " has " + std::to_string(spec.layers.size()) +
                                " layers, the trace " + std::to_string(trace.layers.size()));
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const Layer& from = spec.layers[i];
    Layer& to = trace.layers[i];
    if (from.name != to.name || from.parameters != to.parameters)
      throw std::invalid_argument(spec.source + ": layer " + std::to_string(i) + " is \"" +
                                  from.name + "\" with " + std::to_string(from.parameters) +
                                  " parameters, the trace's \"" + to.name + "\" with " +
                                  std::to_string(to.parameters));
    to.kind = from.kind;
    to.forward_flops = from.forward_flops;
    to.backward_flops = from.backward_flops;
    to.measured_forward_s.reset();
    to.measured_backward_s.reset();
  }
  trace.name = spec.name;
  trace.measured_batch.reset();
  trace.measured_on.clear();
  trace.compute_spec = spec.source;
  trace.flops_unknown = false;
}

} // namespace gcsim::training
