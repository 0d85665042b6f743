// gcsim_calibrate_cuda: measures a GPU on the cost model's kernels (CUDA
// events, after warm-up), fits the curves with gcsim_cost and writes a
// measured device profile (platforms/devices/README.md).
//
//   gcsim_calibrate_cuda --out platforms/devices/<gpu>.json [--device N]
//                        [--min-log2 10] [--max-log2 28] [--quick]

#include "gpu_calibration.hpp"
#include "sim/cost/device_profile.hpp"
#include "sim/input/atomic_write.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <map>
#include <string>
#include <unistd.h>

namespace {

using gcsim::calibrate::GpuInfo;
using gcsim::calibrate::GpuOptions;
using gcsim::calibrate::GpuPoint;
namespace cost = gcsim::cost;

int usage() {
  std::fprintf(stderr, "usage: gcsim_calibrate_cuda --out FILE [--device N] [--min-log2 A] "
                       "[--max-log2 B] [--quick]\n");
  return 2;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

std::string hostname() {
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string();
}

} // namespace

int main(int argc, char** argv) {
  GpuOptions options;
  std::string out;
  std::string command = "gcsim_calibrate_cuda";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    command += " " + arg;
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw std::invalid_argument(arg + " needs a value");
      command += std::string(" ") + argv[i + 1];
      return argv[++i];
    };
    try {
      if (arg == "--out")
        out = value();
      else if (arg == "--device")
        options.device = std::stoi(value());
      else if (arg == "--min-log2")
        options.min_log2_n = std::stoi(value());
      else if (arg == "--max-log2")
        options.max_log2_n = std::stoi(value());
      else if (arg == "--quick") {
        options.max_log2_n = 22;
        options.min_reps = 3;
        options.seconds_per_point = 0.01;
      } else
        return usage();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "gcsim_calibrate_cuda: %s\n", error.what());
      return usage();
    }
  }
  if (out.empty() || options.min_log2_n < 4 || options.max_log2_n > 28 ||
      options.min_log2_n > options.max_log2_n)
    return usage();

  try {
    gcsim::check_writable(out); // before the minutes of measuring, not after
    const GpuInfo info = gcsim::calibrate::gpu_info(options.device);
    // cudaDriverGetVersion gives the CUDA version the driver supports (13000
    // for 13.0), not the driver's own release number.
    std::fprintf(stderr, "calibrating %s (driver for CUDA %d.%d, %.0f GB/s peak)\n",
                 info.name.c_str(), info.driver_version / 1000, info.driver_version % 1000 / 10,
                 info.peak_bandwidth_Bps / 1e9);
    const std::vector<GpuPoint> raw =
        gcsim::calibrate::run_gpu_calibration(options, [](const GpuPoint& point) {
          std::fprintf(stderr, "%-16s n=%-10.0f k=%-9.0f %10.4g s (%d runs)\n",
                       point.kernel.c_str(), point.n, point.k, point.seconds, point.reps);
        });
    const double gemm = gcsim::calibrate::measure_gemm_flops(options.device);

    std::map<std::string, std::vector<cost::Sample>> samples;
    std::map<std::string, std::vector<double>> reps;
    for (const GpuPoint& point : raw) {
      samples[point.kernel].push_back(
          cost::Sample{cost::KernelShape{point.n, point.k, point.rows, point.cols}, point.seconds});
      reps[point.kernel].push_back(point.reps);
    }

    cost::DeviceProfile profile;
    profile.set_name(info.name + " (measured)");
    nlohmann::json details{{"cuda_device", info.device},
                           {"driver_version", info.driver_version},
                           {"runtime_version", info.runtime_version},
                           {"compute_capability", std::to_string(info.compute_major) + "." +
                                                      std::to_string(info.compute_minor)},
                           {"multiprocessors", info.multiprocessors},
                           {"sm_clock_hz", info.sm_clock_hz},
                           {"memory_clock_hz", info.memory_clock_hz},
                           {"memory_bus_bits", info.memory_bus_bits},
                           {"memory_bandwidth_Bps", info.peak_bandwidth_Bps},
                           {"memory_bytes", info.memory_bytes},
                           {"l2_cache_bytes", info.l2_bytes},
                           {"fp32_gemm_flops", gemm},
                           {"timing", "CUDA events, minimum over repetitions after warm-up"}};
    profile.set_device("gpu", info.name, details);
    cost::Provenance provenance;
    provenance.kind = "measured";
    provenance.command = command;
    provenance.date = today();
    provenance.host = hostname();
    provenance.regime = "radix select (4 passes of 8-bit digits + CUB DeviceSelect compaction), "
                        "as scripts/calibrate/gpu_calibration.cu implements it";
    profile.set_provenance(provenance);
    cost::ComputeModel compute;
    compute.forward_flops_per_s = gemm;
    compute.backward_flops_per_s = gemm;
    compute.efficiency = {1.0, 1.0, 0.05, 0.05, 0.5, 0.7, 0.1};
    compute.source = "measured cuBLAS SGEMM 4096^3 (FP32, no TF32); per-kind efficiencies are "
                     "assumptions (see platforms/devices/README.md)";
    profile.set_compute(compute);
    for (cost::Kernel kernel : cost::all_kernels()) {
      const std::string name(cost::kernel_name(kernel));
      if (samples[name].empty())
        throw std::runtime_error("no points for " + name);
      cost::KernelModel model = cost::fit_measured_kernel(kernel, samples[name]);
      model.regime = "gpu_measured";
      model.source = "scripts/calibrate/gpu_calibration.cu";
      model.repetitions = reps[name];
      profile.set_kernel(kernel, std::move(model));
    }
    gcsim::write_file_atomically(out, profile.to_json().dump(1) + "\n");
    std::printf("wrote %s\n", out.c_str());
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gcsim_calibrate_cuda: %s\n", error.what());
    return 1;
  }
}
