// gs_sgd: global count sketch with a decentralized allreduce (Dai et al., 2021).
#include "compressors/count_sketch.hpp"
#include "compressors/detail/base.hpp"
#include "compressors/detail/sparse.hpp"
#include "compressors/rng.hpp"

#include <algorithm>

namespace gcsim::compress::detail {
namespace {

constexpr std::uint64_t kPurposeGsSketch = 0x47535347;

class GsSgd final : public CompressorBase {
public:
  GsSgd(std::string name, nlohmann::json params)
      : CompressorBase(std::move(name), std::move(params)), density_(number("density")),
        rows_(static_cast<std::uint32_t>(integer("rows"))),
        columns_(static_cast<std::uint32_t>(integer("columns"))),
        second_round_(flag("second_round")), kind_(allreduce_kind(text("allreduce"))) {}

  std::size_t scratch_floats(std::size_t d) const override {
    return static_cast<std::size_t>(rows_) * sketch_columns(columns_, d, density_);
  }

private:
  // The parameter's choices (ParamSpec below): recursive_doubling, ring, tree.
  static CommKind allreduce_kind(const std::string& algorithm) {
    if (algorithm == "ring")
      return CommKind::allreduce_ring;
    if (algorithm == "tree")
      return CommKind::allreduce_tree;
    return CommKind::allreduce_recursive_doubling;
  }

  void iterate(IterationWork& work) override {
    const std::size_t k = k_for_density(work.d, density_);
    const std::uint32_t cols = sketch_columns(columns_, work.d, density_);
    // Hash and sign functions are shared by all workers and fixed for the run.
    const std::uint64_t seed = derive_seed(work.ctx.seed, 0, 0, kPurposeGsSketch);
    // Sketches are linear: the allreduced sketch equals the sketch of the summed
    // gradients, which costs one insert instead of P (equal up to the order of
    // float additions). Each worker is still charged its own insert.
    std::vector<float> sum(work.acc[0], work.acc[0] + work.d);
    for (std::size_t w = 1; w < work.acc.size(); ++w) {
      const float* a = work.acc[w];
      for (std::size_t j = 0; j < work.d; ++j) {
        sum[j] += a[j];
      }
    }
    CountSketch global(rows_, cols, seed);
    global.insert(sum.data(), work.d);
    work.add_kernel_all(KernelKind::sketch_insert, work.d, 0, rows_, cols, "sketch the gradient");
    work.add_collective(kind_, "allreduce the sketches",
                        static_cast<std::uint64_t>(rows_) * cols * 4);
    // Every worker queries the same global sketch, so all pick the same k.
    const std::vector<Index> chosen = global.heavy_hitters(work.d, k);
    work.add_kernel_all(KernelKind::sketch_query, work.d, 0, rows_, cols, "query all coordinates");
    work.add_kernel_all(KernelKind::topk_select, work.d, k, 0, 0, "top-k of the estimates");
    if (second_round_) {
      work.add_kernel_all(KernelKind::gather, k, 0, 0, 0, "own values at the heavy hitters");
      work.add_collective(kind_, "allreduce exact values at the k heavy hitters", k * 4);
      work.add_kernel_all(KernelKind::sparse_unpack, k, 0, 0, 0, "apply the update");
      apply_common_indices(work, chosen);
    } else {
      std::vector<float> sums(chosen.size());
      for (std::size_t i = 0; i < chosen.size(); ++i) {
        sums[i] = global.estimate(chosen[i]);
      }
      work.add_kernel_all(KernelKind::sparse_unpack, k, 0, 0, 0, "apply the estimated update");
      apply_estimated(work, chosen, sums);
    }
    work.result.info["k"] = k;
    work.result.info["sketch_rows"] = rows_;
    work.result.info["sketch_columns"] = cols;
  }

  double density_;
  std::uint32_t rows_;
  std::uint32_t columns_;
  bool second_round_;
  CommKind kind_;
};

} // namespace

CompressorInfo gs_sgd_info() {
  return {
      "gs_sgd",
      "every worker count-sketches its error-compensated gradient; the sketches are "
      "allreduced (recursive doubling: log2 P steps); every worker queries the global "
      "sketch and keeps the top-k estimates; optional second round allreduces the exact "
      "values there",
      "Dai et al., arXiv 2108.06004 (gs-SGD)",
      {density_param(0.001),
       ParamSpec::integer("rows", 5, 1, 64, "sketch rows (hash functions); O(log d) in the paper"),
       ParamSpec::integer("columns", 0, 0, 1LL << 31,
                          "sketch columns; 0 = 10*k (our default, not the paper's)"),
       ParamSpec::boolean("second_round", true,
                          "allreduce the exact values at the k selected coordinates"),
       ParamSpec::choice("allreduce", "recursive_doubling", {"recursive_doubling", "ring", "tree"},
                         "algorithm of both allreduces; `tree` is NCCL's double binary tree"),
       error_feedback_param()}};
}

std::unique_ptr<Compressor> make_gs_sgd(const nlohmann::json& resolved) {
  return std::make_unique<GsSgd>("gs_sgd", resolved);
}

} // namespace gcsim::compress::detail
