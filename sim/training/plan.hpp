#pragma once
// Turns a scenario and a device profile into the plain numbers the
// iteration model runs: per-layer forward/backward seconds, gradient bytes,
// optimizer time, buckets.

#include "sim/scenario/scenario.hpp"
#include "sim/training/iteration_model.hpp"

#include <array>
#include <string>
#include <vector>

namespace gcsim::cost {
class DeviceProfile;
struct ModelTimes;
} // namespace gcsim::cost

namespace gcsim::training {

/// The profile's measured layer times that are this workload's compute, or
/// nullptr: none for a model of its name, or a trace with its own times
/// (which come first).
const cost::ModelTimes* profile_model_times(const Workload& workload,
                                            const cost::DeviceProfile& profile);

/// Per-layer compute for one micro-batch of `batch` samples: measured
/// times from a trace (scaled linearly to the batch) when the workload has
/// them, else the profile's measured times of the model
/// (profile_model_times), else the profile's FLOP-based model.
std::vector<LayerTimes> layer_times(const Workload& workload, const cost::DeviceProfile& profile,
                                    int batch);

/// The dense (uncompressed) data-parallel plan of a scenario.
IterationPlan dense_plan(const Scenario& scenario, const cost::DeviceProfile& profile);

/// A kernel the run priced at sizes past the largest its profile's curve was
/// fitted on: its time there is the last piece extrapolated, which the
/// kernel's behaviour at those sizes (caches left, another algorithm) may
/// not follow.
struct Extrapolation {
  /// A size besides n priced outside those the curve was fitted on (the
  /// elements selected or sampled, a sketch's rows, its table's columns):
  /// the ones priced and fitted.
  struct OutsideFit {
    std::string field;                        // "k", "rows" or "cols", as result.json names it
    std::array<double, 2> priced{}, fitted{}; // [least, most] of each
  };
  std::string kernel;
  double largest_n = 0;     // elements, the largest the run priced
  double profile_n_max = 0; // elements, the largest the curve was fitted on
  std::vector<OutsideFit> outside;
};

/// The kernels of `plan` (its optimizer step over `parameters`, and the
/// compressed iterations' kernels) priced past their fitted sizes, or at a
/// sketch's rows or columns outside those fitted, by name.
std::vector<Extrapolation> extrapolated_kernels(const IterationPlan& plan, double parameters,
                                                const cost::DeviceProfile& profile);

} // namespace gcsim::training
