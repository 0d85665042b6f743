#pragma once
// The per-layer list the simulator turns into a workload when a scenario
// names a trace instead of a layer spec ("workload from trace").
//
// One WorkloadLayer per leaf module that owns parameters (Conv2d, Linear,
// BatchNorm2d, ...), in forward execution order. Its gradient is the
// contiguous slice [offset, offset + params) of a worker's flattened
// gradient (its weight and bias tensors together). Measured times are the
// module's own plus those of the parameter-free modules that run after it
// and before the next parameterised one (ReLU, pooling, flatten); modules
// before the first parameterised one are charged to it. So the layers'
// times add up to everything the hooks measured.

#include "sim/trace/manifest.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gcsim::trace {

struct WorkloadLayer {
  std::string name; // module name, e.g. "layer1.0.conv1"
  std::string type; // module type, e.g. "Conv2d" ("" when not recorded)
  int64_t params = 0;
  int64_t offset = 0;
  /// Seconds per micro-batch of TraceWorkload::micro_batch samples on the
  /// capture device; absent when the trace has no measured times.
  std::optional<double> forward_s;
  std::optional<double> backward_s;
  std::vector<std::string> tensors; // the manifest layers it covers
};

struct TraceWorkload {
  std::string model;
  int64_t total_params = 0;
  int64_t micro_batch = 0;   // the batch the times were measured at
  std::string timing_device; // "cpu"; "" when no times were measured
  bool has_times = false;
  std::vector<WorkloadLayer> layers;
};

TraceWorkload workload_from_trace(const Manifest& manifest);

} // namespace gcsim::trace
