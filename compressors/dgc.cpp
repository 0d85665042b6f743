// dgc: Deep Gradient Compression (Lin et al., ICLR 2018).
#include "compressors/counts.hpp"
#include "compressors/detail/base.hpp"
#include "compressors/detail/momentum.hpp"
#include "compressors/detail/sparse.hpp"
#include "compressors/rng.hpp"
#include "compressors/threshold_estimator.hpp"

#include <algorithm>

namespace gcsim::compress::detail {
namespace {

constexpr std::uint64_t kPurposeDgcSample = 0x444743;

// Per worker: momentum correction keeps a local momentum u and accumulates
// u into the residual v (the error-feedback memory): u = m*u + g; v += u. The
// selection runs on v; selected coordinates are cleared in both u and v
// (momentum factor masking). With momentum 0 this is plain error feedback.
// The layers sent whole keep their momentum: the reference applies momentum
// to their averaged gradient and never masks it, and the average of the
// workers' unmasked u is exactly that.
//
// Selection per tensor (layer), as the reference code does: the threshold is
// the top-(ceil(density * samples)) magnitude of a random sample of
// max(ceil(sample_rate * n), ceil(2 / density)) elements (the whole layer
// when it has no more than that); while the count is above upper_bound * k it
// is either re-selected exactly (resample) or the threshold raised by
// upper_bound; while below lower_bound * k it is lowered by lower_bound (at most
// max_adaptation_iters times); finally the first k selected (in index order) are
// kept, as `indices[:num_selects]` does. Tensors of at most one dimension
// (biases, norm scales) are not compressed, as the reference's training
// script registers only `param.dim() > 1` with the compressor, unless
// compress_vectors; nor are layers below min_layer_size. They are allreduced
// whole, beside the allgather of the others' pairs.
class Dgc final : public CompressorBase {
public:
  Dgc(std::string name, nlohmann::json params)
      : CompressorBase(std::move(name), std::move(params)), density_(number("density")),
        sample_rate_(number("sample_rate")), momentum_(number("momentum")),
        momentum_correction_(flag("momentum_correction")), upper_(number("upper_bound")),
        lower_(number("lower_bound")), max_adapt_(integer("max_adaptation_iters")),
        resample_(flag("resample")), compress_vectors_(flag("compress_vectors")),
        min_layer_(static_cast<std::size_t>(integer("min_layer_size"))) {}

  // Selects within each layer range it is given, independently of the rest.
  bool can_run_per_bucket() const override { return true; }

  std::size_t worker_state_floats(std::size_t d) const override {
    return momentum_correction_ && momentum_.active() ? d : 0;
  }
  void spill_worker_state(const std::string& dir) override {
    if (momentum_correction_ && momentum_.active())
      momentum_.spill_to(dir);
  }

private:
  void absorb_gradient(IterationWork& work, int worker, const float* gradient) override {
    if (momentum_correction_ && momentum_.active()) {
      momentum_.accumulate(work, worker, gradient, "momentum correction");
    }
  }

  void iterate(IterationWork& work) override {
    const auto P = static_cast<std::size_t>(work.P);
    const bool use_momentum = momentum_correction_ && momentum_.active();
    // Every index a worker contributes (ascending): its pairs and the layers sent whole.
    std::vector<std::vector<Index>> sets(P);
    std::vector<Index> masked; // one worker's selected pairs, where its momentum is cleared
    std::vector<std::uint64_t> counts(P, 0); // pairs
    std::uint64_t dense_floats = 0;
    for (std::size_t l = 0; l < work.layout->size(); ++l) {
      if (sent_whole((*work.layout)[l])) {
        dense_floats += (*work.layout)[l].size;
      }
    }
    std::vector<Index> layer_sel;
    for (std::size_t w = 0; w < P; ++w) {
      float* v = work.acc[w];
      masked.clear();
      for (std::size_t l = 0; l < work.layout->size(); ++l) {
        const Layer& layer = (*work.layout)[l];
        if (sent_whole(layer)) {
          for (std::size_t i = 0; i < layer.size; ++i) {
            sets[w].push_back(static_cast<Index>(layer.offset + i));
          }
          continue;
        }
        select_layer(work, static_cast<int>(w), l, v + layer.offset, layer.size, layer_sel);
        for (const Index i : layer_sel) {
          sets[w].push_back(static_cast<Index>(layer.offset + i));
          if (use_momentum)
            masked.push_back(static_cast<Index>(layer.offset + i));
        }
        counts[w] += layer_sel.size();
      }
      if (use_momentum) {
        momentum_.clear_at(static_cast<int>(w), masked);
      }
      work.add_kernel(static_cast<int>(w), KernelKind::sparse_pack, counts[w], 0, 0, 0,
                      "pack pairs");
    }
    std::vector<std::uint64_t> bytes(P);
    std::uint64_t total = 0;
    for (std::size_t w = 0; w < P; ++w) {
      bytes[w] = counts[w] * 8;
      total += counts[w];
    }
    if (total > 0) {
      work.add_step(CommKind::allgatherv, "allgather selected (index, value) pairs",
                    work.all_ranks(), bytes);
      work.add_kernel_all(KernelKind::scatter_add, total, 0, 0, 0, "sum the P sparse sets");
    }
    if (dense_floats > 0) {
      // Vectors and small layers (or, at density 1, every layer): the
      // step's name says which.
      const bool all_whole = density_ >= 1.0;
      work.add_kernel_all(KernelKind::gather, dense_floats, 0, 0, 0,
                          all_whole ? "pack the layers" : "pack the uncompressed layers");
      work.add_collective(CommKind::allreduce,
                          all_whole ? "allreduce every layer (density 1)"
                                    : "allreduce the uncompressed layers",
                          dense_floats * 4);
      work.result.info["dense_elements"] = dense_floats;
    }
    apply_own_sets(work, sets);
    work.result.info["selected"] = counts;
    // Dense SGD's plain average has no momentum: a fidelity against it
    // measures the momentum too (the summary says so).
    if (use_momentum)
      work.result.info["momentum_in_update"] = true;
  }

  // At density 1 the reference compresses nothing (compress_ratio < 1.0 is
  // its condition to sparsify): a sampled threshold would drop the elements
  // below the sample's smallest, and the 0.8 k lower bound lets that stand.
  // A layer without a shape (a layer spec's module without "tensors") is
  // compressed: its dimensions are unknown.
  bool sent_whole(const Layer& layer) const {
    const bool vector = layer.shape && layer.shape->size() <= 1;
    return (vector && !compress_vectors_) || layer.size < min_layer_ || density_ >= 1.0;
  }

  void select_layer(IterationWork& work, int w, std::size_t l, const float* v, std::size_t n,
                    std::vector<Index>& sel) const {
    const std::size_t k = ceil_count(static_cast<double>(n) * density_);
    // At least ceil(2 / density) samples, as the reference takes: the top-1
    // of a handful of samples is no threshold, and adapting it by factors of
    // 1.3 and 0.8 does not recover one.
    const std::size_t least = ceil_count(2.0 / density_);
    const std::size_t samples =
        n <= least ? n : std::max(least, ceil_count(static_cast<double>(n) * sample_rate_));
    const ThresholdEstimate est =
        estimate_threshold(v, n, density_, samples,
                           derive_seed(work.ctx.seed, work.ctx.iteration,
                                       static_cast<std::uint64_t>(w), kPurposeDgcSample + l));
    work.add_kernel(w, KernelKind::sample_threshold, n, est.samples, 0, 0, "sample threshold");
    // Adapt on counts (cheap, vectorized passes); materialize the selection once.
    float threshold = est.threshold;
    std::size_t count = count_at_or_above(v, n, threshold);
    work.add_kernel(w, KernelKind::threshold_select, n, count, 0, 0, "threshold select");
    bool exact = false;
    if (n > samples) {
      for (long long it = 0; it < max_adapt_; ++it) {
        const auto c = static_cast<double>(count);
        const auto target = static_cast<double>(k);
        if (c > target) {
          if (c <= target * upper_) {
            break;
          }
          if (resample_) {
            exact = true;
            break;
          }
          threshold *= static_cast<float>(upper_);
        } else if (c < lower_ * target) {
          threshold *= static_cast<float>(lower_);
        } else {
          break;
        }
        count = count_at_or_above(v, n, threshold);
        work.add_kernel(w, KernelKind::threshold_select, n, count, 0, 0,
                        "threshold select (adapted)");
      }
    }
    select_at_or_above(v, n, threshold, sel);
    if (exact) {
      std::vector<float> vals(sel.size());
      for (std::size_t i = 0; i < sel.size(); ++i) {
        vals[i] = v[sel[i]];
      }
      std::vector<Index> keep;
      topk_indices(vals.data(), vals.size(), k, keep);
      work.add_kernel(w, KernelKind::topk_select, sel.size(), k, 0, 0, "resample top-k");
      for (auto& i : keep) {
        i = sel[i];
      }
      sel = std::move(keep);
    }
    if (sel.size() > k) {
      sel.resize(k);
    }
  }

  double density_;
  double sample_rate_;
  LocalMomentum momentum_;
  bool momentum_correction_;
  double upper_;
  double lower_;
  long long max_adapt_;
  bool resample_;
  bool compress_vectors_;
  std::size_t min_layer_;
};

} // namespace

CompressorInfo dgc_info() {
  return {
      "dgc",
      "per-layer threshold from a random sample's top-k, adapted towards k; momentum "
      "correction and factor masking; allgatherv of the selected pairs; vectors (and layers "
      "below min_layer_size) allreduced whole",
      "Lin et al., ICLR 2018; synxlin/deep-gradient-compression (DGCCompressor._sparsify)",
      {density_param(0.001, "target share of each layer's n elements selected, k = "
                            "ceil(density*n) per layer"),
       ParamSpec::number("sample_rate", 0.01, 0.0, 1.0,
                         "share of each layer sampled to estimate the threshold", true),
       ParamSpec::number("momentum", 0.9, 0.0, 1.0,
                         "momentum of the correction (u = m*u + g; the optimizer then "
                         "applies no momentum of its own)"),
       ParamSpec::boolean("momentum_correction", true,
                          "accumulate momentum locally and mask it where sent"),
       ParamSpec::number("upper_bound", 1.3, 1.0, 100.0,
                         "adapt when more than upper_bound*k are selected"),
       ParamSpec::number("lower_bound", 0.8, 0.0, 1.0,
                         "lower the threshold by this factor when fewer than lower_bound*k"),
       ParamSpec::integer("max_adaptation_iters", 10, 0, 100,
                          "threshold adaptations per layer and iteration"),
       ParamSpec::boolean("resample", true,
                          "above upper_bound*k, select the exact top-k of the selected "
                          "instead of raising the threshold"),
       ParamSpec::boolean("compress_vectors", false,
                          "compress tensors of at most one dimension (biases, norm scales) too; "
                          "the reference's training script allreduces them whole (it compresses "
                          "param.dim() > 1), and so does gcsim by default where the layer's shape "
                          "is known"),
       ParamSpec::integer("min_layer_size", 0, 0, 1LL << 40,
                          "layers smaller than this are not compressed but allreduced whole (0: "
                          "no size limit)"),
       error_feedback_param()}};
}

std::unique_ptr<Compressor> make_dgc(const nlohmann::json& resolved) {
  return std::make_unique<Dgc>("dgc", resolved);
}

} // namespace gcsim::compress::detail
