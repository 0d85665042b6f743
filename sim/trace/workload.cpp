#include "sim/trace/workload.hpp"

#include <map>

namespace gcsim::trace {
namespace {

// Layers grouped by module, in parameter (offset) order; used when the
// manifest lists no modules.
std::vector<WorkloadLayer> layers_by_module(const Manifest& manifest) {
  std::vector<WorkloadLayer> result;
  for (const TraceLayer& layer : manifest.layers) {
    if (result.empty() || result.back().name != layer.module) {
      WorkloadLayer entry;
      entry.name = layer.module;
      entry.offset = layer.offset;
      result.push_back(entry);
    }
    result.back().params += layer.params;
    result.back().tensors.push_back(layer.name);
  }
  return result;
}

} // namespace

TraceWorkload workload_from_trace(const Manifest& manifest) {
  TraceWorkload workload;
  workload.model = manifest.model;
  workload.total_params = manifest.total_params;
  workload.micro_batch = manifest.timing ? manifest.timing->micro_batch : manifest.micro_batch;
  if (manifest.modules.empty()) {
    workload.layers = layers_by_module(manifest);
    return workload;
  }

  // load_manifest guaranteed that each module's tensors are adjacent and
  // that every parameterised module is listed, so slices come from here.
  std::map<std::string, WorkloadLayer> slices;
  for (WorkloadLayer& slice : layers_by_module(manifest))
    slices.emplace(slice.name, std::move(slice));

  bool all_timed = true;
  for (const TraceModule& module : manifest.modules)
    all_timed = all_timed && module.forward_s && module.backward_s;
  workload.has_times = all_timed;
  if (all_timed)
    workload.timing_device = manifest.timing ? manifest.timing->device : "unknown";

  double pending_forward = 0, pending_backward = 0; // parameter-free modules so far
  for (const TraceModule& module : manifest.modules) {
    if (module.params == 0) {
      if (!workload.layers.empty() && all_timed) {
        *workload.layers.back().forward_s += *module.forward_s;
        *workload.layers.back().backward_s += *module.backward_s;
      } else if (all_timed) {
        pending_forward += *module.forward_s;
        pending_backward += *module.backward_s;
      }
      continue;
    }
    WorkloadLayer layer = slices.at(module.name);
    layer.type = module.type;
    if (all_timed) {
      layer.forward_s = *module.forward_s + pending_forward;
      layer.backward_s = *module.backward_s + pending_backward;
      pending_forward = pending_backward = 0;
    }
    workload.layers.push_back(std::move(layer));
  }
  return workload;
}

} // namespace gcsim::trace
