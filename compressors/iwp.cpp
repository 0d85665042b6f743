// iwp: importance-weighted pruning on ring allreduce (Cheng & Xu, arXiv 1901.01544).
#include "compressors/counts.hpp"
#include "compressors/detail/base.hpp"
#include "compressors/detail/sparse.hpp"
#include "compressors/rng.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

namespace gcsim::compress::detail {
namespace {

constexpr std::uint64_t kPurposeIwpLeader = 0x4957504C;
constexpr std::uint64_t kPurposeIwpSample = 0x49575053;
constexpr std::uint64_t kPurposeIwpRelease = 0x49575052;

// Our reading of the paper (Cheng & Xu, arXiv 1901.01544; the full text's exact rules were not
// available, so each choice is a parameter):
//  * importance I_j = |acc_j| / (|w_j| + epsilon);
//  * per layer l, base b_l = mean_l + variance_weight * var_l / mean_l of I over
//    the layer: a layer whose importance is dispersed (few strong outliers) is
//    pruned harder relative to its mean;
//  * global level lambda: estimated every iteration from a random sample of the
//    scores I_j / b_l so that the target share passes, times a correction c
//    steered by the kept fraction: c *= (kept / target)^adaptation_rate;
//  * stale release: elements unsent for release_age iterations are each
//    released with probability release_probability, at most release_cap*k of
//    them (at least one; a uniform subset when more are drawn), inside the
//    budget k;
//  * the leader is drawn from (seed, t); it broadcasts its kept indices; every
//    worker's values there are ring-allreduced (k floats, no build-up);
//  * warm-up iterations are dense (ring allreduce of d); with clip_norm > 0 each
//    worker clips what it sends to that L2 norm and drops the rest, as DGC's
//    local clipping does: kept as residual, the clipped-off part grew by about
//    |g| - clip_norm an iteration and all went out at the first sparse one.
class Iwp final : public CompressorBase {
public:
  Iwp(std::string name, nlohmann::json params)
      : CompressorBase(std::move(name), std::move(params)), density_(number("density")),
        warmup_(static_cast<std::uint64_t>(integer("warmup_iterations"))),
        epsilon_(number("epsilon")), variance_weight_(number("variance_weight")),
        rate_(number("adaptation_rate")), sample_rate_(number("sample_rate")),
        min_samples_(static_cast<std::size_t>(integer("min_samples"))),
        release_p_(number("release_probability")),
        release_age_(static_cast<std::uint32_t>(integer("release_age"))),
        release_cap_(number("release_cap")), clip_norm_(number("clip_norm")) {}

  std::string_view dense_warmup_parameter() const override { return "warmup_iterations"; }
  bool needs_weights() const override { return true; }

private:
  void iterate(IterationWork& work) override {
    if (work.weights == nullptr) {
      throw std::invalid_argument("iwp: needs the weights (importance is |g| / |w|)");
    }
    if (sent_at_.size() != work.d) {
      sent_at_.assign(work.d, rounds_);
    }
    if (work.ctx.iteration < warmup_) {
      dense_warmup(work);
      return;
    }
    const auto P = static_cast<std::uint64_t>(work.P);
    const int leader =
        static_cast<int>(derive_seed(work.ctx.seed, work.ctx.iteration, 0, kPurposeIwpLeader) % P);
    const float* acc = work.acc[static_cast<std::size_t>(leader)];
    const float* wts = work.weights->data;
    const std::size_t d = work.d;
    const std::size_t k = k_for_density(d, density_);

    // Scores: importance over its layer's base. The base is homogeneous in
    // the importances, so the layer's statistics are taken of I / max I, in
    // [0, 1]: a layer of vanishing gradients (1e-44, below float's normal
    // range) or a tiny epsilon over zero weights (I near 1e38) made 1 / base
    // or I * I overflow, and infinite or NaN scores passed every level.
    std::vector<float> score(d);
    std::size_t important = 0; // elements of positive importance: at most these can be kept
    const auto importance = [&](std::size_t i) {
      return std::fabs(static_cast<double>(acc[i])) /
             (std::fabs(static_cast<double>(wts[i])) + epsilon_);
    };
    for (std::size_t l = 0; l < work.layout->size(); ++l) {
      const Layer& layer = (*work.layout)[l];
      double top = 0.0;
      for (std::size_t i = layer.offset; i < layer.offset + layer.size; ++i) {
        const double imp = importance(i);
        important += imp > 0.0 ? 1 : 0;
        top = std::max(top, imp);
      }
      if (top == 0.0)
        continue; // nothing important in this layer: its scores stay 0
      double sum = 0.0;
      double sum2 = 0.0;
      for (std::size_t i = layer.offset; i < layer.offset + layer.size; ++i) {
        const double relative = importance(i) / top;
        score[i] = static_cast<float>(relative); // in [0, 1]: float holds it
        sum += relative;
        sum2 += relative * relative;
      }
      const double n = static_cast<double>(layer.size);
      const double mean = sum / n; // at least 1 / n: the largest is 1
      const double var = std::max(0.0, sum2 / n - mean * mean);
      const double inverse_base = 1.0 / (mean + variance_weight_ * var / mean);
      for (std::size_t i = layer.offset; i < layer.offset + layer.size; ++i) {
        score[i] = static_cast<float>(static_cast<double>(score[i]) * inverse_base);
      }
    }
    work.add_kernel(leader, KernelKind::dense_scale, d, 0, 0, 0, "importance |g|/|w|");
    work.add_kernel(leader, KernelKind::l2_norm, d, 0, 0, 0, "layer mean and variance");

    // Stale releases: each stale element with probability p, drawn by
    // geometric skips over the whole model; past the cap, a uniform subset
    // of the drawn ones. Stopping the scan at the cap released only from the
    // first layers whenever many elements were stale.
    std::vector<Index> released;
    // At least one where k allows: a floor of 0.1 k released nothing below k = 10.
    const std::size_t cap =
        release_cap_ > 0.0 && k > 0
            ? std::max<std::size_t>(1,
                                    static_cast<std::size_t>(release_cap_ * static_cast<double>(k)))
            : 0;
    if (release_p_ > 0.0 && cap > 0) {
      Xoshiro256 rng(derive_seed(work.ctx.seed, work.ctx.iteration, 0, kPurposeIwpRelease));
      const double log_q = std::log1p(-release_p_);
      for (double pos = -1.0;;) {
        const double u = std::max(rng.uniform(), 1e-300);
        pos += 1.0 + std::floor(std::log(u) / log_q);
        if (pos >= static_cast<double>(d)) {
          break;
        }
        const auto j = static_cast<std::size_t>(pos);
        if (age(j) >= release_age_) {
          released.push_back(static_cast<Index>(j));
        }
      }
      if (released.size() > cap) {
        for (std::size_t i = 0; i < cap; ++i) { // partial Fisher-Yates
          std::swap(released[i], released[i + rng.below(released.size() - i)]);
        }
        released.resize(cap);
        std::sort(released.begin(), released.end());
      }
    }
    const std::size_t budget = k > released.size() ? k - released.size() : 0;

    // Global level from a sample of the scores, corrected by the kept fraction.
    const std::size_t samples = std::min(
        d, std::max(min_samples_, static_cast<std::size_t>(sample_rate_ * static_cast<double>(d))));
    std::vector<Index> chosen;
    float lambda = std::numeric_limits<float>::infinity();
    if (k >= d) {
      // Density 1: a sampled level keeps only what scores above the sample's
      // smallest, so the whole model is sent (the releases with it) and the
      // level left alone.
      chosen.resize(d);
      std::iota(chosen.begin(), chosen.end(), Index{0});
    } else if (budget > 0) {
      Xoshiro256 rng(derive_seed(work.ctx.seed, work.ctx.iteration, 0, kPurposeIwpSample));
      std::vector<float> sample(samples);
      for (auto& s : sample) {
        s = score[rng.below(d)];
      }
      const auto rank =
          std::clamp<std::size_t>(ceil_count(static_cast<double>(budget) / static_cast<double>(d) *
                                             static_cast<double>(samples)),
                                  1, samples);
      std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(rank - 1),
                       sample.end(), std::greater<>());
      lambda = sample[rank - 1] * static_cast<float>(correction_);
      // A zero level would keep every zero-importance element.
      lambda = std::max(lambda, std::numeric_limits<float>::min());
      for (std::size_t j = 0; j < d; ++j) {
        if (score[j] >= lambda) {
          chosen.push_back(static_cast<Index>(j));
        }
      }
      work.add_kernel(leader, KernelKind::sample_threshold, d, samples, 0, 0, "global level");
      work.add_kernel(leader, KernelKind::threshold_select, d, chosen.size(), 0, 0,
                      "layer-wise thresholds");
      // Steer towards what the level can reach: below the budget only the
      // elements of positive importance can pass it, and with none (a zero
      // accumulator) there is nothing to steer by. Steering towards the
      // unreachable budget shrank the correction by up to 30x an iteration,
      // and the next iteration kept up to a hundred times k.
      const std::size_t reachable = std::min(budget, important);
      if (reachable > 0) {
        const double ratio =
            std::max(static_cast<double>(chosen.size()), 0.5) / static_cast<double>(reachable);
        correction_ = std::clamp(correction_ * std::pow(ratio, rate_), 1e-6, 1e6);
      }
    }
    const std::size_t by_importance = chosen.size();
    chosen.insert(chosen.end(), released.begin(), released.end());
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());

    const std::uint64_t kept = chosen.size();
    work.add_collective(CommKind::broadcast, "leader broadcasts its important indices", kept * 4,
                        leader);
    work.add_kernel_all(KernelKind::gather, kept, 0, 0, 0, "own values at the indices");
    work.add_collective(CommKind::allreduce_ring, "ring allreduce of the values", kept * 4);
    work.add_kernel_all(KernelKind::sparse_unpack, kept, 0, 0, 0, "apply the update");
    apply_common_indices(work, chosen);
    // Sent now: unsent for 0 rounds at the next one.
    rounds_ = rounds_ == std::numeric_limits<std::uint32_t>::max() ? rounds_ : rounds_ + 1;
    for (const Index j : chosen) {
      sent_at_[j] = rounds_;
    }
    work.result.info["leader"] = leader;
    work.result.info["k"] = k;
    work.result.info["kept"] = kept;
    work.result.info["kept_by_importance"] = by_importance;
    work.result.info["released"] = released.size();
    // No level where the stale releases took the whole budget, or at
    // density 1, where the whole model is sent.
    work.result.info["level"] =
        budget > 0 && k < d ? nlohmann::json(lambda) : nlohmann::json(nullptr);
    work.result.info["correction"] = correction_;
  }

  void dense_warmup(IterationWork& work) {
    const std::size_t d = work.d;
    std::vector<float>& u = work.result.update;
    for (int w = 0; w < work.P; ++w) {
      float* acc = work.acc[static_cast<std::size_t>(w)];
      float scale = 1.0f;
      if (clip_norm_ > 0.0) {
        double s = 0.0;
        for (std::size_t j = 0; j < d; ++j) {
          s += static_cast<double>(acc[j]) * static_cast<double>(acc[j]);
        }
        const double norm = std::sqrt(s);
        scale = norm > clip_norm_ ? static_cast<float>(clip_norm_ / norm) : 1.0f;
        work.add_kernel(w, KernelKind::l2_norm, d, 0, 0, 0, "clip: norm");
        work.add_kernel(w, KernelKind::dense_scale, d, 0, 0, 0, "clip: scale");
      }
      for (std::size_t j = 0; j < d; ++j) {
        const float sent = acc[j] * scale;
        u[j] += sent;
        acc[j] = 0.0f; // sent, or clipped off
      }
    }
    work.add_collective(CommKind::allreduce_ring, "warm-up: dense ring allreduce", d * 4);
    work.add_kernel_all(KernelKind::dense_scale, d, 0, 0, 0, "average");
    const float inv_p = 1.0f / static_cast<float>(work.P);
    for (float& v : u) {
      v *= inv_p;
    }
    work.result.support.resize(d);
    for (std::size_t j = 0; j < d; ++j) {
      work.result.support[j] = static_cast<Index>(j);
    }
    fresh_from_ = rounds_; // everything was sent
    work.result.info["warmup"] = true;
  }

  double density_;
  std::uint64_t warmup_;
  double epsilon_;
  double variance_weight_;
  double rate_;
  double sample_rate_;
  std::size_t min_samples_;
  double release_p_;
  std::uint32_t release_age_;
  double release_cap_;
  double clip_norm_;
  // Rounds element j has gone unsent: the sparse rounds since it was last
  // sent, or since the last dense one. Kept as the round of its last sending,
  // not as an age per element, so that a round touches only the elements it
  // sends and those its releases draw: ages cost d increments a round (about
  // 130 us on a V100 at d = 11M) that the cost model does not charge.
  std::uint32_t age(std::size_t j) const { return rounds_ - std::max(sent_at_[j], fresh_from_); }

  double correction_ = 1.0;
  std::uint32_t rounds_ = 0;     // sparse rounds run (saturates: 4 billion)
  std::uint32_t fresh_from_ = 0; // the round after the last dense warm-up
  std::vector<std::uint32_t> sent_at_;
};

} // namespace

CompressorInfo iwp_info() {
  return {"iwp",
          "importance |g|/|w| with layer-wise thresholds from the layers' mean and "
          "variance-to-mean, a global level that tracks the target density, stale releases; "
          "a random leader broadcasts its indices and the values are ring-allreduced",
          "Cheng & Xu, arXiv 1901.01544 (our reading, see compressors/README.md)",
          {density_param(0.001),
           ParamSpec::integer(
               "warmup_iterations", 5, 0, 1LL << 40,
               "first iterations sent dense (our default); `gcsim run` refuses a warm-up "
               "as long as `training.iterations` (every iteration dense), and its "
               "summary averages the iterations after "
               "`training.warmup_iterations`, so set that as long to leave the "
               "dense ones out (the summary notes how many are in its means "
               "otherwise)"),
           ParamSpec::number("epsilon", 1e-8, 1e-30, 1.0,
                             "guards |w| = 0 in |g| / (|w| + eps); at least 1e-30, so that the "
                             "importance of any float gradient is a finite double"),
           ParamSpec::number("variance_weight", 1.0, 0.0, 1e6,
                             "weight of the layer's variance-to-mean in its threshold"),
           ParamSpec::number("adaptation_rate", 0.5, 0.0, 10.0,
                             "exponent of the kept/target correction of the global level"),
           ParamSpec::number("sample_rate", 0.01, 0.0, 1.0,
                             "share of the scores sampled to estimate the global level", true),
           ParamSpec::integer("min_samples", 4096, 1, 1LL << 40, "at least this many samples"),
           ParamSpec::number("release_probability", 0.001, 0.0, 1.0,
                             "per-iteration chance that a stale element is released"),
           ParamSpec::integer("release_age", 100, 1, 1LL << 31,
                              "iterations unsent after which an element is stale"),
           ParamSpec::number(
               "release_cap", 0.1, 0.0, 1.0,
               "at most this share of k (at least one element unless 0) is spent on stale "
               "releases, a uniform subset of those drawn"),
           ParamSpec::number("clip_norm", 0.0, 0.0, 1e30,
                             "warm-up local clipping to this L2 norm (0: off; the paper gives "
                             "no value)"),
           error_feedback_param()}};
}

std::unique_ptr<Compressor> make_iwp(const nlohmann::json& resolved) {
  return std::make_unique<Iwp>("iwp", resolved);
}

} // namespace gcsim::compress::detail
