#pragma once
// A model as the simulator sees it: its layers in forward order, with
// parameter counts and FLOPs per sample. Format: workloads/README.md.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::training {

/// A parameter tensor of a layer: its name in the module (weight, bias)
/// and shape (a scalar's is empty).
struct Tensor {
  std::string name; // may be empty: the spec's name is optional
  std::vector<int64_t> shape;
};

/// What the `index`th tensor of a layer is called after the layer's name:
/// its own name, or its index where it has none.
std::string tensor_label(const Tensor& tensor, size_t index);

struct Layer {
  std::string name;
  std::string kind; // conv, linear, norm, embedding, lstm, attention, other
  int64_t parameters = 0;
  double forward_flops = 0;  // per sample
  double backward_flops = 0; // per sample
  /// The parameter tensors the layer holds, in order, where the spec gives
  /// them; empty otherwise. Their sizes add up to `parameters`. The
  /// compressors see a layer per tensor then (PowerSGD needs the shapes).
  std::vector<Tensor> tensors;
  /// Measured on a real device for the trace's micro-batch (seconds), when
  /// the workload comes from a trace manifest that recorded them.
  std::optional<double> measured_forward_s;
  std::optional<double> measured_backward_s;
};

struct Workload {
  std::string name;
  std::string source; // the file it came from
  std::vector<Layer> layers;
  /// Micro-batch of the measured times, if any, and the device they were
  /// measured on ("cpu"): those times, scaled to the scenario's batch, are the
  /// compute; the device profile then times only the optimizer and the
  /// compression kernels.
  std::optional<int> measured_batch;
  std::string measured_on;
  /// The layer spec whose FLOPs and name a trace's compute was taken from
  /// (a scenario's compute_spec); empty otherwise.
  std::string compute_spec;
  /// A trace's layers carry no FLOPs: only measured times (the trace's own,
  /// a profile's model_times) or a compute_spec can price their compute.
  bool flops_unknown = false;

  int64_t parameters() const;
  double gradient_bytes() const { return 4.0 * static_cast<double>(parameters()); }
};

/// Validates a layer-spec JSON; errors name `file` and the JSON path.
Workload read_layer_spec(const nlohmann::json& json, const std::string& file);

/// The layers of a captured trace (sim/trace/), with the per-layer times
/// measured at capture when it recorded them.
Workload workload_from_trace_folder(const std::filesystem::path& folder);

/// Makes a trace's compute come from the device profile: the layers take
/// `spec`'s kinds and FLOPs (and the workload its name, for the profile's
/// measured model times) and drop the times measured at capture. Throws
/// std::invalid_argument unless `spec` has the same layers (names, order,
/// parameter counts).
void take_compute_from(Workload& trace, const Workload& spec);

} // namespace gcsim::training
