#include "sim/training/plan.hpp"

#include "sim/cost/device_profile.hpp"
#include "sim/input/input_error.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/trace/manifest.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <optional>

namespace gcsim::training {

const cost::ModelTimes* profile_model_times(const Workload& workload,
                                            const cost::DeviceProfile& profile) {
  return workload.measured_batch ? nullptr : profile.model_times(workload.name);
}

std::vector<LayerTimes> layer_times(const Workload& workload, const cost::DeviceProfile& profile,
                                    int batch) {
  std::vector<LayerTimes> times;
  times.reserve(workload.layers.size());
  const cost::ModelTimes* measured = profile_model_times(workload, profile);
  for (const Layer& layer : workload.layers) {
    LayerTimes time;
    if (layer.measured_forward_s && layer.measured_backward_s && workload.measured_batch) {
      // Measured on the trace's own device, whose per-layer latency the
      // profile does not know: in proportion to the batch.
      const double scale = static_cast<double>(batch) / *workload.measured_batch;
      time.forward_s = *layer.measured_forward_s * scale;
      time.backward_s = *layer.measured_backward_s * scale;
    } else if (measured) {
      const auto seconds =
          measured->layer_seconds(layer.name, batch, profile.compute().layer_latency_s);
      if (!seconds)
        throw InputError(profile.file(), "/model_times/" + json_pointer_token(workload.name),
                         "no times for layer \"" + layer.name + "\" of " + workload.source +
                             ": measured on another architecture of that name");
      time.forward_s = seconds->first;
      time.backward_s = seconds->second;
    } else if (workload.flops_unknown) {
      // Priced by FLOPs, a trace's layer computed in no time at all.
      throw InputError((std::filesystem::path(workload.source) / trace::kManifestFileName).string(),
                       "/modules",
                       "layer \"" + layer.name +
                           "\" has no measured compute times, and the trace records no FLOPs: "
                           "give the scenario a compute_spec (the model's layer spec), or use a "
                           "device profile with model_times for \"" +
                           workload.name + "\"");
    } else {
      time.forward_s = profile.forward_seconds(layer.kind, layer.forward_flops * batch);
      time.backward_s = profile.backward_seconds(layer.kind, layer.backward_flops * batch);
    }
    times.push_back(time);
  }
  // Times of a layer the spec does not have: another architecture of that
  // name, whose compute the spec's layers alone would understate.
  if (measured != nullptr && measured->layers.size() > workload.layers.size())
    for (const auto& [name, unused] : measured->layers)
      if (std::none_of(workload.layers.begin(), workload.layers.end(),
                       [&name = name](const Layer& layer) { return layer.name == name; }))
        throw InputError(profile.file(),
                         "/model_times/" + json_pointer_token(workload.name) + "/layers/" +
                             json_pointer_token(name),
                         "a layer " + workload.source +
                             " does not have: measured on another architecture of that name");
  return times;
}

IterationPlan dense_plan(const Scenario& scenario, const cost::DeviceProfile& profile) {
  IterationPlan plan;
  plan.layers = layer_times(scenario.workload, profile, scenario.training.batch_per_worker);
  for (const Layer& layer : scenario.workload.layers)
    plan.layer_bytes.push_back(static_cast<uint64_t>(layer.parameters) * 4);
  plan.optimizer_s = profile.optimizer_seconds(static_cast<double>(scenario.workload.parameters()));
  // The reader caps bucket_size at kLargestBytes; the clamp keeps a scenario
  // built in code from a cast past 2^64 (undefined: 0 on x86, a bucket per layer).
  plan.bucket_bytes =
      static_cast<uint64_t>(std::clamp(scenario.training.bucket_bytes, 0.0, kLargestBytes));
  plan.first_bucket_bytes =
      static_cast<uint64_t>(std::clamp(scenario.training.first_bucket_bytes, 0.0, kLargestBytes));
  plan.overlap = scenario.training.overlap;
  plan.kernels_share_device = scenario.training.kernels_share_device;
  plan.algorithm = scenario.training.allreduce;
  plan.broadcast = scenario.training.broadcast;
  if (scenario.platform.has_gpu_machines())
    plan.ranks_per_node = scenario.platform.gpus_per_node;
  plan.iterations = scenario.training.iterations;
  plan.compute_variation = scenario.training.compute_variation;
  plan.seed = scenario.seed;
  return plan;
}

std::vector<Extrapolation> extrapolated_kernels(const IterationPlan& plan, double parameters,
                                                const cost::DeviceProfile& profile) {
  struct Span {
    double least = std::numeric_limits<double>::infinity(), most = 0;
    void add(double value) {
      least = std::min(least, value);
      most = std::max(most, value);
    }
  };
  struct Priced {
    double n = 0;
    Span k, rows, cols;
  };
  std::map<std::string, Priced> priced{{"sgd_momentum", {parameters, {}, {}, {}}}};
  for (const CompressedIteration& iteration : plan.compressed)
    for (const CompressionPart& part : iteration.parts)
      for (const std::vector<KernelPlan>& worker : part.kernels)
        for (const KernelPlan& kernel : worker) {
          Priced& sizes = priced[kernel.name];
          sizes.n = std::max(sizes.n, kernel.n);
          sizes.k.add(kernel.k);
          sizes.rows.add(kernel.rows);
          sizes.cols.add(kernel.cols);
        }
  std::vector<Extrapolation> past;
  for (const auto& [name, sizes] : priced) {
    const std::optional<cost::Kernel> kernel = cost::fitted_kernel_of(name);
    assert(kernel && "a planned kernel is one the profile priced");
    const cost::Curve& curve = profile.kernel(*kernel).curve;
    const cost::ShapeRange& fitted = curve.range();
    // Rows and columns scale a sketch's cost, and pieces fitted at one
    // count can cross at another: said like sizes past the fitted ones. A k
    // (selected or sampled) only above them, as n: the first piece prices
    // every smaller one (a DGC sample of 20 on the H200's fit from 64).
    std::vector<Extrapolation::OutsideFit> outside;
    const auto check = [&outside](bool used, const char* field, const Span& span, double least,
                                  double most) {
      if (used && (span.least < least || span.most > most))
        outside.push_back({field, {span.least, span.most}, {least, most}});
    };
    check(curve.family().uses_k && sizes.k.most > fitted.k_max, "k", sizes.k, fitted.k_min,
          fitted.k_max);
    check(curve.family().uses_rows, "rows", sizes.rows, fitted.rows_min, fitted.rows_max);
    check(curve.family().uses_cols, "cols", sizes.cols, fitted.cols_min, fitted.cols_max);
    if (sizes.n > fitted.n_max || !outside.empty())
      past.push_back({name, sizes.n, fitted.n_max, std::move(outside)});
  }
  return past;
}

} // namespace gcsim::training
