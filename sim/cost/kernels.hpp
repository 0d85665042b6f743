#pragma once
// The kernels the cost model knows, the shape of one kernel call, and which
// fitted family each kernel uses. Names are the plain strings that appear in
// device profiles and that compressors report; they are fixed here so a typo
// in a profile or a caller is an error, never a silent zero.

#include <array>
#include <optional>
#include <string_view>

namespace gcsim::cost {

enum class Kernel {
  topk_select,      // exact top-k by magnitude of n elements (n, k)
  threshold_select, // count |x| >= t over n, then compact the kept ones (n, k = kept)
  l2_norm,          // sum of squares of n elements (n)
  sample_threshold, // draw k = samples random elements of n, select among them (n, k)
  sketch_insert,    // Count Sketch: n elements into rows x cols buckets (n, rows, cols)
  sketch_query,     // median-of-rows estimate for n coordinates (n, rows)
  gather,           // y[i] = x[idx[i]] for n indices (n)
  scatter_add,      // y[idx[i]] += x[i] for n indices (n)
  sparse_pack,      // dense x + n indices -> n (index, value) pairs (n = pairs)
  sparse_unpack,    // n (index, value) pairs -> written into a dense buffer (n = pairs)
  dense_add,        // y += x over n elements (n)
  dense_scale,      // y *= a over n elements (n)
  fp16_cast,        // float32 -> float16 of n elements (n)
  sgd_momentum,     // m = mu m + g; w -= lr m over n parameters (n); optimizer_seconds
};

inline constexpr std::size_t kKernelCount = 14;

/// The arguments of one kernel call. Which fields a kernel reads is listed in
/// the Kernel enum; the others are ignored. All are element counts (not bytes).
/// The fields match compressors/compressor.hpp's KernelRun (n, k, rows, cols).
struct KernelShape {
  double n = 0;    // elements processed (the dense length)
  double k = 0;    // elements kept / selected / sampled, or pairs packed
  double rows = 0; // Count Sketch rows (hash functions)
  double cols = 0; // Count Sketch columns (buckets per row)
};

/// Terms a fitted curve can be built from. Each is a product of shape fields;
/// all are non-decreasing in every field, so non-negative coefficients give a
/// curve that is monotone within a segment.
enum class Term { latency, per_n, per_k, per_n_log2k, per_k_log2k, per_n_rows, per_rows_cols };

/// The coefficient's key in a profile: "latency_s", "per_n_s", ...
std::string_view term_key(Term term);
double term_value(Term term, const KernelShape& shape);

/// The fitted family of a kernel: its terms and the shape field in which the
/// curve is piecewise by default (where a cache boundary shows). A family that
/// reads k may be fitted piecewise in k instead (a step in the selected or
/// sampled count, as when a GPU sort moves from one thread block to the whole
/// device).
struct Family {
  std::string_view name;
  std::array<Term, 4> terms;
  std::size_t term_count;
  char piecewise_in; // 'n' or 'k'
  bool uses_k;
  bool uses_rows;
  bool uses_cols;
};

std::string_view kernel_name(Kernel kernel);
std::optional<Kernel> kernel_from_name(std::string_view name);

/// A kernel a profile does not fit but derives from what it has: the
/// product of a matrix of n elements with a thin one of k columns
/// (PowerSGD's M Q, M^T P and P Q^T; k the rank). Memory-bound for a small
/// k, compute-bound for a large one: it takes the longer of a streaming pass
/// over the matrix (the l2_norm curve at n, with its launch latency) and its
/// 2 n k FLOPs at the device's forward rate for linear layers, without the
/// per-layer latency (DeviceProfile::kernel_seconds). A roofline of an
/// efficient kernel: torch's bmm of a large matrix with one column runs
/// several times slower than a streaming pass on a CPU.
inline constexpr std::string_view kLowRankProduct = "low_rank_product";
/// The fitted kernel whose curve prices kernel `name` (itself, or l2_norm
/// for low_rank_product); none for an unknown name.
std::optional<Kernel> fitted_kernel_of(std::string_view name);
const Family& kernel_family(Kernel kernel);
/// Every kernel, in enum order.
const std::array<Kernel, kKernelCount>& all_kernels();

/// The piecewise variable's value in `shape`: shape.k for 'k', else shape.n.
double piecewise_value(char piecewise_in, const KernelShape& shape);

} // namespace gcsim::cost
