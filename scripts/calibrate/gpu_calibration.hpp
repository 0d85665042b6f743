// The interface between the CUDA kernels (gpu_calibration.cu, compiled by
// nvcc) and the host program that fits and writes the profile
// (calibrate_cuda_main.cpp, compiled by the C++ compiler with gcsim_cost).
// Plain C++ only, so nvcc never parses nlohmann/json.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace gcsim::calibrate {

struct GpuInfo {
  std::string name;
  int device = 0;
  int driver_version = 0; // e.g. 12040 for 12.4
  int runtime_version = 0;
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  double sm_clock_hz = 0;     // cudaDevAttrClockRate
  double memory_clock_hz = 0; // cudaDevAttrMemoryClockRate
  int memory_bus_bits = 0;
  double peak_bandwidth_Bps = 0; // 2 x memory clock x bus width / 8 (double data rate)
  double memory_bytes = 0;
  double l2_bytes = 0;
};

struct GpuOptions {
  int device = 0;
  int min_log2_n = 10;
  int max_log2_n = 28;
  std::vector<double> densities{1e-4, 1e-3, 1e-2, 1e-1};
  int warmup = 3;     // untimed runs before timing
  int min_reps = 5;   // timed runs per point, at least
  int max_reps = 100; // and at most
  double seconds_per_point = 0.05;
};

struct GpuPoint {
  std::string kernel; // the cost model's kernel name
  double n = 0, k = 0, rows = 0, cols = 0;
  double seconds = 0;        // minimum over the timed runs (CUDA events)
  double median_seconds = 0; // for the record
  int reps = 0;
};

/// Throws std::runtime_error when no CUDA device is usable.
GpuInfo gpu_info(int device);

/// Achieved FP32 GEMM rate (cuBLAS SGEMM, size^3 x 2 FLOP), the profile's
/// forward/backward FLOP rate.
double measure_gemm_flops(int device, int size = 4096);

/// Runs every kernel over the grid and returns one point per (kernel, shape).
std::vector<GpuPoint> run_gpu_calibration(const GpuOptions& options,
                                          const std::function<void(const GpuPoint&)>& progress);

} // namespace gcsim::calibrate
