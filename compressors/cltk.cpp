// cltk: cyclic local top-k (ScaleCom): only the leader t mod P selects.
#include "compressors/detail/base.hpp"
#include "compressors/detail/sparse.hpp"

namespace gcsim::compress::detail {
namespace {

class Cltk final : public CompressorBase {
public:
  Cltk(std::string name, nlohmann::json params)
      : CompressorBase(std::move(name), std::move(params)), density_(number("density")) {}

  // Selects within each layer range it is given, independently of the rest.
  bool can_run_per_bucket() const override { return true; }

private:
  void iterate(IterationWork& work) override {
    const std::size_t k = k_for_density(work.d, density_);
    const int leader = static_cast<int>(work.ctx.iteration % static_cast<std::uint64_t>(work.P));
    std::vector<Index> chosen;
    topk_indices(work.acc[static_cast<std::size_t>(leader)], work.d, k, chosen);
    work.add_kernel(leader, KernelKind::topk_select, work.d, k, 0, 0, "leader top-k");
    work.add_collective(CommKind::broadcast, "leader broadcasts k indices", k * 4, leader);
    work.add_kernel_all(KernelKind::gather, k, 0, 0, 0, "own values at the leader's indices");
    work.add_collective(CommKind::allreduce, "allreduce k values", k * 4);
    work.add_kernel_all(KernelKind::sparse_unpack, k, 0, 0, 0, "apply the update");
    apply_common_indices(work, chosen);
    work.result.info["k"] = k;
    work.result.info["leader"] = leader;
  }

  double density_;
};

} // namespace

CompressorInfo cltk_info() {
  return {"cltk",
          "cyclic local top-k: the leader (t mod P) selects k indices, broadcasts them, and "
          "every worker's values there are allreduced",
          "ScaleCom (Chen et al., NeurIPS 2020); kljp/deft CLTKReducer",
          {density_param(0.001), error_feedback_param()}};
}

std::unique_ptr<Compressor> make_cltk(const nlohmann::json& resolved) {
  return std::make_unique<Cltk>("cltk", resolved);
}

} // namespace gcsim::compress::detail
