#include "sim/cost/calibration.hpp"

#include "compressors/count_sketch.hpp"
#include "compressors/float16.hpp"
#include "compressors/rng.hpp"
#include "compressors/threshold_estimator.hpp"
#include "compressors/topk.hpp"
#include "sim/cost/cpu_kernels.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <time.h>
#include <unistd.h>

namespace gcsim::cost {
namespace {

// The calibrating thread's CPU time, not wall time: time the thread spends
// descheduled while other processes run does not count, so a busy machine
// (builds next to the calibration) distorts the timings far less.
double thread_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

struct Timing {
  double seconds = 0;
  double repetitions = 0;
};

// What a point keeps of its repetitions. A deterministic kernel keeps the
// fastest: other processes on the machine only ever add time (preemption,
// shared caches and memory bandwidth). A kernel that works on new random
// positions every call (sample_threshold) varies from call to call by itself,
// and the fastest call would be a lucky draw (nth_element's pivots); it keeps
// the median, the cost a compressor sees.
enum class Statistic { fastest, median };

// Time of one call. Short calls are timed in
// batches of at least ~50 us so the clock's resolution and overhead vanish.
template <typename Kernel>
Timing time_kernel(Kernel&& kernel, const CalibrationOptions& options,
                   Statistic statistic = Statistic::fastest) {
  // The first call warms caches, page tables and branch predictors; it is
  // also a candidate for the minimum (a cold call is only ever slower), which
  // saves a call at the largest sizes. The median leaves it out.
  double start = thread_seconds();
  kernel();
  const double first = thread_seconds() - start;
  // Batches of >= 50 us make the clock's ~1 us read cost negligible.
  const double batch_target = 50e-6;
  const int batch =
      first >= batch_target ? 1 : static_cast<int>(std::ceil(batch_target / std::max(first, 1e-9)));
  std::vector<double> times;
  if (batch == 1 && first > 0 && statistic == Statistic::fastest)
    times.push_back(first);
  double spent = first;
  while (static_cast<int>(times.size()) < options.min_reps ||
         (spent < options.seconds_per_point && static_cast<int>(times.size()) < options.max_reps)) {
    start = thread_seconds();
    for (int b = 0; b < batch; ++b)
      kernel();
    const double elapsed = thread_seconds() - start;
    spent += elapsed;
    // A virtual machine's CPU clock can step; a non-positive reading is not a time.
    if (elapsed > 0)
      times.push_back(elapsed / batch);
    else if (spent > 10 * options.seconds_per_point + 1)
      throw std::runtime_error("calibration: the thread CPU clock does not advance");
  }
  const double kept = statistic == Statistic::median
                          ? median(times)
                          : *std::min_element(times.begin(), times.end());
  return Timing{kept, static_cast<double>(times.size())};
}

// Standard normal values (Box-Muller): gradients are roughly bell-shaped, and
// the selection kernels' speed depends on the value distribution.
void fill_normal(std::vector<float>& x, std::uint64_t seed) {
  for (std::size_t i = 0; i < x.size(); i += 2) {
    const std::uint64_t r = compress::mix64(seed + i);
    const double u1 = (static_cast<double>(r >> 40) + 1.0) / 16777217.0;
    const double u2 = static_cast<double>((r >> 16) & 0xFFFFFF) / 16777216.0;
    const auto [first, second] = compress::box_muller(u1, u2);
    x[i] = static_cast<float>(first);
    if (i + 1 < x.size()) // an odd size's last value is a normal one too
      x[i + 1] = static_cast<float>(second);
  }
}

// n sorted distinct indices spread over [0, span): one per stride, jittered.
void spread_indices(std::size_t n, std::size_t span, std::uint64_t seed,
                    std::vector<std::uint32_t>& index) {
  index.resize(n);
  const std::size_t stride = std::max<std::size_t>(1, span / n);
  for (std::size_t i = 0; i < n; ++i)
    index[i] = static_cast<std::uint32_t>(i * stride + compress::mix64(seed ^ i) % stride);
}

// |x| value above which about `density` of x[0, n) lies, from a strided sample.
float magnitude_quantile(const float* x, std::size_t n, double density) {
  const std::size_t samples = std::min<std::size_t>(n, 1 << 16);
  const std::size_t stride = n / samples;
  std::vector<float> magnitudes(samples);
  for (std::size_t s = 0; s < samples; ++s)
    magnitudes[s] = std::fabs(x[s * stride]);
  const auto rank = static_cast<std::size_t>(density * static_cast<double>(samples));
  std::nth_element(magnitudes.begin(),
                   magnitudes.begin() + static_cast<std::ptrdiff_t>(std::min(rank, samples - 1)),
                   magnitudes.end(), std::greater<>());
  return magnitudes[std::min(rank, samples - 1)];
}

// The value of the first processor's `field` in /proc/cpuinfo ("" if absent).
std::string read_cpuinfo(const std::string& field) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.empty())
      break; // the end of the first processor's block
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key != field)
      continue;
    const std::size_t start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return {};
}

std::string read_cpu_model() {
  const std::string name = read_cpuinfo("model name");
  return name.empty() ? "unknown CPU" : name;
}

std::string read_loadavg() {
  std::ifstream file("/proc/loadavg");
  std::string line;
  std::getline(file, line);
  return line;
}

std::string read_hostname() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0)
    return {};
  return host;
}

// How each kernel was exercised, stored with its points.
std::string kernel_setup(Kernel kernel, double sparse_span) {
  const std::string loop =
      "sim/cost/cpu_kernels.cpp loop (compressors/ exposes no function for it)";
  const std::string sparse =
      loop + "; n sorted indices spread over a gradient of 16 n floats (at most 2^" +
      std::to_string(static_cast<int>(std::lround(std::log2(sparse_span)))) + ")";
  switch (kernel) {
  case Kernel::topk_select:
    return "compressors::topk_indices (sampled bound + radix select) on standard-normal floats, "
           "k = density x n";
  case Kernel::threshold_select:
    return "compressors::select_at_or_above with the threshold at the density's |x| quantile; "
           "k = elements kept";
  case Kernel::sample_threshold:
    return "compressors::estimate_threshold, a new seed every call; k = samples = 0.1%, 0.2%, "
           "0.5% and 1% of n (at least 64); median of each round's runs, fastest round";
  case Kernel::sketch_insert:
    return "compressors::CountSketch clear() + insert(); rows = 5, cols = max(256, n / 100) and "
           "max(256, n / 10)";
  case Kernel::sketch_query:
    return "compressors::CountSketch::estimate_all over n coordinates; rows = 5, cols = max(256, "
           "n / 100)";
  case Kernel::gather:
  case Kernel::scatter_add:
  case Kernel::sparse_pack:
  case Kernel::sparse_unpack:
    return sparse;
  case Kernel::fp16_cast:
    return "compressors::float_to_half over n floats into float16 bits (F16C, 8 at a time, where "
           "the CPU has it, as torch's vectorized cast)";
  default:
    return loop;
  }
}

volatile double g_sink = 0; // keeps results of pure kernels alive

} // namespace

double median(std::vector<double> values) {
  assert(!values.empty() && "median of nothing");
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

nlohmann::json describe_cpu() {
  nlohmann::json details;
  details["model"] = read_cpu_model();
  // A virtual machine may name every generation alike ("AMD EPYC"); family,
  // model and stepping tell them apart (Zen 4 is family 25, Zen 5 family 26).
  const std::string family = read_cpuinfo("cpu family");
  if (!family.empty())
    details["cpuid"] = "family " + family + " model " + read_cpuinfo("model") + " stepping " +
                       read_cpuinfo("stepping");
  details["logical_cpus"] = std::thread::hardware_concurrency();
  details["threads_used"] = 1;
  for (auto [key, name] : {std::pair{_SC_LEVEL1_DCACHE_SIZE, "l1d_bytes"},
                           std::pair{_SC_LEVEL2_CACHE_SIZE, "l2_bytes"},
                           std::pair{_SC_LEVEL3_CACHE_SIZE, "l3_bytes"}}) {
    const long value = sysconf(key);
    if (value > 0)
      details[name] = value;
  }
  const std::string host = read_hostname();
  if (!host.empty())
    details["hostname"] = host;
  return details;
}

CalibrationOptions quick_calibration_options() {
  CalibrationOptions options;
  options.min_log2_n = 10;
  options.max_log2_n = 22;
  // Third octaves: a kernel's held-out sizes sit a third of an octave from
  // fitted ones. In half octaves the sparse kernels' step from the L3 to DRAM
  // (2^17..2^19.5, working set 16 n) was predicted from fitted sizes a whole
  // octave apart, and `gather` came out at 10-19 % (the test allows 15 %);
  // in third octaves it is 5-8 %, for about 37 s instead of 26 s here.
  options.steps_per_octave = 3;
  options.seconds_per_point = 0.01;
  options.max_reps = 50;
  options.rounds = 5;
  return options;
}

CalibrationPoints measure_cpu_kernels(const CalibrationOptions& options) {
  if (options.min_log2_n < 4 || options.max_log2_n > 31 ||
      options.min_log2_n > options.max_log2_n || options.steps_per_octave < 1)
    throw std::invalid_argument("calibration: sizes must satisfy 4 <= min <= max <= 31");
  std::vector<std::size_t> sizes;
  for (int step = options.min_log2_n * options.steps_per_octave;
       step <= options.max_log2_n * options.steps_per_octave; ++step)
    sizes.push_back(static_cast<std::size_t>(std::llround(
        std::ldexp(1.0, 0) * std::pow(2.0, static_cast<double>(step) / options.steps_per_octave))));
  const std::size_t largest = sizes.back();
  // Sparse kernels address a gradient 16x longer than their n; the buffers
  // hold 16x the largest n up to 2^28 floats (1 GiB), which bounds their n.
  const std::size_t span =
      std::max(largest, std::clamp(16 * largest, std::size_t{1} << 26, std::size_t{1} << 28));

  std::vector<float> x(span), y(span, 0.5f), m(largest, 0.0f), values(largest);
  std::vector<std::uint16_t> half(largest);
  fill_normal(x, options.seed);
  std::vector<std::uint32_t> index, out_index(largest);
  std::vector<compress::Index> selected;
  selected.reserve(largest / 8);
  std::vector<float> estimates;

  CalibrationPoints points;
  points.load_before = read_loadavg();
  points.sparse_span = static_cast<double>(span);
  // Each round measures the whole grid; a point keeps its fastest round. Rounds
  // spread a point's runs over time, so a burst of activity elsewhere on the
  // machine cannot spoil every run of one point.
  int round = 0;
  std::array<std::size_t, kKernelCount> position{};
  auto record = [&](Kernel kernel, KernelShape shape, const Timing& timing) {
    const auto slot = static_cast<std::size_t>(kernel);
    auto& samples = points.samples[slot];
    auto& repetitions = points.repetitions[slot];
    const std::size_t at = position[slot]++;
    if (round == 0) {
      samples.push_back(Sample{shape, timing.seconds});
      repetitions.push_back(timing.repetitions);
    } else {
      assert(at < samples.size() && samples[at].shape.n == shape.n && "rounds see the same grid");
      samples[at].seconds = std::min(samples[at].seconds, timing.seconds);
      repetitions[at] += timing.repetitions;
    }
    if (options.progress) {
      char line[160];
      std::snprintf(line, sizeof line, "round %d %-16s n=%-10.0f k=%-9.0f %10.4g s (%g runs)",
                    round + 1, std::string(kernel_name(kernel)).c_str(), shape.n, shape.k,
                    timing.seconds, timing.repetitions);
      options.progress(line);
    }
  };

  std::uint64_t draw_seed = options.seed; // sample_threshold's positions, new per call
  for (; round < std::max(1, options.rounds); ++round) {
    position.fill(0);
    for (std::size_t n : sizes) {
      const double dn = static_cast<double>(n);
      const float* data = x.data();

      for (double density : options.densities) {
        const auto k = static_cast<std::size_t>(std::max(1.0, std::floor(density * dn)));
        record(Kernel::topk_select, {dn, static_cast<double>(k), 0, 0},
               time_kernel([&] { compress::topk_indices(data, n, k, selected); }, options));
        const float threshold = magnitude_quantile(data, n, density);
        compress::select_at_or_above(data, n, threshold, selected);
        const double kept = static_cast<double>(selected.size());
        record(Kernel::threshold_select, {dn, kept, 0, 0},
               time_kernel([&] { compress::select_at_or_above(data, n, threshold, selected); },
                           options));
      }
      for (double ratio : {1e-3, 2e-3, 5e-3, 1e-2}) {
        const auto samples = static_cast<std::size_t>(std::clamp(std::floor(ratio * dn), 64.0, dn));
        // A new seed every call, as DGC and IWP draw one per iteration, worker
        // and layer: with one fixed seed every call reads the same positions,
        // which then stay cached and whose nth_element branches the predictor
        // learns, so small sample counts looked 2-5x cheaper per sample than
        // they are in a compressor.
        record(
            Kernel::sample_threshold, {dn, static_cast<double>(samples), 0, 0},
            time_kernel(
                [&] {
                  g_sink =
                      compress::estimate_threshold(data, n, 1e-3, samples, ++draw_seed).threshold;
                },
                options, Statistic::median));
      }
      record(Kernel::l2_norm, {dn, 0, 0, 0},
             time_kernel([&] { g_sink = cpu::sum_of_squares(data, n); }, options));

      if (n <= (std::size_t{1} << options.sketch_max_log2_n)) {
        // gs-SGD and Sketched-SGD use 10 k columns: n / 100 at density 1e-3 and
        // n / 10 at 1e-2 (at least 256), with 5 rows. Two table sizes per n
        // separate the per-element cost from the table's (clearing, cache
        // misses), which would otherwise both grow with n.
        const std::uint32_t rows = 5;
        for (std::size_t per_column : {100, 10}) {
          const auto cols = static_cast<std::uint32_t>(std::max<std::size_t>(256, n / per_column));
          compress::CountSketch sketch(rows, cols, options.seed);
          record(Kernel::sketch_insert, {dn, 0, rows, static_cast<double>(cols)},
                 time_kernel(
                     [&] {
                       sketch.clear();
                       sketch.insert(data, n);
                     },
                     options));
          if (per_column == 100)
            record(Kernel::sketch_query, {dn, 0, rows, static_cast<double>(cols)},
                   time_kernel([&] { sketch.estimate_all(n, estimates); }, options));
        }
      }

      // Sparse kernels: n sorted indices spread over a gradient 16x longer
      // (density 1/16: one index per 64-byte line on average), as a compressor
      // gathers its selected values out of a layer or bucket.
      if (16 * n <= span) {
        spread_indices(n, 16 * n, options.seed, index);
        record(Kernel::gather, {dn, 0, 0, 0},
               time_kernel([&] { cpu::gather(data, index.data(), n, values.data()); }, options));
        record(Kernel::scatter_add, {dn, 0, 0, 0},
               time_kernel([&] { cpu::scatter_add(data, index.data(), n, y.data()); }, options));
        record(
            Kernel::sparse_pack, {dn, 0, 0, 0},
            time_kernel(
                [&] { cpu::sparse_pack(data, index.data(), n, out_index.data(), values.data()); },
                options));
        record(Kernel::sparse_unpack, {dn, 0, 0, 0},
               time_kernel([&] { cpu::sparse_unpack(index.data(), data, n, y.data()); }, options));
      }

      record(Kernel::dense_add, {dn, 0, 0, 0},
             time_kernel([&] { cpu::dense_add(data, n, y.data()); }, options));
      // 1 - 2^-24 keeps y finite and normal over any number of repetitions.
      record(Kernel::dense_scale, {dn, 0, 0, 0},
             time_kernel([&] { cpu::dense_scale(0.99999994f, n, y.data()); }, options));
      record(Kernel::fp16_cast, {dn, 0, 0, 0},
             time_kernel([&] { compress::float_to_half(data, n, half.data()); }, options));
      record(Kernel::sgd_momentum, {dn, 0, 0, 0},
             time_kernel([&] { cpu::sgd_momentum(data, n, 1e-6f, 0.9f, y.data(), m.data()); },
                         options));
    }
  }
  points.load_after = read_loadavg();
  return points;
}

double measure_cpu_gemm_flops(int size) {
  const auto n = static_cast<std::size_t>(size);
  std::vector<float> a(n * n), b(n * n), c(n * n);
  fill_normal(a, 11);
  fill_normal(b, 12);
  // i-k-j order with a 64-column block of b kept hot: the vectorizable loop
  // a straightforward single-thread GEMM gets; a tuned BLAS would be faster.
  auto multiply = [&] {
    std::fill(c.begin(), c.end(), 0.0f);
    constexpr std::size_t kBlock = 64;
    for (std::size_t jb = 0; jb < n; jb += kBlock) {
      const std::size_t j_end = std::min(n, jb + kBlock);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t kk = 0; kk < n; ++kk) {
          const float aik = a[i * n + kk];
          const float* brow = &b[kk * n];
          float* crow = &c[i * n];
          for (std::size_t j = jb; j < j_end; ++j)
            crow[j] += aik * brow[j];
        }
    }
    g_sink = static_cast<double>(c[n + 1]);
  };
  CalibrationOptions options;
  options.min_reps = 3;
  options.seconds_per_point = 0.3;
  const Timing timing = time_kernel(multiply, options);
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) /
         timing.seconds;
}

DeviceProfile fit_cpu_profile(const CalibrationPoints& points, double gemm_flops,
                              const std::string& command, const std::string& date) {
  DeviceProfile profile;
  const std::string model_name = read_cpu_model();
  profile.set_name(model_name + " (measured, 1 thread)");
  nlohmann::json details = describe_cpu();
  details["loadavg_before"] = points.load_before;
  details["loadavg_after"] = points.load_after;
  details["timing"] = "thread CPU time (CLOCK_THREAD_CPUTIME_ID), minimum over repetitions after "
                      "one warm-up run (sample_threshold: median of each round's repetitions, "
                      "fastest round); calls under 50 us timed in batches";
  profile.set_device("cpu", model_name, details);
  Provenance provenance;
  provenance.kind = "measured";
  provenance.command = command;
  provenance.date = date;
  provenance.host = read_hostname();
  provenance.regime =
      "CPU, one thread: compressors/ top-k (sampled bound + radix select), "
      "threshold estimator and Count Sketch; simple loops from sim/cost/cpu_kernels.cpp";
  profile.set_provenance(provenance);

  ComputeModel compute;
  compute.forward_flops_per_s = gemm_flops;
  compute.backward_flops_per_s = gemm_flops;
  compute.layer_latency_s = 0;
  compute.efficiency = {1.0, 1.0, 0.05, 0.05, 0.5, 0.7, 0.1};
  compute.source = "measured: single-thread blocked float32 GEMM (512x512) from "
                   "sim/cost/calibration.cpp; per-kind efficiencies are the same assumptions as "
                   "the GPU profiles";
  profile.set_compute(compute);

  for (Kernel kernel : all_kernels()) {
    const auto& samples = points.samples[static_cast<std::size_t>(kernel)];
    if (samples.empty())
      throw std::runtime_error("calibration: no points for " + std::string(kernel_name(kernel)));
    KernelModel model = fit_measured_kernel(kernel, samples);
    model.regime = "cpu_measured";
    model.repetitions = points.repetitions[static_cast<std::size_t>(kernel)];
    model.source = kernel_setup(kernel, points.sparse_span);
    profile.set_kernel(kernel, std::move(model));
  }
  return profile;
}

std::vector<HoldoutResult> holdout_errors(const CalibrationPoints& points, double min_n) {
  std::vector<HoldoutResult> results;
  for (Kernel kernel : all_kernels()) {
    const auto& samples = points.samples[static_cast<std::size_t>(kernel)];
    std::vector<double> sizes;
    for (const Sample& sample : samples)
      sizes.push_back(sample.shape.n);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    auto fitted_size = [&](double n) {
      const auto position = std::lower_bound(sizes.begin(), sizes.end(), n) - sizes.begin();
      return position % 2 == 0;
    };
    std::vector<Sample> train, test;
    for (const Sample& sample : samples)
      (fitted_size(sample.shape.n) ? train : test).push_back(sample);
    HoldoutResult result{kernel};
    if (train.empty() || test.empty()) {
      results.push_back(result);
      continue;
    }
    const Curve curve = fit_curve(kernel_family(kernel), train);
    std::vector<double> errors;
    for (const Sample& sample : test) {
      if (!(sample.shape.n > min_n))
        continue;
      errors.push_back(std::fabs(curve.seconds(sample.shape) - sample.seconds) / sample.seconds);
    }
    if (!errors.empty()) {
      result.median_abs_error = median(errors);
      result.max_abs_error = *std::max_element(errors.begin(), errors.end());
      result.points = errors.size();
    }
    results.push_back(result);
  }
  return results;
}

std::vector<HoldoutResult> holdout_errors(const DeviceProfile& profile, double min_n) {
  CalibrationPoints points;
  for (Kernel kernel : all_kernels()) {
    points.samples[static_cast<std::size_t>(kernel)] = profile.kernel(kernel).points;
    points.repetitions[static_cast<std::size_t>(kernel)] = profile.kernel(kernel).repetitions;
  }
  return holdout_errors(points, min_n);
}

std::string format_holdout(const HoldoutResult& result) {
  char line[160];
  const std::string name(kernel_name(result.kernel));
  if (result.points == 0)
    std::snprintf(line, sizeof line,
                  "  %-18s no point above 2^16 to predict (calibrate larger sizes)\n",
                  name.c_str());
  else
    std::snprintf(line, sizeof line, "  %-18s median |error| %5.1f%%  max %5.1f%%  (%zu points)\n",
                  name.c_str(), 100 * result.median_abs_error, 100 * result.max_abs_error,
                  result.points);
  return line;
}

} // namespace gcsim::cost
