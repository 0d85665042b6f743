#include "sim/cost/kernels.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace gcsim::cost {
namespace {

// Families, documented in platforms/devices/README.md. Unused trailing terms
// repeat latency and are ignored (term_count).
constexpr Family kLatencyLinear{"latency_linear",
                                {Term::latency, Term::per_n, Term::latency, Term::latency},
                                2,
                                'n',
                                false,
                                false,
                                false};
constexpr Family kLatencyLinearNK{"latency_linear_nk",
                                  {Term::latency, Term::per_n, Term::per_k, Term::latency},
                                  3,
                                  'n',
                                  true,
                                  false,
                                  false};
// Selection: a radix select is linear in n, a sampled-bound select (as in
// compressors/) adds a cost per kept candidate, and legacy torch.topk grows
// like n log2 k; one family covers all three regimes (coefficients may be 0).
constexpr Family kSelection{
    "selection", {Term::latency, Term::per_n, Term::per_k, Term::per_n_log2k}, 4, 'n', true, false,
    false};
// Sampling (the threshold estimator): k random reads out of n, then a linear
// selection (nth_element) over the k samples. Measured per sample, the cost
// grows with how far the reads spread beyond the caches; with the sample
// count proportional to n, as DGC and IWP draw it, a k log2 k term follows
// that growth (it is not a sort: nth_element is linear).
constexpr Family kSampling{
    "sampling", {Term::latency, Term::per_n, Term::per_k, Term::per_k_log2k}, 4, 'n', true, false,
    false};
// Insert does rows scatter-adds per element and clears the rows x cols table.
constexpr Family kSketchInsert{
    "sketch_insert",
    {Term::latency, Term::per_n_rows, Term::per_rows_cols, Term::latency},
    3,
    'n',
    false,
    true,
    true};
constexpr Family kSketchQuery{"sketch_query",
                              {Term::latency, Term::per_n_rows, Term::latency, Term::latency},
                              2,
                              'n',
                              false,
                              true,
                              false};

struct Entry {
  Kernel kernel;
  std::string_view name;
  const Family* family;
};

constexpr std::array<Entry, kKernelCount> kEntries{{
    {Kernel::topk_select, "topk_select", &kSelection},
    {Kernel::threshold_select, "threshold_select", &kLatencyLinearNK},
    {Kernel::l2_norm, "l2_norm", &kLatencyLinear},
    {Kernel::sample_threshold, "sample_threshold", &kSampling},
    {Kernel::sketch_insert, "sketch_insert", &kSketchInsert},
    {Kernel::sketch_query, "sketch_query", &kSketchQuery},
    {Kernel::gather, "gather", &kLatencyLinear},
    {Kernel::scatter_add, "scatter_add", &kLatencyLinear},
    {Kernel::sparse_pack, "sparse_pack", &kLatencyLinear},
    {Kernel::sparse_unpack, "sparse_unpack", &kLatencyLinear},
    {Kernel::dense_add, "dense_add", &kLatencyLinear},
    {Kernel::dense_scale, "dense_scale", &kLatencyLinear},
    {Kernel::fp16_cast, "fp16_cast", &kLatencyLinear},
    {Kernel::sgd_momentum, "sgd_momentum", &kLatencyLinear},
}};

const Entry& entry(Kernel kernel) {
  const auto& found = kEntries[static_cast<std::size_t>(kernel)];
  assert(found.kernel == kernel && "kEntries must be in enum order");
  return found;
}

} // namespace

std::string_view term_key(Term term) {
  switch (term) {
  case Term::latency:
    return "latency_s";
  case Term::per_n:
    return "per_n_s";
  case Term::per_k:
    return "per_k_s";
  case Term::per_n_log2k:
    return "per_n_log2k_s";
  case Term::per_k_log2k:
    return "per_k_log2k_s";
  case Term::per_n_rows:
    return "per_n_rows_s";
  case Term::per_rows_cols:
    return "per_rows_cols_s";
  }
  return "?";
}

double term_value(Term term, const KernelShape& shape) {
  switch (term) {
  case Term::latency:
    return 1.0;
  case Term::per_n:
    return shape.n;
  case Term::per_k:
    return shape.k;
  case Term::per_n_log2k:
    // log2 of k below 2 would be <= 0; selecting one element still reads n.
    return shape.n * std::log2(std::max(shape.k, 2.0));
  case Term::per_k_log2k:
    return shape.k * std::log2(std::max(shape.k, 2.0));
  case Term::per_n_rows:
    return shape.n * shape.rows;
  case Term::per_rows_cols:
    return shape.rows * shape.cols;
  }
  return 0.0;
}

std::string_view kernel_name(Kernel kernel) {
  return entry(kernel).name;
}

std::optional<Kernel> kernel_from_name(std::string_view name) {
  for (const Entry& candidate : kEntries)
    if (candidate.name == name)
      return candidate.kernel;
  return std::nullopt;
}

std::optional<Kernel> fitted_kernel_of(std::string_view name) {
  if (name == kLowRankProduct)
    return Kernel::l2_norm;
  return kernel_from_name(name);
}

const Family& kernel_family(Kernel kernel) {
  return *entry(kernel).family;
}

const std::array<Kernel, kKernelCount>& all_kernels() {
  static const std::array<Kernel, kKernelCount> kernels = [] {
    std::array<Kernel, kKernelCount> list{};
    for (std::size_t i = 0; i < kKernelCount; ++i)
      list[i] = kEntries[i].kernel;
    return list;
  }();
  return kernels;
}

double piecewise_value(char piecewise_in, const KernelShape& shape) {
  return piecewise_in == 'k' ? shape.k : shape.n;
}

} // namespace gcsim::cost
