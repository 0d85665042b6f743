#pragma once
// Calibration of a star platform from collective benchmarks: the per-message
// latency alpha and the effective bandwidth 1/beta of the measured ring
// collectives. Small messages give the latency and large ones the bandwidth:
// alpha is fitted to the ring points below 1 MiB given beta, beta to those of
// 4 MiB and more given alpha, both at once (least squares on relative error
// within each group). One least-squares line over every size let the noise
// of a few small points move the bandwidth, and with it every large
// collective, by 6-8% (results/validation/README.md).
// A float16 ring allreduce's sums can outlast its transfers (gloo sums
// float16 in software on CPUs): the platform's float16_sum is fitted from
// the float16 points, given alpha and beta (fit_float16_sum).

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

/// The float16 sum per element that makes the float16 ring allreduce points
/// of kBandwidthPointBytes and more take what they measured, given the
/// fitted alpha and beta (fit_float16_sum).
struct Float16SumFit {
  int points = 0;                 // those float16 points
  int shown = 0;                  // of them, those 5% or more slower than their transfers
  double seconds_per_element = 0; // the median over `shown`; 0 when none
  int smaller = 0;                // float16 points below kBandwidthPointBytes, not fitted to
};

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
  Float16SumFit float16;

  double bandwidth_Bps() const { return 1.0 / beta_s_per_byte; }
};

/// Ring points below this size give the latency, points of at least
/// kBandwidthPointBytes the bandwidth (the points in between neither). Whole
/// MiB: fit_basis names them so.
constexpr uint64_t kLatencyPointBytes = 1u << 20;
constexpr uint64_t kBandwidthPointBytes = 4u << 20;
/// A float16 allreduce this much slower than its transfers (or than the
/// float32 one of its size) shows its sum: below that, two runs' noise would
/// pass for one.
constexpr double kFloat16SumShows = 1.05;

/// What `point` was fitted to give: "alpha" (a ring point below
/// kLatencyPointBytes), "bandwidth" (one of kBandwidthPointBytes and more),
/// "alpha and bandwidth" (every ring point, where `fit` is one line over
/// them), or "" where it is a prediction (broadcasts, tree allreduces, the
/// ring points in between, float16 points: their sum is fit_float16_sum's).
std::string fitted_to(const CollectivePoint& point, const FitResult& fit);

/// Fits alpha >= 0 and beta > 0, from the two groups of ring points where the
/// run has both, else one least-squares line over every ring point; throws
/// InputError (naming `file`) when that has fewer than two ring points of
/// different shapes. float16 points are left to fit_float16_sum: their
/// sums, not the network, can set their pace.
FitResult fit_alpha_beta(const std::vector<CollectivePoint>& points, const std::string& file);

/// A float16 ring allreduce takes P-1 reduce-scatter steps of the longer of
/// the transfer T = alpha + chunk beta and the sum of the chunk's elements
/// (ranks/shared_cores times longer where `measured` gives P ranks fewer
/// cores), then P-1 allgather steps of T, as net::ring_allreduce with a
/// SumCost simulates it. Each point where the sum shows (the point
/// kFloat16SumShows times 2(P-1) T or slower) gives the sum its time leaves; the fit is their
/// median. Throws InputError (naming `file`) when that is outside what a platform file holds (1 ps
/// to 1e9 s).
Float16SumFit fit_float16_sum(const std::vector<CollectivePoint>& points, const FitResult& fit,
                              const net::PlatformSpec& measured, const std::string& file);

/// What alpha and beta were fitted to, in words, e.g. "alpha from the 6 ring
/// points below 1 MiB, bandwidth from the 6 of 4 MiB and more".
std::string fit_basis(int latency_points, int bandwidth_points);

/// What the float16 sum was fitted to, in words, e.g. "float16 sum 38.9 ns
/// per element on a core of its own, the median of the 3 float16 allreduce
/// points of 4 MiB and more"; where none showed it, that it hides under the
/// transfers; where none is that large, that nothing was fitted. Only for a
/// fit with float16 points.
std::string float16_basis(const Float16SumFit& fit);

/// A star platform of `nodes` workers whose links give the fitted alpha and
/// beta: each route crosses two links, so each link has half the latency.
/// Its float16 sum is the fitted one where a point showed it, else the
/// measured cluster's (a sum that hid under every transfer cannot be told
/// from the points).
net::PlatformSpec calibrated_platform(const FitResult& fit, const net::PlatformSpec& measured,
                                      const std::string& name);

/// The calibrated platform as a platform file (platforms/README.md).
nlohmann::json platform_json(const net::PlatformSpec& spec, const FitResult& fit,
                             const std::string& source);

} // namespace gcsim::validate
