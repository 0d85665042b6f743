// sketched_sgd: Sketched-SGD (Ivkin et al., NeurIPS 2019), star topology.
#include "compressors/count_sketch.hpp"
#include "compressors/detail/base.hpp"
#include "compressors/detail/momentum.hpp"
#include "compressors/detail/sparse.hpp"
#include "compressors/rng.hpp"

#include <algorithm>

namespace gcsim::compress::detail {
namespace {

constexpr std::uint64_t kPurposeSketchedSgd = 0x534B5347;

// Workers keep momentum u and error accumulation v locally (v is the
// error-feedback memory: v += u with u = rho*u + g) and send a sketch of v to
// the parameter server; the server sums the sketches, takes the
// candidates_factor*k coordinates with the largest estimates, asks every worker
// for its exact values there (second round), keeps the top-k of the exact sums
// and sends the k-sparse update down. Workers clear u and v where it was applied.
class SketchedSgd final : public CompressorBase {
public:
  SketchedSgd(std::string name, nlohmann::json params)
      : CompressorBase(std::move(name), std::move(params)), density_(number("density")),
        rows_(static_cast<std::uint32_t>(integer("rows"))),
        columns_(static_cast<std::uint32_t>(integer("columns"))), momentum_(number("momentum")),
        second_round_(flag("second_round")), factor_(number("candidates_factor")),
        server_(static_cast<int>(integer("server_rank"))) {}

  std::size_t worker_state_floats(std::size_t d) const override {
    return momentum_.active() ? d : 0;
  }
  std::size_t scratch_floats(std::size_t d) const override {
    return static_cast<std::size_t>(rows_) * sketch_columns(columns_, d, density_);
  }
  void spill_worker_state(const std::string& dir) override {
    if (momentum_.active())
      momentum_.spill_to(dir);
  }

private:
  void absorb_gradient(IterationWork& work, int worker, const float* gradient) override {
    if (momentum_.active()) {
      momentum_.accumulate(work, worker, gradient, "momentum and error accumulation");
    }
  }

  void check_workers(int P) const override {
    if (server_ >= P)
      throw ParameterError("sketched_sgd: parameter 'server_rank' is " + std::to_string(server_) +
                               ", not a worker's rank: P = " + std::to_string(P) + " (ranks 0 to " +
                               std::to_string(P - 1) + ")",
                           "server_rank");
  }

  void iterate(IterationWork& work) override {
    const auto P = static_cast<std::size_t>(work.P);
    const std::size_t k = k_for_density(work.d, density_);
    const std::uint32_t cols = sketch_columns(columns_, work.d, density_);
    const std::uint64_t seed = derive_seed(work.ctx.seed, 0, 0, kPurposeSketchedSgd);
    // The server's summed sketch equals the sketch of the summed accumulators
    // (linearity), computed once instead of P times (equal up to the order of
    // float additions); each worker is still charged its own insert.
    std::vector<float> sum(work.d, 0.0f);
    const std::uint64_t sketch_bytes = static_cast<std::uint64_t>(rows_) * cols * 4;
    std::vector<Transfer> push;
    for (std::size_t w = 0; w < P; ++w) {
      const float* v = work.acc[w];
      for (std::size_t j = 0; j < work.d; ++j) {
        sum[j] += v[j];
      }
      work.add_kernel(static_cast<int>(w), KernelKind::sketch_insert, work.d, 0, rows_, cols,
                      "sketch the accumulated gradient");
      if (static_cast<int>(w) != server_) {
        push.push_back(Transfer{static_cast<int>(w), server_, sketch_bytes});
      }
    }
    CountSketch global(rows_, cols, seed);
    global.insert(sum.data(), work.d);
    work.add_transfers(CommKind::ps_push, "push sketches to the server", push, server_);
    work.add_kernel(server_, KernelKind::dense_add, sketch_bytes / 4 * (P - 1), 0, 0, 0,
                    "sum the sketches");
    work.add_kernel(server_, KernelKind::sketch_query, work.d, 0, rows_, cols,
                    "query all coordinates");
    std::vector<Index> chosen;
    std::vector<float> sums;
    if (second_round_) {
      const std::size_t c =
          std::min(work.d, std::max(k, static_cast<std::size_t>(factor_ * static_cast<double>(k))));
      const std::vector<Index> candidates = global.heavy_hitters(work.d, c);
      work.add_kernel(server_, KernelKind::topk_select, work.d, c, 0, 0, "candidates");
      work.add_transfers(CommKind::ps_pull, "server sends candidate indices", to_workers(P, c * 4),
                         server_);
      work.add_kernel_all(KernelKind::gather, c, 0, 0, 0, "exact values at the candidates");
      work.add_transfers(CommKind::ps_push, "push exact values at the candidates",
                         from_workers(P, c * 4), server_);
      std::vector<float> exact(c, 0.0f);
      for (float* v : work.acc) {
        for (std::size_t i = 0; i < c; ++i) {
          exact[i] += v[candidates[i]];
        }
      }
      // Every worker's values come in the candidates' order: the server adds
      // P - 1 dense vectors of c onto its own, no scatter by index.
      work.add_kernel(server_, KernelKind::dense_add, (P - 1) * c, 0, 0, 0, "sum exact values");
      std::vector<Index> keep;
      topk_indices(exact.data(), c, k, keep);
      work.add_kernel(server_, KernelKind::topk_select, c, k, 0, 0, "top-k of the exact sums");
      for (const Index p : keep) {
        chosen.push_back(candidates[p]);
      }
      work.add_transfers(CommKind::ps_pull, "server sends the k-sparse update",
                         to_workers(P, k * 8), server_);
      work.add_kernel_all(KernelKind::sparse_unpack, k, 0, 0, 0, "apply the update");
      apply_common_indices(work, chosen);
    } else {
      chosen = global.heavy_hitters(work.d, k);
      work.add_kernel(server_, KernelKind::topk_select, work.d, k, 0, 0, "top-k of the estimates");
      for (const Index j : chosen) {
        sums.push_back(global.estimate(j));
      }
      work.add_transfers(CommKind::ps_pull, "server sends the estimated k-sparse update",
                         to_workers(P, k * 8), server_);
      work.add_kernel_all(KernelKind::sparse_unpack, k, 0, 0, 0, "apply the update");
      apply_estimated(work, chosen, sums);
    }
    if (momentum_.active()) {
      for (int w = 0; w < work.P; ++w) {
        momentum_.clear_at(w, chosen);
      }
    }
    work.result.info["k"] = k;
    work.result.info["server_rank"] = server_;
    work.result.info["sketch_columns"] = cols;
    // As DGC's: the fidelity against the plain average measures it too
    // (cleared everywhere, at density 1, it is the plain gradient).
    if (momentum_.active() && chosen.size() < work.d)
      work.result.info["momentum_in_update"] = true;
  }

  std::vector<Transfer> to_workers(std::size_t P, std::uint64_t bytes) const {
    std::vector<Transfer> t;
    for (std::size_t w = 0; w < P; ++w) {
      if (static_cast<int>(w) != server_) {
        t.push_back(Transfer{server_, static_cast<int>(w), bytes});
      }
    }
    return t;
  }
  std::vector<Transfer> from_workers(std::size_t P, std::uint64_t bytes) const {
    std::vector<Transfer> t;
    for (std::size_t w = 0; w < P; ++w) {
      if (static_cast<int>(w) != server_) {
        t.push_back(Transfer{static_cast<int>(w), server_, bytes});
      }
    }
    return t;
  }

  double density_;
  std::uint32_t rows_;
  std::uint32_t columns_;
  LocalMomentum momentum_;
  bool second_round_;
  double factor_;
  int server_;
};

} // namespace

CompressorInfo sketched_sgd_info() {
  return {"sketched_sgd",
          "workers push count sketches of their momentum + error accumulation to a parameter "
          "server, which queries candidates_factor*k heavy coordinates, pulls exact values "
          "there (second round), keeps the top-k and sends the k-sparse update down",
          "Ivkin et al., NeurIPS 2019 (Sketched-SGD)",
          {density_param(0.001), ParamSpec::integer("rows", 5, 1, 64, "sketch rows"),
           ParamSpec::integer("columns", 0, 0, 1LL << 31, "sketch columns; 0 = 10*k (our default)"),
           ParamSpec::number("momentum", 0.9, 0.0, 1.0, "worker momentum rho (0: none)"),
           ParamSpec::boolean("second_round", true,
                              "pull exact values at the candidates before the final top-k"),
           ParamSpec::number("candidates_factor", 4.0, 1.0, 1000.0,
                             "the server queries candidates_factor*k coordinates (p2 in the "
                             "paper; 4 is our default)"),
           ParamSpec::integer("server_rank", 0, 0, 1 << 20,
                              "rank hosting the parameter server (its own push is local)"),
           error_feedback_param()}};
}

std::unique_ptr<Compressor> make_sketched_sgd(const nlohmann::json& resolved) {
  return std::make_unique<SketchedSgd>("sketched_sgd", resolved);
}

} // namespace gcsim::compress::detail
