// topk: local exact top-k per worker; two wire formats from the literature.
#include "compressors/detail/base.hpp"
#include "compressors/detail/sparse.hpp"

namespace gcsim::compress::detail {
namespace {

class TopK final : public CompressorBase {
public:
  TopK(std::string name, nlohmann::json params)
      : CompressorBase(std::move(name), std::move(params)), density_(number("density")),
        pairs_(text("variant") == "allgather_pairs") {}

  // Selects within each layer range it is given, independently of the rest.
  bool can_run_per_bucket() const override { return true; }

private:
  void iterate(IterationWork& work) override {
    const std::size_t k = k_for_density(work.d, density_);
    const std::uint64_t P = static_cast<std::uint64_t>(work.P);
    std::vector<std::vector<Index>> sets(static_cast<std::size_t>(work.P));
    for (int w = 0; w < work.P; ++w) {
      topk_indices(work.acc[static_cast<std::size_t>(w)], work.d, k,
                   sets[static_cast<std::size_t>(w)]);
      work.add_kernel(w, KernelKind::topk_select, work.d, k, 0, 0, "local top-k");
    }
    if (pairs_) {
      // TopkA (Ok-Topk) / gTop-k's baseline: everyone gets everyone's pairs.
      work.add_kernel_all(KernelKind::sparse_pack, k, 0, 0, 0, "pack (index, value) pairs");
      work.add_collective(CommKind::allgather, "allgather (index, value) pairs", k * 8);
      work.add_kernel_all(KernelKind::scatter_add, P * k, 0, 0, 0, "sum the P sparse sets");
      apply_own_sets(work, sets);
    } else {
      // kljp/deft TopKReducer: union of indices, then allreduce own values there.
      work.add_collective(CommKind::allgather, "allgather indices", k * 4);
      const std::vector<Index> all = sorted_union(sets);
      // The reference's torch.unique sorts the P*k indices; no sort kernel is
      // calibrated, so this prices one linear pass over them (short by the
      // sort's extra passes; compressors/README.md says so).
      work.add_kernel_all(KernelKind::sparse_unpack, P * k, 0, 0, 0, "union of the index sets");
      work.add_kernel_all(KernelKind::gather, all.size(), 0, 0, 0, "own values at the union");
      work.add_collective(CommKind::allreduce, "allreduce values at the union", all.size() * 4);
      work.add_kernel_all(KernelKind::sparse_unpack, all.size(), 0, 0, 0, "apply the update");
      apply_common_indices(work, all);
    }
    work.result.info["k"] = k;
    work.result.info["union_size"] = work.result.support.size();
  }

  double density_;
  bool pairs_;
};

} // namespace

CompressorInfo topk_info() {
  return {"topk",
          "local exact top-k of |g| per worker; the union of the P sets is applied "
          "(gradient build-up: up to P*k elements)",
          "Aji & Heafield 2017; TopkA in Ok-Topk (Li & Hoefler 2022); kljp/deft TopKReducer",
          {density_param(0.001),
           ParamSpec::choice("variant", "allgather_pairs",
                             {"allgather_pairs", "allgather_indices_allreduce_values"},
                             "allgather of k (index, value) pairs per worker, or allgather of k "
                             "indices then allreduce of every worker's values over the union"),
           error_feedback_param()}};
}

std::unique_ptr<Compressor> make_topk(const nlohmann::json& resolved) {
  return std::make_unique<TopK>("topk", resolved);
}

} // namespace gcsim::compress::detail
