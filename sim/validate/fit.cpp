#include "sim/validate/fit.hpp"

#include "sim/input/input_error.hpp"

#include <cmath>
#include <cstdio>

namespace gcsim::validate {

bool ring_path_cost(const CollectivePoint& point, PathCost& cost) {
  const double ranks = point.ranks;
  // The largest chunk sets the pace (alpha_beta.hpp).
  const double chunk = std::ceil(static_cast<double>(point.bytes) / ranks);
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

FitResult fit_alpha_beta(const std::vector<CollectivePoint>& points, const std::string& file) {
  // Weighted normal equations of sum(((m a + b c) - t) / t)^2.
  double smm = 0, smb = 0, sbb = 0, smt = 0, sbt = 0;
  int used = 0;
  for (const CollectivePoint& point : points) {
    PathCost cost;
    if (!ring_path_cost(point, cost))
      continue;
    const double m = cost.messages / point.seconds;
    const double b = cost.bytes / point.seconds;
    smm += m * m;
    smb += m * b;
    sbb += b * b;
    smt += m;
    sbt += b;
    ++used;
  }
  FitResult fit;
  fit.points = used;
  const double det = smm * sbb - smb * smb;
  if (used < 2 || !(det > 1e-12 * smm * sbb))
    throw InputError(
        file, "/collectives",
        "the fit needs ring allreduce or allgather points of at least two different sizes");
  fit.alpha_s = (smt * sbb - sbt * smb) / det;
  fit.beta_s_per_byte = (smm * sbt - smb * smt) / det;
  // A negative latency is noise around zero: refit the bandwidth alone.
  if (fit.alpha_s < 0) {
    fit.alpha_s = 0;
    fit.beta_s_per_byte = sbt / sbb;
  }
  if (!(fit.beta_s_per_byte > 0))
    throw InputError(file, "/collectives",
                     "the fit gives no positive bandwidth: are the times plausible?");
  double squares = 0;
  for (const CollectivePoint& point : points) {
    PathCost cost;
    if (!ring_path_cost(point, cost))
      continue;
    double predicted = cost.messages * fit.alpha_s + cost.bytes * fit.beta_s_per_byte;
    squares += std::pow((predicted - point.seconds) / point.seconds, 2);
  }
  fit.rms_relative_error = std::sqrt(squares / used);
  return fit;
}

net::PlatformSpec calibrated_platform(const FitResult& fit, const net::PlatformSpec& measured,
                                      const std::string& name) {
  net::PlatformSpec spec;
  spec.name = name;
  spec.topology = net::Topology::star;
  spec.nodes = measured.worker_count();
  spec.link = {fit.bandwidth_Bps(), fit.alpha_s / 2};
  // The machine the ranks ran on is a fact of the run, not something fitted.
  spec.shared_cores = measured.topology == net::Topology::star ? measured.shared_cores : 0;
  // CM02 without factors: the fitted numbers are the effective ones already.
  spec.network = net::NetworkModelSpec{};
  return spec;
}

nlohmann::json platform_json(const net::PlatformSpec& spec, const FitResult& fit,
                             const std::string& source) {
  char description[512];
  std::snprintf(
      description, sizeof description,
      "calibrated by `gcsim validate --fit` from the ring collectives of %s (%d points, rms "
      "relative error %.1f%%): alpha %.1f us per message, effective bandwidth %.2f Mbit/s",
      source.c_str(), fit.points, 100 * fit.rms_relative_error, fit.alpha_s * 1e6,
      fit.bandwidth_Bps() * 8 / 1e6);
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
  return platform;
}

} // namespace gcsim::validate
