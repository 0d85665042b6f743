#include "sim/validate/fit.hpp"

#include "sim/cost/calibration.hpp"
#include "sim/input/input_error.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/network/alpha_beta.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>

namespace gcsim::validate {

bool ring_path_cost(const CollectivePoint& point, PathCost& cost) {
  if (point.algorithm != Algorithm::ring)
    return false;
  const double ranks = point.ranks;
  // The largest chunk sets the pace.
  const auto chunk = static_cast<double>(net::alpha_beta::largest_chunk(point.bytes, point.ranks));
  switch (point.collective) {
  case Collective::allreduce:
    cost = {2 * (ranks - 1), 2 * (ranks - 1) * chunk};
    return true;
  case Collective::allgather:
    cost = {ranks - 1, (ranks - 1) * chunk};
    return true;
  case Collective::broadcast:
    return false;
  }
  return false;
}

namespace {

// Sums of the weighted normal equations of sum(((m a + b c) - t) / t)^2 over
// one group of points, with m and b the path's messages and bytes over t.
struct NormalSums {
  double mm = 0, mb = 0, bb = 0, m = 0, b = 0;
  int points = 0;

  void add(const PathCost& cost, double seconds) {
    const double m_t = cost.messages / seconds;
    const double b_t = cost.bytes / seconds;
    mm += m_t * m_t;
    mb += m_t * b_t;
    bb += b_t * b_t;
    m += m_t;
    b += b_t;
    ++points;
  }
};

// The cores the measured cluster's ranks shared (a star's only).
int shared_cores_of(const net::PlatformSpec& measured) {
  return measured.topology == net::Topology::star ? measured.shared_cores : 0;
}

// The points alpha and beta are fitted to: float32 ring allreduces and
// allgathers (float16 ones can be paced by their sums).
bool fitted_ring_point(const CollectivePoint& point, PathCost& cost) {
  return point.dtype == DataType::float32 && ring_path_cost(point, cost);
}

} // namespace

std::string fitted_to(const CollectivePoint& point, const FitResult& fit) {
  PathCost cost;
  if (!fitted_ring_point(point, cost))
    return "";
  if (fit.latency_points == 0) // one line over every ring point
    return "alpha and bandwidth";
  return point.bytes < kLatencyPointBytes      ? "alpha"
         : point.bytes >= kBandwidthPointBytes ? "bandwidth"
                                               : "";
}

FitResult fit_alpha_beta(const std::vector<CollectivePoint>& points, const std::string& file) {
  NormalSums all, small, large;
  for (const CollectivePoint& point : points) {
    PathCost cost;
    if (!fitted_ring_point(point, cost))
      continue;
    all.add(cost, point.seconds);
    if (point.bytes < kLatencyPointBytes)
      small.add(cost, point.seconds);
    else if (point.bytes >= kBandwidthPointBytes)
      large.add(cost, point.seconds);
  }
  FitResult fit;
  fit.points = all.points;
  const bool split = small.points > 0 && large.points > 0;
  // alpha's equation from the small points and beta's from the large ones
  // (each the other's given), or both from every point.
  const NormalSums& for_alpha = split ? small : all;
  const NormalSums& for_beta = split ? large : all;
  const double det = for_alpha.mm * for_beta.bb - for_alpha.mb * for_beta.mb;
  if (all.points < 2 || !(std::fabs(det) > 1e-12 * for_alpha.mm * for_beta.bb))
    throw InputError(
        file, "/collectives",
        "the fit needs ring allreduce or allgather points of at least two different sizes");
  if (split) {
    fit.latency_points = small.points;
    fit.bandwidth_points = large.points;
  }
  fit.alpha_s = (for_alpha.m * for_beta.bb - for_beta.b * for_alpha.mb) / det;
  fit.beta_s_per_byte = (for_alpha.mm * for_beta.b - for_beta.mb * for_alpha.m) / det;
  // A negative latency is noise around zero: refit the bandwidth alone.
  if (fit.alpha_s < 0) {
    fit.alpha_s = 0;
    fit.alpha_clamped = true;
    fit.beta_s_per_byte = for_beta.b / for_beta.bb;
  }
  if (!(fit.beta_s_per_byte > 0))
    throw InputError(file, "/collectives",
                     "the fit gives no positive bandwidth: are the times plausible?");
  double squares = 0;
  for (const CollectivePoint& point : points) {
    PathCost cost;
    if (!fitted_ring_point(point, cost))
      continue;
    double predicted = cost.messages * fit.alpha_s + cost.bytes * fit.beta_s_per_byte;
    squares += std::pow((predicted - point.seconds) / point.seconds, 2);
  }
  fit.rms_relative_error = std::sqrt(squares / all.points);
  return fit;
}

Float16SumFit fit_float16_sum(const std::vector<CollectivePoint>& points, const FitResult& fit,
                              const net::PlatformSpec& measured, const std::string& file) {
  const int cores = shared_cores_of(measured);
  Float16SumFit result;
  std::vector<double> per_element;
  for (const CollectivePoint& point : points) {
    if (point.dtype != DataType::float16)
      continue;
    if (point.bytes < kBandwidthPointBytes) {
      ++result.smaller;
      continue;
    }
    assert(point.collective == Collective::allreduce && point.algorithm == Algorithm::ring &&
           "read_measured_run admits float16 for the ring allreduce only");
    ++result.points;
    const double steps = point.ranks - 1;
    const auto chunk =
        static_cast<double>(net::alpha_beta::largest_chunk(point.bytes, point.ranks));
    const double transfer = fit.alpha_s + chunk * fit.beta_s_per_byte;
    if (point.seconds < kFloat16SumShows * 2 * steps * transfer)
      continue;
    ++result.shown;
    const double sum_step = point.seconds / steps - transfer;
    // Every rank sums at once: on C shared cores each gets C/P of one.
    const double slowdown = cores > 0 ? std::max(1.0, point.ranks / static_cast<double>(cores)) : 1;
    per_element.push_back(sum_step / (chunk / 2) / slowdown);
  }
  if (per_element.empty())
    return result;
  result.seconds_per_element = cost::median(per_element);
  // What a platform file may hold (a duration of 0 or 1 ps to 1e9 s): the
  // calibrated platform is written to be read back.
  if (!is_measured_seconds(result.seconds_per_element)) {
    char figure[64];
    std::snprintf(figure, sizeof figure, "%.3g s", result.seconds_per_element);
    throw InputError(file, "/collectives",
                     std::string("the float16 allreduces give a float16 sum of ") + figure +
                         " per element, outside [1 ps, 1e9 s]: are their times plausible beside "
                         "the float32 ones'?");
  }
  return result;
}

std::string fit_basis(int latency_points, int bandwidth_points) {
  const std::string below = "below " + std::to_string(kLatencyPointBytes >> 20) + " MiB";
  const std::string from = std::to_string(kBandwidthPointBytes >> 20) + " MiB and more";
  if (latency_points == 0 || bandwidth_points == 0)
    return "one line over every ring point (the run has no ring points " + below + " or none of " +
           from + ")";
  return "alpha from the " + std::to_string(latency_points) + " ring points " + below +
         ", bandwidth from the " + std::to_string(bandwidth_points) + " of " + from;
}

std::string float16_basis(const Float16SumFit& fit) {
  const std::string from = std::to_string(kBandwidthPointBytes >> 20) + " MiB and more";
  if (fit.points == 0)
    return "no float16 allreduce of " + from + " (" + std::to_string(fit.smaller) +
           " smaller): the float16 sum not fitted";
  const std::string points = std::to_string(fit.points) + " float16 allreduce point" +
                             (fit.points == 1 ? "" : "s") + " of " + from;
  if (fit.shown == 0)
    return "the float16 sum hides under the transfers at the " + points + ": not fitted";
  char figure[64];
  std::snprintf(figure, sizeof figure, "%.3g ns", fit.seconds_per_element * 1e9);
  std::string basis = std::string("float16 sum ") + figure + " per element on a core of its own, ";
  if (fit.shown == 1 && fit.points == 1)
    return basis + "from the one float16 allreduce point of " + from;
  if (fit.shown == fit.points)
    return basis + "the median of the " + points;
  return basis + "the median of " + std::to_string(fit.shown) + " of the " + points +
         " (the others hide it)";
}

net::PlatformSpec calibrated_platform(const FitResult& fit, const net::PlatformSpec& measured,
                                      const std::string& name) {
  net::PlatformSpec spec;
  spec.name = name;
  spec.topology = net::Topology::star;
  spec.nodes = measured.worker_count();
  spec.link = {fit.bandwidth_Bps(), fit.alpha_s / 2};
  // The machine the ranks ran on is a fact of the run, not something fitted.
  spec.shared_cores = shared_cores_of(measured);
  // Its float16 sum, where the points showed it; else the description's
  // (measured apart, as scheduling_check.py float16 does).
  if (fit.float16.shown > 0)
    spec.float16_sum_s = fit.float16.seconds_per_element;
  else if (measured.topology == net::Topology::star)
    spec.float16_sum_s = measured.float16_sum_s;
  // CM02 without factors: the fitted numbers are the effective ones already.
  spec.network = net::NetworkModelSpec{};
  return spec;
}

nlohmann::json platform_json(const net::PlatformSpec& spec, const FitResult& fit,
                             const std::string& source) {
  char figures[256];
  std::snprintf(figures, sizeof figures,
                " (%d points, rms relative error %.1f%%): alpha %.1f us per message, effective "
                "bandwidth %.2f Mbit/s; ",
                fit.points, 100 * fit.rms_relative_error, fit.alpha_s * 1e6,
                fit.bandwidth_Bps() * 8 / 1e6);
  std::string description = "calibrated by `gcsim validate --fit` from the ring "
                            "collectives of " +
                            source + figures + fit_basis(fit.latency_points, fit.bandwidth_points);
  if (fit.float16.shown > 0)
    description += "; " + float16_basis(fit.float16);
  char bandwidth[64];
  char latency[64];
  std::snprintf(bandwidth, sizeof bandwidth, "%.6gBps", spec.link.bandwidth_Bps);
  std::snprintf(latency, sizeof latency, "%.6gus", spec.link.latency_s * 1e6);
  nlohmann::json platform = {{"name", spec.name},
                             {"description", description},
                             {"source", source},
                             {"topology", "star"},
                             {"nodes", spec.nodes},
                             {"link", {{"bandwidth", bandwidth}, {"latency", latency}}},
                             {"network", {{"model", "CM02"}}}};
  if (spec.shared_cores > 0)
    platform["shared_cores"] = spec.shared_cores;
  if (spec.float16_sum_s > 0) {
    char sum[64];
    std::snprintf(sum, sizeof sum, "%.6gns", spec.float16_sum_s * 1e9);
    platform["float16_sum"] = sum;
  }
  return platform;
}

} // namespace gcsim::validate
