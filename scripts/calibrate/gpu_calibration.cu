// CUDA implementations of the compression kernels gcsim's cost model knows,
// timed with CUDA events after warm-up. Selection and compaction use CUB and
// Thrust from the toolkit; the rest are the one-line kernels a framework runs.

#include "gpu_calibration.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/gather.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/scatter.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <vector>

namespace gcsim::calibrate {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

__host__ __device__ inline std::uint32_t key_of(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x) & 0x7FFFFFFFu;
#else
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits & 0x7FFFFFFFu;
#endif
}

__host__ __device__ inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__global__ void fill_normal(float* x, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::uint64_t r = mix(seed + i);
    const float u1 = (static_cast<float>(r >> 40) + 1.0f) / 16777217.0f;
    const float u2 = static_cast<float>((r >> 16) & 0xFFFFFF) / 16777216.0f;
    x[i] = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
  }
}

// One pass of a radix select: histogram of the 8-bit digit at `shift` among
// the keys whose higher digits equal `prefix`.
__global__ void digit_histogram(const float* x, std::size_t n, std::uint32_t prefix,
                                std::uint32_t prefix_mask, int shift, unsigned* histogram) {
  __shared__ unsigned local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    local[b] = 0;
  __syncthreads();
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::uint32_t key = key_of(x[i]);
    if ((key & prefix_mask) == prefix)
      atomicAdd(&local[(key >> shift) & 0xFFu], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (local[b] != 0)
      atomicAdd(&histogram[b], local[b]);
}

struct AtLeast {
  const float* x;
  std::uint32_t threshold;
  __host__ __device__ bool operator()(std::uint32_t i) const { return key_of(x[i]) >= threshold; }
};

struct Square {
  __host__ __device__ float operator()(float v) const { return v * v; }
};

struct ScaleBy {
  float factor;
  __host__ __device__ float operator()(float v) const { return factor * v; }
};

struct Magnitude {
  __host__ __device__ std::uint32_t operator()(float v) const { return key_of(v); }
};

__global__ void sketch_insert_kernel(const float* x, std::size_t n, int rows, std::uint32_t cols,
                                     std::uint64_t seed, float* table) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float v = x[i];
    for (int r = 0; r < rows; ++r) {
      const std::uint64_t h =
          mix(seed ^ (i * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(r)));
      const auto bucket = static_cast<std::uint32_t>(((h & 0xFFFFFFFFull) * cols) >> 32);
      atomicAdd(&table[static_cast<std::size_t>(r) * cols + bucket], (h >> 63) ? -v : v);
    }
  }
}

__global__ void sketch_query_kernel(const float* table, std::size_t n, int rows, std::uint32_t cols,
                                    std::uint64_t seed, float* out) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    float estimates[16];
    for (int r = 0; r < rows; ++r) {
      const std::uint64_t h =
          mix(seed ^ (i * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(r)));
      const auto bucket = static_cast<std::uint32_t>(((h & 0xFFFFFFFFull) * cols) >> 32);
      const float value = table[static_cast<std::size_t>(r) * cols + bucket];
      estimates[r] = (h >> 63) ? -value : value;
    }
    for (int a = 1; a < rows; ++a) // insertion sort: rows <= 16
      for (int b = a; b > 0 && estimates[b - 1] > estimates[b]; --b) {
        const float t = estimates[b];
        estimates[b] = estimates[b - 1];
        estimates[b - 1] = t;
      }
    out[i] = estimates[rows / 2];
  }
}

__global__ void scatter_add_kernel(const float* values, const std::uint32_t* index, std::size_t n,
                                   float* y) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    atomicAdd(&y[index[i]], values[i]);
}

__global__ void pack_kernel(const float* x, const std::uint32_t* index, std::size_t n,
                            std::uint32_t* out_index, float* out_values) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::uint32_t j = index[i];
    out_index[i] = j;
    out_values[i] = x[j];
  }
}

__global__ void fp16_kernel(const float* x, std::size_t n, __half* out) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = __float2half_rn(x[i]);
}

__global__ void sgd_kernel(const float* g, std::size_t n, float lr, float mu, float* w, float* m) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float momentum = mu * m[i] + g[i];
    m[i] = momentum;
    w[i] -= lr * momentum;
  }
}

__global__ void spread_kernel(std::uint32_t* index, std::size_t n, std::size_t span,
                              std::uint64_t seed) {
  const std::size_t stride = span / n > 0 ? span / n : 1;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    index[i] = static_cast<std::uint32_t>(i * stride + mix(seed ^ i) % stride);
}

class Timer {
public:
  explicit Timer(const GpuOptions& options) : options_(options) {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Minimum and median of the timed runs, after warm-up runs.
  template <typename Kernel> GpuPoint time(Kernel&& kernel) {
    for (int w = 0; w < options_.warmup; ++w)
      kernel();
    check(cudaDeviceSynchronize(), "warm-up");
    std::vector<double> times;
    double spent = 0;
    while (static_cast<int>(times.size()) < options_.min_reps ||
           (spent < options_.seconds_per_point &&
            static_cast<int>(times.size()) < options_.max_reps)) {
      check(cudaEventRecord(start_), "cudaEventRecord");
      kernel();
      check(cudaEventRecord(stop_), "cudaEventRecord");
      check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
      float milliseconds = 0;
      check(cudaEventElapsedTime(&milliseconds, start_, stop_), "cudaEventElapsedTime");
      times.push_back(1e-3 * milliseconds);
      spent += times.back();
    }
    std::sort(times.begin(), times.end());
    GpuPoint point;
    point.seconds = times.front();
    point.median_seconds = times[times.size() / 2];
    point.reps = static_cast<int>(times.size());
    return point;
  }

private:
  const GpuOptions& options_;
  cudaEvent_t start_{};
  cudaEvent_t stop_{};
};

constexpr int kBlock = 256;

int grid_for(std::size_t n, int multiprocessors) {
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<int>(
      std::min<std::size_t>(blocks, static_cast<std::size_t>(multiprocessors) * 32));
}

} // namespace

GpuInfo gpu_info(int device) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device < 0 || device >= count)
    throw std::runtime_error("no CUDA device " + std::to_string(device) + " (found " +
                             std::to_string(count) + ")");
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  GpuInfo info;
  info.name = prop.name;
  info.device = device;
  check(cudaDriverGetVersion(&info.driver_version), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&info.runtime_version), "cudaRuntimeGetVersion");
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  int value = 0;
  check(cudaDeviceGetAttribute(&value, cudaDevAttrClockRate, device), "clock rate");
  info.sm_clock_hz = 1e3 * value; // kHz
  check(cudaDeviceGetAttribute(&value, cudaDevAttrMemoryClockRate, device), "memory clock");
  info.memory_clock_hz = 1e3 * value;
  check(cudaDeviceGetAttribute(&value, cudaDevAttrGlobalMemoryBusWidth, device), "bus width");
  info.memory_bus_bits = value;
  info.peak_bandwidth_Bps = 2.0 * info.memory_clock_hz * info.memory_bus_bits / 8.0;
  info.memory_bytes = static_cast<double>(prop.totalGlobalMem);
  check(cudaDeviceGetAttribute(&value, cudaDevAttrL2CacheSize, device), "L2 size");
  info.l2_bytes = value;
  return info;
}

double measure_gemm_flops(int device, int size) {
  check(cudaSetDevice(device), "cudaSetDevice");
  const std::size_t elements = static_cast<std::size_t>(size) * static_cast<std::size_t>(size);
  thrust::device_vector<float> a(elements, 0.5f), b(elements, 0.25f), c(elements, 0.0f);
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublasCreate failed");
  // Plain FP32 (no TF32 tensor cores), the rate the derived profiles assume.
  cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
  const float alpha = 1.0f, beta = 0.0f;
  GpuOptions options;
  options.warmup = 2;
  options.min_reps = 5;
  options.max_reps = 20;
  Timer timer(options);
  const GpuPoint point = timer.time([&] {
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &alpha,
                thrust::raw_pointer_cast(a.data()), size, thrust::raw_pointer_cast(b.data()), size,
                &beta, thrust::raw_pointer_cast(c.data()), size);
  });
  cublasDestroy(handle);
  return 2.0 * static_cast<double>(size) * size * size / point.seconds;
}

std::vector<GpuPoint> run_gpu_calibration(const GpuOptions& options,
                                          const std::function<void(const GpuPoint&)>& progress) {
  const GpuInfo info = gpu_info(options.device);
  const std::size_t largest = std::size_t{1} << options.max_log2_n;
  // Sparse kernels address a gradient 16x their n (as the CPU calibration).
  const std::size_t span = std::max(largest, std::min(16 * largest, std::size_t{1} << 28));
  const int sms = info.multiprocessors;

  thrust::device_vector<float> x(span), y(span, 0.5f), m(largest, 0.0f), values(largest);
  thrust::device_vector<__half> half(largest);
  thrust::device_vector<std::uint32_t> index(largest), out_index(largest), selected(largest);
  thrust::device_vector<unsigned> histogram(256);
  thrust::device_vector<int> count(1);
  thrust::device_vector<std::uint32_t> sample_keys(largest / 100 + 64),
      sorted_keys(largest / 100 + 64);
  thrust::device_vector<float> reduced(1);
  fill_normal<<<sms * 32, kBlock>>>(thrust::raw_pointer_cast(x.data()), span, 1);
  check(cudaGetLastError(), "fill_normal");
  const float* px = thrust::raw_pointer_cast(x.data());
  float* py = thrust::raw_pointer_cast(y.data());

  // CUB temporary storage, sized for the largest call of each algorithm.
  std::size_t select_bytes = 0, reduce_bytes = 0, sort_bytes = 0;
  {
    thrust::counting_iterator<std::uint32_t> ids(0);
    cub::DeviceSelect::If(nullptr, select_bytes, ids, thrust::raw_pointer_cast(selected.data()),
                          thrust::raw_pointer_cast(count.data()), static_cast<int>(largest),
                          AtLeast{px, 0});
    auto squares = thrust::make_transform_iterator(px, Square{});
    cub::DeviceReduce::Sum(nullptr, reduce_bytes, squares, thrust::raw_pointer_cast(reduced.data()),
                           static_cast<int>(largest));
    cub::DeviceRadixSort::SortKeys(
        nullptr, sort_bytes, thrust::raw_pointer_cast(sample_keys.data()),
        thrust::raw_pointer_cast(sorted_keys.data()), static_cast<int>(sample_keys.size()));
  }
  thrust::device_vector<char> temp(std::max({select_bytes, reduce_bytes, sort_bytes}) + 1);
  void* ptemp = thrust::raw_pointer_cast(temp.data());

  std::vector<GpuPoint> points;
  Timer timer(options);
  auto record = [&](GpuPoint point, const char* kernel, double n, double k, double rows,
                    double cols) {
    point.kernel = kernel;
    point.n = n;
    point.k = k;
    point.rows = rows;
    point.cols = cols;
    points.push_back(point);
    if (progress)
      progress(point);
  };

  for (int e = options.min_log2_n; e <= options.max_log2_n; ++e) {
    const std::size_t n = std::size_t{1} << e;
    const double dn = static_cast<double>(n);
    const int grid = grid_for(n, sms);
    thrust::counting_iterator<std::uint32_t> ids(0);

    for (double density : options.densities) {
      const auto k = static_cast<std::size_t>(std::max(1.0, density * dn));
      // Radix select (8-bit digits of the 31-bit magnitude key, one host
      // round trip per digit as PyTorch's does), then compaction with CUB.
      auto topk = [&] {
        std::uint32_t prefix = 0, prefix_mask = 0;
        std::size_t need = k;
        for (int shift = 24; shift >= 0; shift -= 8) {
          thrust::fill(thrust::device, histogram.begin(), histogram.end(), 0u);
          digit_histogram<<<grid, kBlock>>>(px, n, prefix, prefix_mask, shift,
                                            thrust::raw_pointer_cast(histogram.data()));
          unsigned host[256];
          check(cudaMemcpy(host, thrust::raw_pointer_cast(histogram.data()), sizeof host,
                           cudaMemcpyDeviceToHost),
                "histogram copy");
          int digit = 255;
          for (; digit > 0 && host[digit] < need; --digit)
            need -= host[digit];
          prefix |= static_cast<std::uint32_t>(digit) << shift;
          prefix_mask |= 0xFFu << shift;
        }
        std::size_t bytes = select_bytes;
        cub::DeviceSelect::If(ptemp, bytes, ids, thrust::raw_pointer_cast(selected.data()),
                              thrust::raw_pointer_cast(count.data()), static_cast<int>(n),
                              AtLeast{px, prefix});
      };
      record(timer.time(topk), "topk_select", dn, static_cast<double>(k), 0, 0);

      // Threshold at the density's magnitude quantile (from a sorted copy).
      thrust::device_vector<std::uint32_t> keys(n);
      thrust::transform(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n), keys.begin(),
                        Magnitude{});
      thrust::sort(keys.begin(), keys.end());
      const std::uint32_t threshold = keys[n - k];
      auto threshold_select = [&] {
        std::size_t bytes = select_bytes;
        cub::DeviceSelect::If(ptemp, bytes, ids, thrust::raw_pointer_cast(selected.data()),
                              thrust::raw_pointer_cast(count.data()), static_cast<int>(n),
                              AtLeast{px, threshold});
      };
      threshold_select();
      const int kept = count[0];
      record(timer.time(threshold_select), "threshold_select", dn, kept, 0, 0);
    }

    for (double ratio : {1e-3, 1e-2}) {
      const auto samples = static_cast<std::size_t>(std::max(64.0, ratio * dn));
      if (samples > sample_keys.size())
        continue;
      // New positions every call (as DGC draws them per iteration): a fixed set
      // would stay in L2 across the timed repetitions.
      std::uint64_t draw = 7;
      auto sample = [&] {
        spread_kernel<<<grid, kBlock>>>(thrust::raw_pointer_cast(index.data()), samples, n, ++draw);
        auto magnitudes = thrust::make_transform_iterator(x.begin(), Magnitude{});
        thrust::gather(index.begin(), index.begin() + static_cast<std::ptrdiff_t>(samples),
                       magnitudes, sample_keys.begin());
        std::size_t bytes = sort_bytes;
        cub::DeviceRadixSort::SortKeys(ptemp, bytes, thrust::raw_pointer_cast(sample_keys.data()),
                                       thrust::raw_pointer_cast(sorted_keys.data()),
                                       static_cast<int>(samples));
      };
      record(timer.time(sample), "sample_threshold", dn, static_cast<double>(samples), 0, 0);
    }

    auto l2 = [&] {
      std::size_t bytes = reduce_bytes;
      cub::DeviceReduce::Sum(ptemp, bytes, thrust::make_transform_iterator(px, Square{}),
                             thrust::raw_pointer_cast(reduced.data()), static_cast<int>(n));
    };
    record(timer.time(l2), "l2_norm", dn, 0, 0, 0);

    // gs-SGD and Sketched-SGD use 10 k columns: n / 100 at density 1e-3 and
    // n / 10 at 1e-2 (at least 256), with 5 rows. Two table sizes per n
    // separate the per-element cost from the table's (clearing it, atomics
    // missing the cache), which would otherwise both grow with n, as the CPU
    // calibration does.
    for (std::size_t per_column : {100, 10}) {
      const int rows = 5;
      const auto cols = static_cast<std::uint32_t>(std::max<std::size_t>(256, n / per_column));
      thrust::device_vector<float> table(static_cast<std::size_t>(rows) * cols);
      float* ptable = thrust::raw_pointer_cast(table.data());
      auto insert = [&] {
        check(cudaMemsetAsync(ptable, 0, table.size() * sizeof(float)), "memset");
        sketch_insert_kernel<<<grid, kBlock>>>(px, n, rows, cols, 3, ptable);
      };
      record(timer.time(insert), "sketch_insert", dn, 0, rows, cols);
      // A query's curve has no table term (n x rows reads): one table size,
      // as the CPU calibration times it, so its points are one per n.
      if (per_column != 100)
        continue;
      auto query = [&] {
        sketch_query_kernel<<<grid, kBlock>>>(ptable, n, rows, cols, 3,
                                              thrust::raw_pointer_cast(values.data()));
      };
      record(timer.time(query), "sketch_query", dn, 0, rows, cols);
    }

    if (16 * n <= span) {
      spread_kernel<<<grid, kBlock>>>(thrust::raw_pointer_cast(index.data()), n, 16 * n, 5);
      const std::uint32_t* pindex = thrust::raw_pointer_cast(index.data());
      auto gather = [&] {
        thrust::gather(index.begin(), index.begin() + static_cast<std::ptrdiff_t>(n), x.begin(),
                       values.begin());
      };
      record(timer.time(gather), "gather", dn, 0, 0, 0);
      auto scatter = [&] { scatter_add_kernel<<<grid, kBlock>>>(px, pindex, n, py); };
      record(timer.time(scatter), "scatter_add", dn, 0, 0, 0);
      auto pack = [&] {
        pack_kernel<<<grid, kBlock>>>(px, pindex, n, thrust::raw_pointer_cast(out_index.data()),
                                      thrust::raw_pointer_cast(values.data()));
      };
      record(timer.time(pack), "sparse_pack", dn, 0, 0, 0);
      auto unpack = [&] {
        thrust::scatter(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n), index.begin(),
                        y.begin());
      };
      record(timer.time(unpack), "sparse_unpack", dn, 0, 0, 0);
    }

    auto add = [&] {
      thrust::transform(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n), y.begin(), y.begin(),
                        thrust::plus<float>());
    };
    record(timer.time(add), "dense_add", dn, 0, 0, 0);
    auto scale = [&] {
      thrust::transform(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(n), y.begin(),
                        ScaleBy{0.99999994f});
    };
    record(timer.time(scale), "dense_scale", dn, 0, 0, 0);
    auto cast = [&] {
      fp16_kernel<<<grid, kBlock>>>(px, n, thrust::raw_pointer_cast(half.data()));
    };
    record(timer.time(cast), "fp16_cast", dn, 0, 0, 0);
    auto sgd = [&] {
      sgd_kernel<<<grid, kBlock>>>(px, n, 1e-6f, 0.9f, py, thrust::raw_pointer_cast(m.data()));
    };
    record(timer.time(sgd), "sgd_momentum", dn, 0, 0, 0);
    check(cudaGetLastError(), "kernels");
  }
  return points;
}

} // namespace gcsim::calibrate
