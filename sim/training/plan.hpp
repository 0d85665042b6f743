#pragma once
// Turns a scenario and a device profile into the plain numbers the
// iteration model runs: per-layer forward/backward seconds, gradient bytes,
// optimizer time, buckets.

#include "sim/scenario/scenario.hpp"
#include "sim/training/iteration_model.hpp"

namespace gcsim::cost {
class DeviceProfile;
}

namespace gcsim::training {

/// Per-layer compute for one micro-batch of `batch` samples: measured
/// times from a trace (scaled linearly to the batch) when the workload has
/// them, otherwise the profile's FLOP-based model.
std::vector<LayerTimes> layer_times(const Workload& workload, const cost::DeviceProfile& profile,
                                    int batch);

/// The dense (uncompressed) data-parallel plan of a scenario.
IterationPlan dense_plan(const Scenario& scenario, const cost::DeviceProfile& profile);

} // namespace gcsim::training
