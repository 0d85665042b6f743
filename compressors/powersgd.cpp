// powersgd: each gradient matrix sent as two rank-r factors, as PyTorch DDP's
// powerSGD_hook does (Vogels, Karimireddy, Jaggi, NeurIPS 2019): one step of
// power iteration per iteration, warm-started from the last one's factor.
#include "compressors/detail/base.hpp"
#include "compressors/rng.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace gcsim::compress::detail {
namespace {

constexpr std::uint64_t kPurposePowerSgd = 0x504F57455253; // "POWERS"

// A tensor as the hook views it, tensor.view(shape[0], -1): `rows` x `cols`
// row-major at `offset`, approximated at rank `rank` (0: sent whole).
struct Matrix {
  std::size_t offset = 0;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t rank = 0;
};

// The hook orthogonalizes a factor by Gram-Schmidt up to rank 2 and by QR
// above; Gram-Schmidt run twice gives QR's orthonormal columns where the
// factor is numerically rank-deficient (once, a column of rounding noise is
// normalized but not orthogonal to the others, and P P^T M misses M).
std::size_t gram_schmidt_runs(std::size_t rank) {
  return rank <= 2 ? 1 : 2;
}

// Elements a factor's orthogonalization passes over, per row: r (r + 1) / 2
// passes a run (a norm and the projections of each column).
std::size_t gram_schmidt_passes(std::size_t rank) {
  return gram_schmidt_runs(rank) * rank * (rank + 1) / 2;
}

// Orthonormalizes the `rank` columns of the row-major rows x rank `x`, as
// the hook's _orthogonalize. A column that is all zeros stays so: the hook
// would divide by its zero norm (NaN) without an orthogonalization_epsilon.
void orthogonalize(std::vector<float>& x, std::size_t rows, std::size_t rank) {
  for (std::size_t run = 0; run < gram_schmidt_runs(rank); ++run)
    for (std::size_t c = 0; c < rank; ++c) {
      double norm = 0;
      for (std::size_t i = 0; i < rows; ++i)
        norm += static_cast<double>(x[i * rank + c]) * static_cast<double>(x[i * rank + c]);
      norm = std::sqrt(norm);
      if (norm > 0)
        for (std::size_t i = 0; i < rows; ++i)
          x[i * rank + c] = static_cast<float>(static_cast<double>(x[i * rank + c]) / norm);
      for (std::size_t later = c + 1; later < rank; ++later) {
        double dot = 0;
        for (std::size_t i = 0; i < rows; ++i)
          dot += static_cast<double>(x[i * rank + c]) * static_cast<double>(x[i * rank + later]);
        for (std::size_t i = 0; i < rows; ++i)
          x[i * rank + later] -= static_cast<float>(dot * static_cast<double>(x[i * rank + c]));
      }
    }
}

// Standard normal draws, the hook's torch.randn.
void fill_normal(std::vector<float>& x, std::uint64_t seed) {
  Xoshiro256 rng(seed);
  for (std::size_t i = 0; i < x.size(); i += 2) {
    const auto [first, second] = rng.normal_pair();
    x[i] = static_cast<float>(first);
    if (i + 1 < x.size())
      x[i + 1] = static_cast<float>(second);
  }
}

class PowerSgd final : public CompressorBase {
public:
  PowerSgd(std::string name, nlohmann::json params)
      : CompressorBase(std::move(name), std::move(params)),
        rank_(static_cast<std::size_t>(integer("rank"))),
        start_iteration_(static_cast<std::uint64_t>(integer("start_iteration"))),
        min_compression_rate_(number("min_compression_rate")), warm_start_(flag("warm_start")) {}

  // The hook runs on each bucket as the backward pass fills it.
  bool can_run_per_bucket() const override { return true; }
  void check_layout(const LayerLayout& layout) const override { view_matrices(layout); }
  std::string_view dense_warmup_parameter() const override { return "start_iteration"; }

private:
  bool compensates(std::uint64_t iteration) const override {
    return error_feedback() && iteration >= start_iteration_;
  }

  void iterate(IterationWork& work) override {
    // The workers' mean: what the allreduces of the factors and of the
    // uncompressed tensors compute (the products are linear in M, so the
    // sum of the workers' M_w Q is the mean's times P).
    std::vector<float>& update = work.result.update;
    for (const float* acc : work.acc)
      for (std::size_t j = 0; j < work.d; ++j)
        update[j] += acc[j];
    const float inv_p = 1.0f / static_cast<float>(work.P);
    for (float& v : update)
      v *= inv_p;
    work.result.support.resize(work.d);
    std::iota(work.result.support.begin(), work.result.support.end(), Index{0});

    if (work.ctx.iteration < start_iteration_) {
      // The hook's vanilla allreduce before start_powerSGD_iter (no error
      // added: compensates()).
      work.add_kernel_all(KernelKind::dense_scale, work.d, 0, 0, 0, "average");
      work.add_collective(CommKind::allreduce, "allreduce gradient (before start_iteration)",
                          work.d * 4);
      for (float* acc : work.acc)
        std::fill(acc, acc + work.d, 0.0f);
      work.result.info["compressed_layers"] = 0;
      work.result.info["uncompressed_elements"] = static_cast<std::uint64_t>(work.d);
      work.result.info["warmup"] = true;
      return;
    }

    const std::vector<Matrix> matrices = view_matrices(*work.layout);
    std::vector<const Matrix*> low_rank;
    std::size_t compressed = 0, q_floats = 0, p_floats = 0;
    for (const Matrix& m : matrices) {
      if (m.rank == 0)
        continue;
      low_rank.push_back(&m);
      compressed += m.rows * m.cols;
      p_floats += m.rows * m.rank;
      q_floats += m.cols * m.rank;
    }
    const std::size_t uncompressed = work.d - compressed;
    const bool keep = error_feedback();
    const bool warm = warm_start_ && !q_.empty();

    // The hook's kernels, each tensor's on its own as the hook runs them (a
    // product a tensor, an orthogonalization a factor): a copy for the
    // error, the products as low_rank_product at the tensor's rank,
    // Gram-Schmidt as passes over the factor.
    const auto each_matrix = [&work, &low_rank](KernelKind kind, std::size_t (*size)(const Matrix&),
                                                const char* label) {
      for (const Matrix* m : low_rank)
        work.add_kernel_all(kind, size(*m), kind == KernelKind::low_rank_product ? m->rank : 0, 0,
                            0, label);
    };
    const auto elements = [](const Matrix& m) { return m.rows * m.cols; };
    const auto q_passes = [](const Matrix& m) { return m.cols * gram_schmidt_passes(m.rank); };
    const auto p_passes = [](const Matrix& m) { return m.rows * gram_schmidt_passes(m.rank); };
    if (keep)
      work.add_kernel_all(KernelKind::dense_scale, work.d, 0, 0, 0, "keep a copy for the error");
    each_matrix(KernelKind::l2_norm, q_passes,
                warm ? "orthogonalize Q" : "orthogonalize a random Q");
    each_matrix(KernelKind::low_rank_product, elements, "P = M Q");
    if (uncompressed > 0) {
      work.add_collective(CommKind::allreduce, "allreduce uncompressed tensors", uncompressed * 4);
      work.add_kernel_all(KernelKind::dense_scale, uncompressed, 0, 0, 0,
                          "average the uncompressed tensors");
    }
    if (!low_rank.empty()) {
      work.add_collective(CommKind::allreduce, "allreduce P factors", p_floats * 4);
      each_matrix(KernelKind::l2_norm, p_passes, "orthogonalize P");
      each_matrix(KernelKind::low_rank_product, elements, "Q = M^T P");
      work.add_collective(CommKind::allreduce, "allreduce Q factors", q_floats * 4);
      work.add_kernel_all(KernelKind::dense_scale, q_floats, 0, 0, 0, "average Q");
      each_matrix(KernelKind::low_rank_product, elements, "decompress M = P Q^T");
    }
    if (keep)
      work.add_kernel_all(KernelKind::dense_add, work.d, 0, 0, 0, "error = copy - decompressed");

    if (!warm)
      q_.assign(matrices.size(), {});
    for (std::size_t l = 0; l < matrices.size(); ++l)
      if (matrices[l].rank > 0)
        approximate(matrices[l], l, work, update.data());

    // The hook's error, the worker's compensated gradient less what every
    // worker applies; without error feedback nothing is kept.
    for (float* acc : work.acc)
      for (std::size_t j = 0; j < work.d; ++j)
        acc[j] = keep ? acc[j] - update[j] : 0.0f;
    work.result.info["compressed_layers"] = static_cast<std::uint64_t>(low_rank.size());
    work.result.info["uncompressed_elements"] = static_cast<std::uint64_t>(uncompressed);
  }

  // Each tensor as rows x cols, and the rank it is sent at: min(rows, cols,
  // rank), or 0 where the factors would not be min_compression_rate times
  // smaller (the hook's _should_compress: vectors, small tensors; a vector of
  // n is n x 1, compressed only at a rate under n / (n + 1), as the hook
  // does). A scalar is 1 x 1 (the hook's view fails on a 0-dim tensor).
  std::vector<Matrix> view_matrices(const LayerLayout& layout) const {
    std::vector<Matrix> matrices;
    for (const Layer& layer : layout.layers()) {
      if (!layer.shape && layer.size > 1)
        throw std::invalid_argument(
            "powersgd: layer " + layer.name +
            " has no tensor shape, and powersgd views each tensor as shape[0] rows: give the "
            "layer spec's layers their \"tensors\" (scripts/generate_workloads.py writes them) "
            "or run on a gradient trace");
      // A layer of one element without a shape: a scalar.
      Matrix m;
      m.offset = layer.offset;
      m.rows = layer.shape && !layer.shape->empty() ? layer.shape->front() : 1;
      m.cols = layer.size / m.rows;
      const std::size_t rank = std::min({m.rows, m.cols, rank_});
      const double factors = static_cast<double>((m.rows + m.cols) * rank);
      if (factors * min_compression_rate_ < static_cast<double>(m.rows * m.cols))
        m.rank = rank;
      matrices.push_back(m);
    }
    return matrices;
  }

  // Matrix `l`'s rank-r approximation of the mean `mean` (in place): Q from
  // the last iteration (warm start) or random, P = M Q orthogonalized, Q =
  // M^T P, M = P Q^T; Q is kept for the next iteration.
  void approximate(const Matrix& m, std::size_t l, const IterationWork& work, float* mean) {
    const std::size_t r = m.rank;
    float* x = mean + m.offset;
    std::vector<float>& q = q_[l];
    if (q.empty()) {
      q.resize(m.cols * r);
      fill_normal(q, derive_seed(work.ctx.seed, work.ctx.iteration, l, kPurposePowerSgd));
    }
    orthogonalize(q, m.cols, r);
    std::vector<float> p(m.rows * r);
    std::vector<double> sum(std::max(m.rows, m.cols) * r);
    for (std::size_t i = 0; i < m.rows; ++i) {
      std::fill(sum.begin(), sum.begin() + static_cast<std::ptrdiff_t>(r), 0.0);
      for (std::size_t j = 0; j < m.cols; ++j)
        for (std::size_t c = 0; c < r; ++c)
          sum[c] += static_cast<double>(x[i * m.cols + j]) * static_cast<double>(q[j * r + c]);
      for (std::size_t c = 0; c < r; ++c)
        p[i * r + c] = static_cast<float>(sum[c]);
    }
    orthogonalize(p, m.rows, r);
    std::fill(sum.begin(), sum.end(), 0.0);
    for (std::size_t i = 0; i < m.rows; ++i)
      for (std::size_t j = 0; j < m.cols; ++j)
        for (std::size_t c = 0; c < r; ++c)
          sum[j * r + c] +=
              static_cast<double>(x[i * m.cols + j]) * static_cast<double>(p[i * r + c]);
    for (std::size_t k = 0; k < m.cols * r; ++k)
      q[k] = static_cast<float>(sum[k]);
    for (std::size_t i = 0; i < m.rows; ++i)
      for (std::size_t j = 0; j < m.cols; ++j) {
        double value = 0;
        for (std::size_t c = 0; c < r; ++c)
          value += static_cast<double>(p[i * r + c]) * static_cast<double>(q[j * r + c]);
        x[i * m.cols + j] = static_cast<float>(value);
      }
  }

  std::size_t rank_;
  std::uint64_t start_iteration_;
  double min_compression_rate_;
  bool warm_start_;
  std::vector<std::vector<float>> q_; // per layer: the last Q (warm start); empty: none yet
};

} // namespace

CompressorInfo powersgd_info() {
  return {
      "powersgd",
      "each gradient matrix (a tensor as shape[0] rows) sent as two rank-r factors: P = M Q "
      "allreduced and orthogonalized, Q = M^T P allreduced, M = P Q^T (one power-iteration step, "
      "warm-started from the last Q); vectors and tensors the factors would not shrink "
      "min_compression_rate times are allreduced whole; needs tensor shapes (a gradient trace's, "
      "or a layer spec's \"tensors\")",
      "Vogels, Karimireddy, Jaggi, NeurIPS 2019; PyTorch DDP's powerSGD_hook",
      {ParamSpec::integer("rank", 1, 1, 1024,
                          "r, the factors' columns (DDP's matrix_approximation_rank); a matrix "
                          "of fewer rows or columns is sent at that rank"),
       ParamSpec::integer("start_iteration", 0, 0, 1000000000,
                          "iterations of plain allreduce before compressing (DDP's "
                          "start_powerSGD_iter, 1000 there); `gcsim run` refuses as many as "
                          "`training.iterations`, and its summary notes how many are in its "
                          "means (`training.warmup_iterations` leaves them out)"),
       ParamSpec::number("min_compression_rate", 2.0, 0.0, 1e9,
                         "a tensor of rows x cols is compressed only if (rows + cols) r times "
                         "this is under rows x cols"),
       ParamSpec::boolean("warm_start", true,
                          "start each iteration's power step from the last Q, not a random one"),
       error_feedback_param()}};
}

std::unique_ptr<Compressor> make_powersgd(const nlohmann::json& resolved) {
  return std::make_unique<PowerSgd>("powersgd", resolved);
}

} // namespace gcsim::compress::detail
