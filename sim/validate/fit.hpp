#pragma once
// Calibration of a star platform from collective benchmarks: the per-message
// latency alpha and the effective bandwidth 1/beta that best explain the
// measured ring collectives, by least squares on relative error (so small
// messages, which carry the latency, weigh as much as large ones, which carry
// the bandwidth).

#include "sim/validate/measured_run.hpp"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::validate {

/// Along the critical path of one point: `messages` latencies and `bytes`
/// byte-times, so that time = messages * alpha + bytes * beta.
struct PathCost {
  double messages = 0;
  double bytes = 0;
};

/// The closed-form path cost of a ring allreduce or ring allgather point
/// (Thakur, Rabenseifner, Gropp 2005). Broadcast points are not fitted: gloo's
/// tree shares the root's link between concurrent sends, which the
/// simulation models and a closed form would only approximate.
bool ring_path_cost(const CollectivePoint& point, PathCost& cost);

struct FitResult {
  double alpha_s = 0; // per message, end to end (a route's latency)
  double beta_s_per_byte = 0;
  int points = 0; // how many points entered the fit
  double rms_relative_error = 0;

  double bandwidth_Bps() const { return 1.0 / beta_s_per_byte; }
};

/// Fits alpha >= 0 and beta > 0; throws InputError (naming `file`) when fewer
/// than two ring points of different shapes are available.
FitResult fit_alpha_beta(const std::vector<CollectivePoint>& points, const std::string& file);

/// A star platform of `nodes` workers whose links give the fitted alpha and
/// beta: each route crosses two links, so each link has half the latency.
net::PlatformSpec calibrated_platform(const FitResult& fit, const net::PlatformSpec& measured,
                                      const std::string& name);

/// The calibrated platform as a platform file (platforms/README.md).
nlohmann::json platform_json(const net::PlatformSpec& spec, const FitResult& fit,
                             const std::string& source);

} // namespace gcsim::validate
