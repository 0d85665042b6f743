// randomk: k uniformly random coordinates, the same on every worker.
#include "compressors/detail/base.hpp"
#include "compressors/detail/sparse.hpp"
#include "compressors/rng.hpp"

#include <algorithm>

namespace gcsim::compress::detail {
namespace {

constexpr std::uint64_t kPurposeRandomK = 0x52414E444B;

// Floyd's algorithm: k distinct values of [0, d), uniformly, in O(k) draws.
std::vector<Index> sample_distinct(std::size_t d, std::size_t k, std::uint64_t seed) {
  Xoshiro256 rng(seed);
  std::vector<bool> taken(d, false);
  std::vector<Index> out;
  out.reserve(k);
  for (std::size_t j = d - k; j < d; ++j) {
    auto t = static_cast<std::size_t>(rng.below(j + 1));
    if (taken[t]) {
      t = j;
    }
    taken[t] = true;
    out.push_back(static_cast<Index>(t));
  }
  std::sort(out.begin(), out.end());
  return out;
}

class RandomK final : public CompressorBase {
public:
  RandomK(std::string name, nlohmann::json params)
      : CompressorBase(std::move(name), std::move(params)), density_(number("density")) {}

  // Selects within each layer range it is given, independently of the rest.
  bool can_run_per_bucket() const override { return true; }

private:
  void iterate(IterationWork& work) override {
    const std::size_t k = k_for_density(work.d, density_);
    // Shared seed: every worker draws the same indices, so no index is sent.
    const std::vector<Index> chosen = sample_distinct(
        work.d, k, derive_seed(work.ctx.seed, work.ctx.iteration, 0, kPurposeRandomK));
    work.add_kernel_all(KernelKind::gather, k, 0, 0, 0, "own values at the random indices");
    work.add_collective(CommKind::allreduce, "allreduce k values", k * 4);
    work.add_kernel_all(KernelKind::sparse_unpack, k, 0, 0, 0, "apply the update");
    apply_common_indices(work, chosen);
    work.result.info["k"] = k;
  }

  double density_;
};

} // namespace

CompressorInfo randomk_info() {
  return {"randomk",
          "k random coordinates drawn from the scenario seed and the iteration (same on every "
          "worker); allreduce of k values; no rescaling",
          "Stich et al., NeurIPS 2018 (random-k with memory)",
          {density_param(0.001), error_feedback_param()}};
}

std::unique_ptr<Compressor> make_randomk(const nlohmann::json& resolved) {
  return std::make_unique<RandomK>("randomk", resolved);
}

} // namespace gcsim::compress::detail
