// `gcsim calibrate --device cpu --out FILE [--quick]`: measures this machine's
// CPU on the compression kernels as compressors/ implements them, fits the
// cost model and writes a measured device profile (platforms/devices/README.md).
// GPUs are calibrated by scripts/calibrate/ (CUDA), not by this command.

#include "sim/cli/command.hpp"
#include "sim/cost/calibration.hpp"
#include "sim/input/atomic_write.hpp"
#include "sim/input/input_error.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include <CLI/CLI.hpp>

namespace gcsim::cli {
namespace {

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

class CalibrateCommand final : public Command {
public:
  std::string name() const override { return "calibrate"; }
  std::string description() const override {
    return "Measure compression-kernel times on this CPU and write a fitted device profile";
  }
  void configure(CLI::App& subcommand) override {
    subcommand
        .add_option("--device", device_,
                    "Device to calibrate (only \"cpu\" here; GPUs "
                    "use scripts/calibrate/)")
        ->required();
    subcommand.add_option("--out", out_, "Profile JSON to write")->required()->check(nonempty_path);
    subcommand.add_flag(
        "--quick", quick_,
        "Reduced range (2^10..2^22 in third octaves, five short rounds): about 40 s on two "
        "cores; the full grid takes minutes");
    // Bounded so that a typo is an error, not a default or an hour of timing.
    subcommand
        .add_option("--min-log2", min_log2_, "Smallest size, as log2 of elements (default 10)")
        ->transform(integer_in(4, 30));
    subcommand
        .add_option("--max-log2", max_log2_,
                    "Largest size, as log2 of elements (default 28; --quick 22)")
        ->transform(integer_in(4, 30));
    subcommand
        .add_option("--steps-per-octave", steps_, "Sizes per doubling (default 1; --quick 3)")
        ->transform(integer_in(1, 64));
    subcommand
        .add_option("--rounds", rounds_,
                    "Passes over the grid, each point keeping its fastest (default 3; --quick 5)")
        ->transform(integer_in(1, 100));
    subcommand.add_flag("--verbose", verbose_, "Print every timed point");
  }
  std::string out_of_memory_advice() const override {
    return "calibrate with a smaller --max-log2";
  }
  int run() override {
    if (device_ != "cpu")
      throw InputError("--device", "",
                       "only \"cpu\" can be calibrated by gcsim; GPUs are calibrated by the "
                       "CUDA program in scripts/calibrate/");
    cost::CalibrationOptions options;
    if (quick_) {
      options = cost::quick_calibration_options();
    } else {
      // Large sizes take up to seconds per run; three runs per point in each
      // of three rounds keeps the whole calibration within ~15 minutes.
      options.seconds_per_point = 0.05;
    }
    if (min_log2_ > 0)
      options.min_log2_n = min_log2_;
    if (max_log2_ > 0)
      options.max_log2_n = max_log2_;
    if (steps_ > 0)
      options.steps_per_octave = steps_;
    if (rounds_ > 0)
      options.rounds = rounds_;
    // Each is in [4, 30] (CLI11 checked); with a default the other may cross it.
    if (options.min_log2_n > options.max_log2_n) {
      const auto size = [this](int log2, bool given) {
        return "2^" + std::to_string(log2) +
               (given    ? ""
                : quick_ ? ", --quick's"
                         : ", the default");
      };
      throw InputError(max_log2_ > 0 ? "--max-log2" : "--min-log2", "",
                       "the smallest size (" + size(options.min_log2_n, min_log2_ > 0) +
                           ") is above the largest (" + size(options.max_log2_n, max_log2_ > 0) +
                           ")");
    }
    if (verbose_)
      options.progress = [](std::string_view line) {
        std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
      };

    std::string command = "gcsim calibrate --device cpu --out " + out_;
    if (quick_)
      command += " --quick";
    if (min_log2_ > 0)
      command += " --min-log2 " + std::to_string(min_log2_);
    if (max_log2_ > 0)
      command += " --max-log2 " + std::to_string(max_log2_);
    if (steps_ > 0)
      command += " --steps-per-octave " + std::to_string(steps_);
    if (rounds_ > 0)
      command += " --rounds " + std::to_string(rounds_);

    const auto start = std::chrono::steady_clock::now();
    MadeFolders made_folders; // removed again, if still empty, unless the profile is written
    check_writable(out_, &made_folders); // before the minutes of measuring, not after
    const cost::CalibrationPoints points = cost::measure_cpu_kernels(options);
    const double gemm = cost::measure_cpu_gemm_flops();
    const cost::DeviceProfile profile = cost::fit_cpu_profile(points, gemm, command, today());
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const nlohmann::json written = profile.to_json();
    write_file_atomically(out_, written.dump(1) + "\n");
    made_folders.keep();

    std::printf("calibrated %s in %.0f s; wrote %s\n", profile.name().c_str(), elapsed,
                out_.c_str());
    std::printf("hold-out (fit on every other size, predict the rest; n > 2^16):\n");
    // From the points as written (seven digits), so that the figures are the
    // ones `gcsim profile show` prints for the file: near ties in the fitter's
    // choice of pieces made the two differ (sketch_insert 8.3 % and 2.2 %).
    const cost::DeviceProfile reloaded = cost::DeviceProfile::from_json(written, out_);
    for (const cost::HoldoutResult& result : cost::holdout_errors(reloaded))
      std::fputs(cost::format_holdout(result).c_str(), stdout);
    return 0;
  }

private:
  std::string device_;
  std::string out_;
  bool quick_ = false;
  bool verbose_ = false;
  int min_log2_ = 0;
  int max_log2_ = 0;
  int steps_ = 0;
  int rounds_ = 0;
};

const CommandRegistration registration{[] { return std::make_unique<CalibrateCommand>(); }};

} // namespace
} // namespace gcsim::cli
