// `gcsim profile show FILE`: a device profile's provenance, fitted curves and,
// for measured profiles, the residual of every raw point and the hold-out
// error (fit on half the sizes, predict the other half).
// `gcsim profile refit FILE --out OUT`: the same profile with every kernel's
// curve fitted again from its stored points, so that a better fitter reaches
// profiles measured on machines no longer at hand.

#include "sim/cli/command.hpp"
#include "sim/cost/calibration.hpp"
#include "sim/cost/device_profile.hpp"
#include "sim/cost/fit.hpp"
#include "sim/input/atomic_write.hpp"
#include "sim/input/input_error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include <CLI/CLI.hpp>

namespace gcsim::cli {
namespace {

using cost::DeviceProfile;
using cost::Kernel;

void print_curve(const cost::KernelModel& model) {
  const cost::Family& family = model.curve.family();
  const cost::ShapeRange& range = model.curve.range();
  std::printf("  fit: %s over n in [%.4g, %.4g]", std::string(family.name).c_str(), range.n_min,
              range.n_max);
  if (family.uses_k)
    std::printf(", k in [%.4g, %.4g]", range.k_min, range.k_max);
  std::printf("\n");
  for (const cost::Segment& segment : model.curve.segments()) {
    char span[64];
    std::snprintf(span, sizeof span, "%c in [%.4g, %.4g]", model.curve.piecewise_in(), segment.from,
                  segment.up_to);
    std::printf("    %-24s", span);
    for (std::size_t t = 0; t < family.term_count; ++t)
      std::printf("  %s=%.4g", std::string(cost::term_key(family.terms[t])).c_str(),
                  segment.coefficients[t]);
    std::printf("\n");
  }
}

void print_points(const cost::KernelModel& model) {
  if (model.points.empty())
    return;
  std::printf("  %12s %10s %6s %8s %12s %12s %9s\n", "n", "k", "rows", "cols", "measured_s",
              "fitted_s", "residual");
  std::vector<double> residuals;
  for (const cost::Sample& point : model.points) {
    const double fitted = model.curve.seconds(point.shape);
    const double residual = (fitted - point.seconds) / point.seconds;
    residuals.push_back(std::fabs(residual));
    std::printf("  %12.0f %10.0f %6.0f %8.0f %12.4g %12.4g %+8.1f%%\n", point.shape.n,
                point.shape.k, point.shape.rows, point.shape.cols, point.seconds, fitted,
                100 * residual);
  }
  std::printf("  median |residual| %.1f%%, max %.1f%% over %zu points\n",
              100 * cost::median(residuals),
              100 * *std::max_element(residuals.begin(), residuals.end()), residuals.size());
}

// Whether a refit is the same curve as the stored one but for the rounding of
// the stored points and coefficients: the same pieces, and the same time at
// every point and the same coefficients to 1e-4.
bool same_up_to_rounding(const cost::Curve& refitted, const cost::KernelModel& stored) {
  const cost::Curve& curve = stored.curve;
  if (refitted.piecewise_in() != curve.piecewise_in() ||
      refitted.segments().size() != curve.segments().size())
    return false;
  auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-4 * std::max(a, b); };
  for (const cost::Sample& point : stored.points)
    if (!close(refitted.seconds(point.shape), curve.seconds(point.shape)))
      return false;
  // A piece of one size fits a bare latency as well as a per-element term,
  // at the point; they differ everywhere else.
  for (std::size_t s = 0; s < curve.segments().size(); ++s)
    for (std::size_t t = 0; t < refitted.segments()[s].coefficients.size(); ++t)
      if (!close(refitted.segments()[s].coefficients[t], curve.segments()[s].coefficients[t]))
        return false;
  return true;
}

class ProfileCommand final : public Command {
public:
  std::string name() const override { return "profile"; }
  std::string description() const override {
    return "Inspect device profiles (fitted kernel-time curves, residuals, provenance) and refit "
           "measured ones from their points";
  }
  void configure(CLI::App& subcommand) override {
    subcommand.require_subcommand(1);
    show_ = subcommand.add_subcommand(
        "show", "Print a profile's provenance, fitted curves and the residual of every point");
    show_->add_option("file", file_, "Device profile JSON")->required()->check(nonempty_path);
    show_->add_flag("--no-points", no_points_, "Only the curves, not every raw point");
    refit_ = subcommand.add_subcommand(
        "refit", "Fit every kernel's curve again from the profile's stored points (the rest of "
                 "the profile is kept) and write the result");
    refit_->add_option("file", file_, "Device profile JSON with points")
        ->required()
        ->check(nonempty_path);
    refit_->add_option("--out", out_, "Profile JSON to write (may be the input)")
        ->required()
        ->check(nonempty_path);
  }
  int run() override {
    if (refit_->parsed())
      return refit();
    return show();
  }

private:
  int refit() const {
    // A fit that an older fitter let drop between pieces is what refit is for.
    DeviceProfile profile = DeviceProfile::load(file_, /*check_monotone=*/false);
    // Only the changed fits are written into the file as it is (its key order
    // and values kept; the JSON library may print a rare number with more
    // digits, the same double), so a refit changes nothing else.
    // (DeviceProfile::load has checked the file, so it parses.)
    std::ifstream input(file_);
    const std::string text((std::istreambuf_iterator<char>(input)),
                           std::istreambuf_iterator<char>());
    nlohmann::ordered_json document = nlohmann::ordered_json::parse(text);
    std::vector<std::string> changed;
    for (Kernel kernel : cost::all_kernels()) {
      const std::string name(cost::kernel_name(kernel));
      cost::KernelModel model = profile.kernel(kernel);
      if (model.points.empty())
        throw InputError(file_, "/kernels/" + name + "/points",
                         "no measured points to refit from (a derived profile cannot be refitted)");
      const cost::Curve refitted = cost::fit_curve(cost::kernel_family(kernel), model.points);
      // The stored points are rounded, so a refit by the same fitter moves the
      // last digits; such a curve is kept as it is, and refit is idempotent.
      if (same_up_to_rounding(refitted, model))
        continue;
      std::printf("refitted %s: %zu piece(s) in %c, was %zu in %c\n", name.c_str(),
                  refitted.segments().size(), refitted.piecewise_in(),
                  model.curve.segments().size(), model.curve.piecewise_in());
      model.curve = refitted;
      profile.set_kernel(kernel, std::move(model));
      changed.push_back(name);
    }
    const nlohmann::json written = profile.to_json();
    try {
      DeviceProfile::from_json(written, out_); // every fit as load() checks it
    } catch (const InputError& error) {
      // What fails here came in with the file (a range no measurement had):
      // the output, not written, is not to blame.
      throw InputError(file_, error.json_path(),
                       error.message() + " (in the refitted profile; nothing written)");
    }
    const nlohmann::json& kernels = written["kernels"];
    for (const std::string& name : changed)
      document["kernels"][name]["fit"] = nlohmann::ordered_json::parse(kernels[name]["fit"].dump());
    // Unchanged, the file's own bytes: its rare numbers printed with more
    // digits (0.00025551700000000003) are no change to show in a diff.
    write_file_atomically(out_, changed.empty() ? text : document.dump(1) + "\n");
    std::printf("%zu of %zu curves changed; wrote %s\n", changed.size(), cost::all_kernels().size(),
                out_.c_str());
    return 0;
  }

  int show() const {
    const DeviceProfile profile = DeviceProfile::load(file_);
    std::printf("profile: %s\n", profile.name().c_str());
    std::printf("device: %s %s\n", profile.device_kind().c_str(), profile.device_model().c_str());
    const cost::Provenance& provenance = profile.provenance();
    std::printf("provenance: %s\n", provenance.kind.c_str());
    if (!provenance.command.empty())
      std::printf("  command: %s\n  date: %s\n", provenance.command.c_str(),
                  provenance.date.c_str());
    if (!provenance.host.empty())
      std::printf("  host: %s\n", provenance.host.c_str());
    if (!provenance.regime.empty())
      std::printf("  regime: %s\n", provenance.regime.c_str());
    for (const cost::Source& source : provenance.sources)
      std::printf("  - %s: %s [%s]\n", source.figure.c_str(), source.value.c_str(),
                  source.source.c_str());
    const cost::ComputeModel& compute = profile.compute();
    std::printf("compute: forward %.4g TFLOP/s, backward %.4g TFLOP/s, layer latency %.3g us\n",
                compute.forward_flops_per_s / 1e12, compute.backward_flops_per_s / 1e12,
                compute.layer_latency_s * 1e6);
    std::printf("  efficiency:");
    for (std::size_t i = 0; i < DeviceProfile::layer_kinds().size(); ++i)
      std::printf(" %s=%.3g", std::string(DeviceProfile::layer_kinds()[i]).c_str(),
                  compute.efficiency[i]);
    std::printf("\n");
    if (!compute.source.empty())
      std::printf("  source: %s\n", compute.source.c_str());
    if (!profile.all_model_times().empty())
      std::printf("measured layer times (these models use them instead of the FLOP model):\n");
    for (const auto& [model, times] : profile.all_model_times()) {
      std::printf("  %s: %zu layers; forward + backward at batch", model.c_str(),
                  times.layers.size());
      for (std::size_t b = 0; b < times.batches.size(); ++b) {
        double forward = 0, backward = 0;
        for (const auto& [layer, seconds] : times.layers) {
          forward += seconds.forward_s[b];
          backward += seconds.backward_s[b];
        }
        std::printf("%s %d: %.3g + %.3g ms", b == 0 ? "" : ",", times.batches[b], forward * 1e3,
                    backward * 1e3);
      }
      std::printf("\n");
    }

    for (Kernel kernel : cost::all_kernels()) {
      const cost::KernelModel& model = profile.kernel(kernel);
      std::printf("\n%s", std::string(cost::kernel_name(kernel)).c_str());
      if (!model.regime.empty())
        std::printf(" [%s]", model.regime.c_str());
      std::printf("\n");
      if (!model.source.empty())
        std::printf("  source: %s\n", model.source.c_str());
      print_curve(model);
      if (!no_points_)
        print_points(model);
    }

    if (provenance.kind != "measured")
      return 0;
    std::printf("\nhold-out (fit on every other size, predict the rest; n > 2^16):\n");
    for (const cost::HoldoutResult& result : cost::holdout_errors(profile))
      std::fputs(cost::format_holdout(result).c_str(), stdout);
    return 0;
  }

  CLI::App* show_ = nullptr;
  CLI::App* refit_ = nullptr;
  std::string file_;
  std::string out_;
  bool no_points_ = false;
};

const CommandRegistration registration{[] { return std::make_unique<ProfileCommand>(); }};

} // namespace
} // namespace gcsim::cli
