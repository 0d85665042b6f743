#pragma once
// Measured against simulated: per point, per phase, and geometric-mean
// errors, as a readable table and as JSON.

#include "sim/validate/fit.hpp"
#include "sim/validate/measured_run.hpp"
#include "sim/validate/simulate.hpp"

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::validate {

/// |ln(simulated / measured)|: symmetric in over- and under-estimation.
double log_error(double measured, double simulated);
/// exp(mean |ln(simulated / measured)|) - 1 over one or more pairs. A value
/// of 0.05 means "off by a factor 1.05 on (geometric) average", either way.
double geometric_mean_error(const std::vector<double>& measured,
                            const std::vector<double>& simulated);

struct ValidationInput {
  const MeasuredRun* run = nullptr;
  net::PlatformSpec platform;
  /// "the measured cluster description", "the fit", or the file's
  /// recorded_path (--platform's, --scenario's).
  std::string platform_source;
  std::optional<FitResult> fit;
  std::vector<double> collective_seconds;   // per run->collectives
  std::vector<SimulatedIteration> training; // per run->training, in order
  /// What the compressed runs' simulation used besides the measured file,
  /// as recorded_path gives them.
  std::string gradient_trace;
  std::string device_profile;
};

nlohmann::json make_report(const ValidationInput& input);
std::string format_report(const nlohmann::json& report);

} // namespace gcsim::validate
