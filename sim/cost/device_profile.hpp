#pragma once
// A device profile: what one GPU (or CPU) costs per layer and per compression
// kernel, as fitted curves next to the raw timings they came from, with the
// provenance of every figure. Format: platforms/devices/README.md.

#include "sim/cost/fit.hpp"
#include "sim/cost/kernels.hpp"

#include <array>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::cost {

/// One cited figure of a derived profile.
struct Source {
  std::string figure; // what it is ("V100 memory bandwidth")
  std::string value;  // as published ("900 GB/s")
  std::string source; // where it was published (URL, paper, datasheet)
};

struct Provenance {
  std::string kind;            // "measured" or "derived"
  std::string command;         // measured: the exact command
  std::string date;            // measured: ISO date of the run
  std::string host;            // measured: where it ran (optional)
  std::string regime;          // what the selection kernels model (e.g. "legacy_torch_topk")
  std::vector<Source> sources; // derived: every figure used
};

/// One kernel's model: the fitted curve, the points it was fitted to (empty
/// for a derived profile) and, for derived profiles, how it was derived.
struct KernelModel {
  std::string regime;
  std::string source;
  Curve curve;
  std::vector<Sample> points;
  std::vector<double> repetitions; // per point, how many timed runs (0 = unknown)
};

/// A measured kernel's curve and points: the points as a profile file stores
/// them (seconds to seven significant digits) and the curve fitted to those.
/// That is exactly what `gcsim profile refit` makes of the written file;
/// fitting the unrounded timings instead can break a near tie in the choice
/// of pieces the other way, and the file would not be refit's fixed point.
KernelModel fit_measured_kernel(Kernel kernel, std::vector<Sample> samples);

/// Forward/backward compute: FLOPs over an achieved FLOP rate with a
/// per-layer-kind efficiency (relative to that rate), plus a fixed per-layer
/// launch latency.
struct ComputeModel {
  double forward_flops_per_s = 0;
  double backward_flops_per_s = 0;
  double layer_latency_s = 0;
  std::array<double, 7> efficiency{}; // indexed like layer_kinds()
  std::string source;
};

/// One model's per-layer forward and backward times measured on this device
/// at a few micro-batch sizes (scripts/calibrate/fit_compute.py
/// --model-times). They replace the FLOP model for a workload of that name.
struct ModelTimes {
  struct Layer {
    std::vector<double> forward_s, backward_s; // one per entry of batches
  };
  std::string source;
  std::vector<int> batches; // increasing
  std::map<std::string, Layer, std::less<>> layers;

  /// {forward, backward} seconds of `layer` for a micro-batch of `batch`:
  /// linear between the two measured batches around it, scale_to_batch from
  /// the nearest one outside them with `fixed_s` per pass; nullopt for a
  /// layer not measured.
  std::optional<std::pair<double, double>> layer_seconds(std::string_view layer, int batch,
                                                         double fixed_s) const;
};

/// A layer's pass that took `seconds` at micro-batch `from_batch`, at
/// `to_batch`: its fixed cost `fixed_s` (the device's layer_latency) plus
/// the rest in proportion to the batch. A pass of a few samples is bound by
/// its kernels' launches, not by its arithmetic: at batch 1 it costs about
/// that latency, not a sixteenth of batch 16's time. A pass no longer than
/// `fixed_s` keeps its time going down and scales in proportion going up.
double scale_to_batch(double seconds, int from_batch, int to_batch, double fixed_s);

class DeviceProfile {
public:
  /// Reads and validates a profile; every problem is an InputError naming the
  /// file and the JSON path. `check_monotone` false lets a fit whose time
  /// drops between pieces through, for `gcsim profile refit` to replace.
  static DeviceProfile load(const std::filesystem::path& file, bool check_monotone = true);
  /// Same, from parsed JSON; `file` only labels errors.
  static DeviceProfile from_json(const nlohmann::json& json, const std::string& file,
                                 bool check_monotone = true);
  /// The profile as JSON, in the format load() reads.
  nlohmann::json to_json() const;

  /// The layer kinds forward/backward accept, in the order of
  /// ComputeModel::efficiency: conv, linear, norm, embedding, lstm, attention, other.
  static const std::array<std::string_view, 7>& layer_kinds();

  const std::string& name() const { return name_; }
  const std::string& device_kind() const { return device_kind_; }
  const std::string& device_model() const { return device_model_; }
  const nlohmann::json& device() const { return device_; }
  const Provenance& provenance() const { return provenance_; }
  const ComputeModel& compute() const { return compute_; }
  const KernelModel& kernel(Kernel kernel) const {
    return kernels_[static_cast<std::size_t>(kernel)];
  }
  /// Measured layer times of the model named `model`, or nullptr.
  const ModelTimes* model_times(std::string_view model) const;
  const std::map<std::string, ModelTimes, std::less<>>& all_model_times() const {
    return model_times_;
  }
  /// The file the profile was read from ("" when built in code), for messages.
  const std::string& file() const { return file_; }

  /// Forward time of one layer for a whole micro-batch; `flops` are the
  /// layer's forward FLOPs (2 per multiply-accumulate) for that micro-batch.
  /// Throws std::invalid_argument on an unknown kind or negative FLOPs, and
  /// InputError when the time is not one a simulation can run (infinite or
  /// over ~30 years: an absurd figure in the profile or the workload); so do
  /// the other time functions below.
  double forward_seconds(std::string_view layer_kind, double flops) const;
  /// Backward time of the same layer; `flops` are its backward FLOPs for
  /// that micro-batch (the workload's backward_flops).
  double backward_seconds(std::string_view layer_kind, double flops) const;
  /// SGD with momentum over `parameters` floats (memory-bound).
  double optimizer_seconds(double parameters) const;
  /// A compression kernel by name (see kernels.hpp for the fields each reads).
  /// Throws std::invalid_argument on an unknown name or a negative field.
  double kernel_seconds(std::string_view kernel, const KernelShape& shape) const;
  double kernel_seconds(Kernel kernel, const KernelShape& shape) const;

  // Building a profile (calibration, tests).
  void set_name(std::string name) { name_ = std::move(name); }
  /// `device` is the profile's "device" object: kind, model and free-form details.
  void set_device(std::string kind, std::string model, nlohmann::json details);
  void set_provenance(Provenance provenance) { provenance_ = std::move(provenance); }
  void set_compute(ComputeModel compute) { compute_ = std::move(compute); }
  void set_kernel(Kernel kernel, KernelModel model);

private:
  /// Whether a time is one SimGrid can run: finite and at most ~30 years.
  static bool runnable(double seconds);
  /// Throws the InputError for a time that is not: it names this profile's
  /// `path` (an absurd rate or coefficient here, or absurd sizes from the
  /// workload).
  [[noreturn]] void fail_unrunnable(const std::string& path, const std::string& what, double size,
                                    const char* unit, double seconds) const;
  /// One pass of a layer: the per-layer latency plus `flops` at `rate` times
  /// the kind's efficiency; `pass` names it in the error.
  double pass_seconds(const char* pass, double rate, std::string_view layer_kind,
                      double flops) const;

  std::string name_;
  std::string device_kind_ = "cpu";
  std::string device_model_;
  nlohmann::json device_ = nlohmann::json::object();
  Provenance provenance_;
  ComputeModel compute_;
  std::array<KernelModel, kKernelCount> kernels_;
  std::map<std::string, ModelTimes, std::less<>> model_times_;
  std::string file_;
};

} // namespace gcsim::cost
