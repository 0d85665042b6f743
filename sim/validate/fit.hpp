#pragma once
// Calibration of a star platform from collective benchmarks: the per-message
// latency alpha and the effective bandwidth 1/beta of the measured ring
// collectives. Small messages give the latency and large ones the bandwidth:
// alpha is fitted to the ring points below 1 MiB given beta, beta to those of
// 4 MiB and more given alpha, both at once (least squares on relative error
// within each group). One least-squares line over every size let the noise
// of a few small points move the bandwidth, and with it every large
// collective, by 6-8% (results/validation/README.md).

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
/// (Thakur, Rabenseifner, Gropp 2005). Broadcast and tree allreduce points
/// are not fitted: gloo's tree shares the root's link between concurrent
/// sends, NCCL's trees share every rank's, which the simulation models and a
/// closed form would only approximate.
bool ring_path_cost(const CollectivePoint& point, PathCost& cost);

struct FitResult {
  double alpha_s = 0; // per message, end to end (a route's latency)
  double beta_s_per_byte = 0;
  int points = 0; // ring points, over which rms_relative_error is taken
  // The points alpha and beta were fitted to; both 0 when the run lacks
  // either group and one line was fitted to every ring point instead.
  int latency_points = 0;
  int bandwidth_points = 0;
  double rms_relative_error = 0;
  // The fitted latency came out negative (noise around zero, or points too
  // few or too alike to tell it): it was set to 0 and the bandwidth fitted
  // alone, which the report says.
  bool alpha_clamped = false;

  double bandwidth_Bps() const { return 1.0 / beta_s_per_byte; }
};

/// Ring points below this size give the latency, points of at least
/// kBandwidthPointBytes the bandwidth (the points in between neither). Whole
/// MiB: fit_basis names them so.
constexpr uint64_t kLatencyPointBytes = 1u << 20;
constexpr uint64_t kBandwidthPointBytes = 4u << 20;

/// Fits alpha >= 0 and beta > 0, from the two groups of ring points where the
/// run has both, else one least-squares line over every ring point; throws
/// InputError (naming `file`) when that has fewer than two ring points of
/// different shapes.
FitResult fit_alpha_beta(const std::vector<CollectivePoint>& points, const std::string& file);

/// What alpha and beta were fitted to, in words, e.g. "alpha from the 6 ring
/// points below 1 MiB, bandwidth from the 6 of 4 MiB and more".
std::string fit_basis(int latency_points, int bandwidth_points);

/// A star platform of `nodes` workers whose links give the fitted alpha and
/// beta: each route crosses two links, so each link has half the latency.
net::PlatformSpec calibrated_platform(const FitResult& fit, const net::PlatformSpec& measured,
                                      const std::string& name);

/// The calibrated platform as a platform file (platforms/README.md).
nlohmann::json platform_json(const net::PlatformSpec& spec, const FitResult& fit,
                             const std::string& source);

} // namespace gcsim::validate
