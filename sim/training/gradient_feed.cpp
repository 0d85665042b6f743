#include "sim/training/gradient_feed.hpp"

#include "compressors/rng.hpp"
#include "sim/trace/gradient_source.hpp"
#include "sim/training/workload.hpp"

#include <array>
#include <cassert>
#include <cmath>
#include <cstring>
#include <utility>

namespace gcsim::training {
namespace {

class TraceFeed final : public GradientFeed {
public:
  TraceFeed(trace::Trace opened, int workers, uint64_t seed, const std::string& synthesis)
      : source_(std::move(opened), workers, seed, synthesis) {
    std::vector<compress::Layer> layers;
    for (const auto& layer : source_.trace().manifest().layers)
      layers.push_back({layer.name,
                        static_cast<size_t>(layer.offset),
                        static_cast<size_t>(layer.params),
                        {std::vector<size_t>(layer.shape.begin(), layer.shape.end())}});
    layout_ = compress::LayerLayout(std::move(layers));
  }
  const compress::LayerLayout& layout() const override { return layout_; }
  void gradient(int iteration, int worker, std::vector<float>& out) override {
    source_.gradient(static_cast<size_t>(iteration) % source_.iteration_count(), worker, out);
  }
  bool weights(int iteration, std::vector<float>& out) override {
    source_.weights(static_cast<size_t>(iteration) % source_.iteration_count(), out);
    return true;
  }
  nlohmann::json describe() const override {
    nlohmann::json description = source_.describe();
    description["kind"] = "trace";
    return description;
  }

private:
  trace::GradientSource source_;
  compress::LayerLayout layout_;
};

// Standard normal quantiles at the midpoints (i + 0.5) / 2^16: a 16-bit
// uniform looked up here is a normal draw (cut at 4.3 sd, far past where a
// top-1% selection reaches), four to a 64-bit hash, where Box-Muller would
// cost a logarithm, a root and a sine each: it is the hot loop.
const std::vector<float>& normal_quantiles() {
  static const std::vector<float> table = [] {
    constexpr int kSize = 1 << 16;
    std::vector<float> quantiles(kSize);
    const double root_two = std::sqrt(2.0);
    const double density_scale = 1 / std::sqrt(2 * 3.141592653589793);
    // Newton from the previous quantile outwards: the distribution function
    // is concave there, so each step stays below the root and approaches it.
    double x = 0;
    for (int i = kSize / 2; i < kSize; ++i) {
      const double p = (i + 0.5) / kSize;
      for (int step = 0; step < 6; ++step)
        x -= (0.5 * std::erfc(-x / root_two) - p) / (density_scale * std::exp(-0.5 * x * x));
      quantiles[static_cast<size_t>(i)] = static_cast<float>(x);
      quantiles[static_cast<size_t>(kSize - 1 - i)] = static_cast<float>(-x);
    }
    return quantiles;
  }();
  return table;
}

class SyntheticFeed final : public GradientFeed {
public:
  SyntheticFeed(const Workload& workload, int workers, uint64_t seed, SyntheticGradients how)
      : workers_(workers), seed_(seed), how_(std::move(how)),
        fitted_(how_.method == "capture_fitted") {
    assert((fitted_ || how_.method == "shared_heavy_signal") &&
           "a method the scenario reader accepts");
    // The element scales' 256 log-normal levels (quantiles, as the normal
    // draws'), normalized to a mean square of 1 so that a layer's expected
    // squared norm is 1 whatever the spread.
    const std::vector<float>& normal = normal_quantiles();
    double mean_square = 0;
    for (size_t level = 0; level < scales_.size(); ++level) {
      // Level l is the normal quantile at (l + 0.5) / 256, the middle of
      // the table's l-th 256th.
      const double z = (static_cast<double>(normal[level * 256 + 127]) +
                        static_cast<double>(normal[level * 256 + 128])) /
                       2;
      scales_[level] = static_cast<float>(std::exp(how_.spread * z));
      mean_square += static_cast<double>(scales_[level]) * static_cast<double>(scales_[level]);
    }
    const double rms = std::sqrt(mean_square / static_cast<double>(scales_.size()));
    for (float& scale : scales_)
      scale = static_cast<float>(static_cast<double>(scale) / rms);
    std::vector<compress::Layer> layers;
    size_t offset = 0;
    double weight_factor = 0; // the element scale of the last weight, 0 before one
    for (const Layer& layer : workload.layers) {
      if (layer.parameters == 0)
        continue;
      const auto size = static_cast<size_t>(layer.parameters);
      modules_.push_back({offset, size});
      // The compressors see a layer per tensor where the spec names them,
      // as the reference code and a trace's manifest do (DEFT packs them,
      // IWP and DGC select in each); a module without them is one block.
      if (layer.tensors.empty()) {
        layers.push_back({layer.name, offset, size, std::nullopt});
        blocks_.push_back({offset, size, unit_norm(size)});
        weight_factor = blocks_.back().factor;
        offset += size;
        continue;
      }
      for (size_t t = 0; t < layer.tensors.size(); ++t) {
        const Tensor& tensor = layer.tensors[t];
        std::vector<size_t> shape(tensor.shape.begin(), tensor.shape.end());
        const size_t elements = compress::tensor_size(shape);
        // capture_fitted's scale: on the ResNet-18 capture every weight
        // (two dimensions or more) has a norm of 0.5-6.3 whatever its size
        // (1,728 to 2.4M elements), and a vector (a bias, a norm layer's
        // weight) elements about half the size of the weight's before it
        // (median 0.47-0.53 of its element rms at iterations 0, 10 and 20).
        // A norm of 1 for each vector, as for each spec layer before, made a
        // 128-element batch norm's elements 35 times a neighbouring
        // convolution's, and a whole-model top-k took nearly all of them.
        const double factor = shape.size() >= 2 || weight_factor == 0
                                  ? unit_norm(elements)
                                  : kVectorShare * weight_factor;
        if (shape.size() >= 2)
          weight_factor = factor;
        blocks_.push_back({offset, elements, factor});
        layers.push_back(
            {layer.name + "." + tensor_label(tensor, t), offset, elements, {std::move(shape)}});
        offset += elements;
      }
    }
    layout_ = compress::LayerLayout(std::move(layers));
  }
  const compress::LayerLayout& layout() const override { return layout_; }

  // Deterministic from (seed, iteration, worker): a signal every worker
  // sees (made once per iteration) plus the worker's own noise. The noise
  // uses a counter-based hash: it is the hot loop.
  void gradient(int iteration, int worker, std::vector<float>& out) override {
    if (iteration != signal_iteration_)
      make_signal(iteration);
    out.resize(layout_.total());
    const uint64_t stream = seed_ * 0xBF58476D1CE4E5B9ULL +
                            static_cast<uint64_t>(iteration) * 1000003ULL +
                            static_cast<uint64_t>(worker) + 1;
    if (fitted_) {
      scaled_normals(stream, std::sqrt(1 - how_.signal_share), signal_.data(), out);
      return;
    }
    for (const Module& layer : modules_) {
      const float scale = 0.5f / std::sqrt(static_cast<float>(layer.size));
      // One hash serves an aligned pair of elements (it is the hot loop):
      // element j takes the upper 32 bits if j is even, the lower if odd.
      uint64_t bits = 0;
      for (size_t i = 0; i < layer.size; ++i) {
        const size_t j = layer.offset + i;
        if ((j & 1) == 0 || i == 0)
          bits = compress::mix_bits(stream ^ ((j >> 1) * 0x9E3779B97F4A7C15ULL));
        const auto half = static_cast<uint32_t>((j & 1) == 0 ? bits >> 32 : bits);
        // Difference of two 16-bit uniforms: triangular noise in (-1, 1).
        float noise =
            (static_cast<float>(half >> 16) - static_cast<float>(half & 0xFFFF)) * 0x1.0p-16f;
        out[j] = signal_[j] + scale * noise;
      }
    }
  }
  // Weights for compressors that weigh gradients by them (IWP): fixed
  // across iterations, uniform with a per-layer scale like common inits.
  bool weights(int, std::vector<float>& out) override {
    out.resize(layout_.total());
    for (const Module& layer : modules_) {
      const float scale = std::sqrt(3.0f / static_cast<float>(layer.size));
      for (size_t i = 0; i < layer.size; ++i) {
        uint64_t bits = compress::mix_bits(seed_ ^ 0xD1B54A32D192ED03ULL ^
                                           ((layer.offset + i) * 0x9E3779B97F4A7C15ULL));
        out[layer.offset + i] = scale * (static_cast<float>(bits >> 40) * 0x1.0p-23f - 1.0f);
      }
    }
    return true;
  }
  nlohmann::json describe() const override {
    nlohmann::json description = {
        {"kind", "synthetic"}, {"synthesis", how_.method}, {"workers", workers_}, {"seed", seed_}};
    if (!fitted_) {
      description["method"] =
          "shared cubed-Laplace signal + per-worker triangular noise, per-layer scaled; "
          "uniform weights scaled by sqrt(3 / layer size)";
      description["note"] = "not real gradients: their density and fidelity are the "
                            "synthesizer's, for timing studies only; use a trace for a model's";
      return description;
    }
    description["method"] =
        "per element a log-normal scale shared by every worker, times a shared normal signal "
        "plus each worker's own normal noise; each weight's expected squared norm 1 and a "
        "vector's elements half its weight's; uniform weights scaled by sqrt(3 / layer size)";
    description["signal_share"] = how_.signal_share;
    description["spread"] = how_.spread;
    description["note"] = "not real gradients: by default fitted to a ResNet-18 capture's top-1% "
                          "overlap between workers and top-1% energy share, so its density and "
                          "fidelity are a guide, not a model's; use a trace for those";
    return description;
  }

private:
  // capture_fitted: out[j] = base[j] + c f r[j] z[j] (base null: 0), z[j]
  // a normal draw from the hash of (stream, j), r[j] the element's shared
  // scale from the hash of (seed, j), f its tensor's factor (Block). Four
  // draws to a hash, eight scales to another.
  void scaled_normals(uint64_t stream, double c, const float* base, std::vector<float>& out) const {
    const std::vector<float>& normal = normal_quantiles();
    // Hashed first: a stream of 0 (seed 0, iteration 0) XORed with block 0
    // hashed to 0, four draws of the table's first quantile.
    const uint64_t draw_key = compress::mix64(stream);
    const uint64_t scale_key = compress::mix64(seed_ ^ 0x94D049BB133111EBULL);
    for (const Block& block : blocks_) {
      const auto factor = static_cast<float>(c * block.factor);
      uint64_t draws = 0;
      uint64_t levels = 0;
      for (size_t i = 0; i < block.size; ++i) {
        const size_t j = block.offset + i;
        if ((j & 3) == 0 || i == 0)
          draws = compress::mix_bits(draw_key ^ ((j >> 2) * 0x9E3779B97F4A7C15ULL));
        if ((j & 7) == 0 || i == 0)
          levels = compress::mix_bits(scale_key ^ ((j >> 3) * 0xD6E8FEB86659FD93ULL));
        const float z = normal[(draws >> (16 * (j & 3))) & 0xFFFF];
        const float r = scales_[(levels >> (8 * (j & 7))) & 0xFF];
        out[j] = (base != nullptr ? base[j] : 0.0f) + factor * r * z;
      }
    }
  }

  // Cubed Laplace: most entries tiny, a few large, as in real gradients.
  // mt19937_64's stream is fixed by the standard; the exponential is ours.
  // Two draws an element: the magnitude's, then the sign's (odd: positive),
  // set by flipping the sign bit, not by a branch on a random bit.
  void make_signal(int iteration) {
    if (fitted_) {
      signal_.resize(layout_.total());
      // Its own stream: the workers' noise streams are 1 and more.
      scaled_normals(seed_ * 0xBF58476D1CE4E5B9ULL + static_cast<uint64_t>(iteration) * 1000003ULL,
                     std::sqrt(how_.signal_share), nullptr, signal_);
      signal_iteration_ = iteration;
      return;
    }
    signal_.assign(layout_.total(), 0.0f);
    compress::Mt19937_64 shared(seed_ * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(iteration));
    for (const Module& layer : modules_) {
      const float scale = 1.0f / std::sqrt(static_cast<float>(layer.size));
      for (size_t i = 0; i < layer.size; ++i) {
        float value = compress::exponential_float(shared());
        const auto negative = static_cast<uint32_t>(~shared() & 1) << 31;
        uint32_t bits = 0;
        std::memcpy(&bits, &value, sizeof bits);
        bits ^= negative;
        std::memcpy(&value, &bits, sizeof value);
        signal_[layer.offset + i] = scale * value * value * value;
      }
    }
    signal_iteration_ = iteration;
  }

  // The spec's layers holding parameters, in the flat vector: the
  // synthesis scales by them, so that a layer's gradients do not depend on
  // whether the spec names its tensors.
  struct Module {
    size_t offset;
    size_t size;
  };
  std::vector<Module> modules_;
  // capture_fitted's scale: a weight's (or a spec layer's without tensors)
  // expected squared norm is 1, a vector's elements kVectorShare of the
  // last weight's.
  struct Block {
    size_t offset;
    size_t size;
    double factor;
  };
  static constexpr double kVectorShare = 0.5;
  static double unit_norm(size_t elements) { return 1 / std::sqrt(static_cast<double>(elements)); }
  std::vector<Block> blocks_;
  compress::LayerLayout layout_;
  int workers_;
  uint64_t seed_;
  SyntheticGradients how_;
  bool fitted_;                     // capture_fitted, else shared_heavy_signal
  std::array<float, 256> scales_{}; // capture_fitted's element scale levels
  int signal_iteration_ = -1;
  std::vector<float> signal_;
};

} // namespace

std::unique_ptr<GradientFeed> make_trace_feed(const std::filesystem::path& trace_folder,
                                              int workers, uint64_t seed,
                                              const std::string& synthesis) {
  return std::make_unique<TraceFeed>(trace::Trace::open(trace_folder), workers, seed, synthesis);
}

const std::vector<std::string>& SyntheticGradients::methods() {
  static const std::vector<std::string> names{"capture_fitted", "shared_heavy_signal"};
  return names;
}

std::unique_ptr<GradientFeed> make_synthetic_feed(const Workload& workload, int workers,
                                                  uint64_t seed, const SyntheticGradients& how) {
  return std::make_unique<SyntheticFeed>(workload, workers, seed, how);
}

} // namespace gcsim::training
