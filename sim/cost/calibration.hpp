#pragma once
// CPU calibration: times the compression kernels as compressors/ implements
// them (top-k, threshold estimate and select, Count Sketch) plus small loops
// for the simple kernels compressors/ does not expose (see cpu_kernels.hpp),
// over a grid of sizes and densities, fits each kernel's family and returns a
// measured DeviceProfile. Also the hold-out check: fit on every other size,
// predict the rest.

#include "sim/cost/device_profile.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gcsim::cost {

struct CalibrationOptions {
  int min_log2_n = 10;
  int max_log2_n = 28;
  int steps_per_octave = 1; // sizes are 2^(min + i / steps_per_octave)
  /// Count Sketch kernels scatter rows x n random updates; above this size
  /// they alone would take minutes, so they stop here (documented).
  int sketch_max_log2_n = 26;
  std::vector<double> densities{1e-4, 1e-3, 1e-2, 1e-1};
  /// Timed runs per point: at least min_reps, then more until the point has
  /// taken seconds_per_point or max_reps runs. Calls under ~20 us are timed in
  /// batches so the clock's resolution does not matter.
  double seconds_per_point = 0.1;
  /// Passes over the whole grid; each point keeps its fastest pass.
  int rounds = 3;
  int min_reps = 3;
  int max_reps = 200;
  std::uint64_t seed = 1;
  /// Called with one line per kernel and size (progress on a terminal).
  std::function<void(std::string_view)> progress;
};

/// The reduced grid of `gcsim calibrate --quick` and of the test suite:
/// 2^10..2^22 elements, five short rounds; seconds, not minutes.
CalibrationOptions quick_calibration_options();

/// Raw timings per kernel (index = Kernel) and how many runs each median has.
struct CalibrationPoints {
  std::array<std::vector<Sample>, kKernelCount> samples;
  std::array<std::vector<double>, kKernelCount> repetitions;
  /// /proc/loadavg before and after: how busy the machine was (honesty about
  /// interference; the minimum over repetitions filters most of it).
  std::string load_before, load_after;
  /// Length of the gradient the sparse kernels' indices are spread over.
  double sparse_span = 0;
};

CalibrationPoints measure_cpu_kernels(const CalibrationOptions& options);

/// Achieved single-thread float32 GEMM rate (FLOP/s, 2 per multiply-add) of a
/// square matrix product, the CPU profile's forward/backward rate.
double measure_cpu_gemm_flops(int size = 512);

/// Fits every kernel and assembles a measured profile. `command` and `date`
/// go into the provenance.
DeviceProfile fit_cpu_profile(const CalibrationPoints& points, double gemm_flops,
                              const std::string& command, const std::string& date);

/// What this CPU is (model, cores, caches) for the profile's device.details.
nlohmann::json describe_cpu();

/// The middle value of `values` (of an even count, the mean of the two
/// middle ones); `values` must not be empty.
double median(std::vector<double> values);

struct HoldoutResult {
  Kernel kernel;
  double median_abs_error = 0; // |predicted - measured| / measured
  double max_abs_error = 0;
  std::size_t points = 0; // predicted points above min_n
};

/// Per kernel: distinct sizes sorted, the even-indexed ones fitted, the
/// odd-indexed ones predicted; errors over predicted points with n > min_n.
std::vector<HoldoutResult> holdout_errors(const CalibrationPoints& points, double min_n = 65536);
std::vector<HoldoutResult> holdout_errors(const DeviceProfile& profile, double min_n = 65536);

/// One line of `calibrate`'s and `profile show`'s hold-out table; a kernel
/// with no point to predict says so rather than show an error of 0.
std::string format_holdout(const HoldoutResult& result);

} // namespace gcsim::cost
