// How good an aggregated update is, measured on the real tensors.
#pragma once

#include "compressors/tensor.hpp"

#include <vector>

namespace gcsim::compress {

// Reference: the plain dense average a = (1/P) sum_w g_w of the workers' raw
// gradients of this iteration (not error-compensated), i.e. what dense
// data-parallel SGD would apply.
struct Fidelity {
  double cosine = 0.0;            // <u, a> / (|u| |a|); 1 if both are zero, 0 if one is
  double relative_l2_error = 0.0; // |u - a| / |a| (|u| if a is zero)
  double energy_share = 0.0;      // sum of a_j^2 over the update's nonzeros / |a|^2
};

// Throws std::invalid_argument if grads is empty or sizes differ.
Fidelity measure_fidelity(const std::vector<GradientView>& raw_grads,
                          const std::vector<float>& update);

// The same against a dense average the caller summed while streaming the
// gradients: `raw_sum` holds sum_w g_w in double, added in worker order, and
// `workers` is P, so results equal the overload above bit for bit.
Fidelity measure_fidelity(const std::vector<double>& raw_sum, std::size_t workers,
                          const std::vector<float>& update);

} // namespace gcsim::compress
