#include "sim/trace/gradient_source.hpp"

#include "compressors/rng.hpp"
#include "sim/input/paths.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gcsim::trace {
namespace {

using compress::mix64;

// A uniform in (0, 1) from the top 53 bits; never 0, so log() is finite.
double unit_open(uint64_t bits) {
  return (static_cast<double>(bits >> 11) + 0.5) * 0x1p-53;
}

} // namespace

namespace detail {

// mean_scaling: the per-element variance v[j] of the residual, estimated
// from W workers, is noisy, and every synthesized worker shares that noise:
// the elements whose estimate came out high gather all their top-k sets (on
// a 16-worker ResNet-18 capture the top-1% overlap came out 18-90% high).
// So v is shrunk toward a separable model of a weight gradient's variance:
// the gradient of weight [o, i, ...] sums products of an output-side and an
// input-side term, so its variance is about row(o) * column(i) / overall,
// with row, column and overall the means of v over the other indices:
//   v'[j] = lambda v[j] + (1 - lambda) row(o) column(i) / overall,
// lambda = 1 - (sampling variance of v) / (spread of v around the model),
// both summed over the layer, the sampling variance of v[j] being
// (mu4[j] - v[j]^2) / W (empirical Bayes, method of moments). The layer's
// sum of v, hence its expected squared norm, is unchanged. Tensors of one
// dimension (biases, norms) are left alone. `second` and `fourth` hold sums
// over the W workers of r^2 and r^4; `second` is rewritten.
void shrink_variance(const TraceLayer& layer, double workers, std::vector<double>& second,
                     const std::vector<double>& fourth) {
  if (layer.shape.size() < 2 || layer.params < 2)
    return;
  const auto rows = static_cast<size_t>(layer.shape[0]);
  const auto columns = static_cast<size_t>(layer.shape[1]);
  const auto params = static_cast<size_t>(layer.params);
  if (rows < 1 || columns < 1 || params % (rows * columns) != 0)
    return;
  const size_t inner = params / (rows * columns);
  const auto first = static_cast<size_t>(layer.offset);
  auto at = [&](size_t r, size_t c, size_t k) { return first + (r * columns + c) * inner + k; };
  std::vector<double> row(rows, 0.0), column(columns, 0.0);
  double overall = 0;
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < columns; ++c)
      for (size_t k = 0; k < inner; ++k) {
        double v = second[at(r, c, k)] / workers;
        row[r] += v;
        column[c] += v;
        overall += v;
      }
  if (overall <= 0)
    return;
  overall /= static_cast<double>(params);
  for (double& v : row)
    v /= static_cast<double>(columns * inner);
  for (double& v : column)
    v /= static_cast<double>(rows * inner);
  double noise = 0, spread = 0;
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < columns; ++c)
      for (size_t k = 0; k < inner; ++k) {
        double v = second[at(r, c, k)] / workers;
        double mu4 = fourth[at(r, c, k)] / workers;
        double model = row[r] * column[c] / overall;
        noise += (mu4 - v * v) / workers;
        spread += (v - model) * (v - model);
      }
  if (spread <= 0)
    return;
  const double lambda = std::clamp(1.0 - noise / spread, 0.0, 1.0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < columns; ++c)
      for (size_t k = 0; k < inner; ++k) {
        double& total = second[at(r, c, k)];
        total = lambda * total + (1.0 - lambda) * workers * row[r] * column[c] / overall;
      }
}

} // namespace detail

const std::vector<std::string>& GradientSource::synthesis_methods() {
  static const std::vector<std::string> methods = {"shrunk_mean_scaling", "mean_scaling",
                                                   "gaussian_deviation", "blockwise_shuffle"};
  return methods;
}

const std::string& GradientSource::default_synthesis() {
  return synthesis_methods().front();
}

GradientSource::GradientSource(Trace trace, int64_t workers, uint64_t seed,
                               const std::string& synthesis, int64_t block_elements)
    : trace_(std::move(trace)), workers_(workers), seed_(seed), block_elements_(block_elements),
      method_(workers <= trace_.captured_workers() ? "captured" : synthesis) {
  const auto& known = synthesis_methods();
  if (std::find(known.begin(), known.end(), synthesis) == known.end())
    throw std::invalid_argument("GradientSource: unknown synthesis method '" + synthesis +
                                "' (callers validate input against synthesis_methods())");
  if (workers_ < 1)
    throw std::invalid_argument("GradientSource: at least one worker is needed");
  if (block_elements_ < 1)
    throw std::invalid_argument("GradientSource: blocks hold at least one element");
  if (!trace_.manifest().has_tensors)
    throw InputError(trace_.manifest().file, "/has_tensors",
                     "a gradient source needs a trace with tensors; this one holds statistics "
                     "only");
  // Every method draws the new workers' differences from the captured ones'
  // spread; one worker has none, and every synthesized worker was a copy.
  if (method_ != "captured" && trace_.captured_workers() < 2)
    throw InputError(trace_.manifest().file, "/workers",
                     "one captured worker cannot make gradients for " + std::to_string(workers_) +
                         " (synthesis draws their differences from the spread between captured "
                         "workers): capture at least two, or simulate one worker");
}

nlohmann::json GradientSource::describe() const {
  nlohmann::json description = {{"method", method_},
                                {"trace", recorded_path(trace_.manifest().folder)},
                                {"captured_workers", trace_.captured_workers()},
                                {"workers", workers_},
                                {"iterations", trace_.manifest().iterations}};
  if (method_ != "captured")
    description["seed"] = seed_;
  if (method_ == "blockwise_shuffle")
    description["block_elements"] = block_elements_;
  if (scales_mean()) {
    description["scale_resampling"] = "per group of captured_workers synthesized workers, a "
                                      "seeded permutation of the captured workers' scales";
    description["residual"] = "per-element gaussian, variance shrunk toward a separable "
                              "row x column model (empirical Bayes, per layer)";
  }
  if (method_ == "shrunk_mean_scaling") {
    description["mean"] = "the captured mean times sqrt(1 - its sampling noise share) per "
                          "layer; the removed energy is added to the residual variance";
    description["residual"] = "per-element gaussian, variance shrunk toward a separable "
                              "row x column model (empirical Bayes, per layer), times the "
                              "scale-source worker's residual norm over the captured workers' rms";
  }
  return description;
}

int64_t GradientSource::source_worker(size_t iteration_index, int64_t worker, int64_t block) const {
  const int64_t captured = trace_.captured_workers();
  if (worker < captured)
    return worker;
  const auto group = static_cast<uint64_t>(worker / captured);
  const int64_t rank = worker % captured;
  uint64_t key = mix64(seed_ ^ mix64(iteration_index ^ mix64(group)));
  uint64_t offset = mix64(key ^ static_cast<uint64_t>(block)) % static_cast<uint64_t>(captured);
  return (rank + static_cast<int64_t>(offset)) % captured;
}

int64_t GradientSource::scale_source(size_t iteration_index, int64_t worker) const {
  const int64_t captured = trace_.captured_workers();
  if (worker < captured)
    return worker;
  // Fisher-Yates over 0..W-1 keyed by (seed, iteration, group): each group of
  // W synthesized workers uses every captured worker's scales exactly once.
  const auto group = static_cast<uint64_t>(worker / captured);
  uint64_t key = mix64(mix64(seed_ ^ 0x6d65616e5f736361ULL) ^
                       mix64(static_cast<uint64_t>(iteration_index) ^ mix64(group)));
  std::vector<int64_t> order(static_cast<size_t>(captured));
  for (int64_t i = 0; i < captured; ++i)
    order[static_cast<size_t>(i)] = i;
  for (int64_t i = captured - 1; i > 0; --i) {
    key = mix64(key);
    auto j = static_cast<int64_t>(key % static_cast<uint64_t>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order[static_cast<size_t>(worker % captured)];
}

void GradientSource::gradient(size_t iteration_index, int64_t worker, std::vector<float>& out) {
  if (worker < 0 || worker >= workers_)
    throw std::out_of_range("GradientSource::gradient: worker " + std::to_string(worker) +
                            " outside 0.." + std::to_string(workers_ - 1));
  if (worker < trace_.captured_workers()) {
    trace_.read_gradient(iteration_index, worker, out);
    return;
  }
  if (method_ == "blockwise_shuffle") {
    shuffled(iteration_index, worker, out);
    return;
  }
  if (scales_mean()) {
    scaled(iteration_index, worker, out);
    return;
  }
  gaussian(iteration_index, worker, out);
}

void GradientSource::load_moments(size_t iteration_index) {
  if (moments_iteration_ == iteration_index)
    return;
  const auto total = static_cast<size_t>(trace_.total_params());
  const int64_t captured = trace_.captured_workers();
  const auto& layers = trace_.manifest().layers;
  // Streaming passes over the captured files, one file in memory at a time:
  // the mean m; then (mean_scaling) each worker's per-layer scale
  // a_w = <d_w, m> / |m|^2 of its deviation d_w = g_w - m along m; then the
  // per-element variance of what is left, d_w - a_w m (of d_w itself for
  // gaussian_deviation). Sums are in double.
  std::vector<double> sum(total, 0.0);
  std::vector<float> g;
  for (int64_t w = 0; w < captured; ++w) {
    trace_.read_gradient(iteration_index, w, g);
    for (size_t j = 0; j < total; ++j)
      sum[j] += static_cast<double>(g[j]);
  }
  mean_.resize(total);
  for (size_t j = 0; j < total; ++j)
    mean_[j] = static_cast<float>(sum[j] / static_cast<double>(captured));

  scales_.assign(static_cast<size_t>(captured) * layers.size(), 0.0);
  if (scales_mean()) {
    for (int64_t w = 0; w < captured; ++w) {
      trace_.read_gradient(iteration_index, w, g);
      for (size_t l = 0; l < layers.size(); ++l) {
        double along = 0, mass = 0;
        const auto first = static_cast<size_t>(layers[l].offset);
        const size_t last = first + static_cast<size_t>(layers[l].params);
        for (size_t j = first; j < last; ++j) {
          double m = static_cast<double>(mean_[j]);
          along += (static_cast<double>(g[j]) - m) * m;
          mass += m * m;
        }
        scales_[static_cast<size_t>(w) * layers.size() + l] = mass > 0 ? along / mass : 0.0;
      }
    }
  }

  // Layers tile [0, total_params) (the manifest is checked for it); with no
  // scaling (a = 0) the residual is d_w itself. mean_scaling also needs the
  // residual's fourth moment, for the shrinkage below.
  const bool shrink = scales_mean();
  std::fill(sum.begin(), sum.end(), 0.0);
  std::vector<double> fourth(shrink ? total : 0, 0.0);
  // Each captured worker's residual energy per layer, for shrunk_mean_scaling.
  std::vector<double> energy(static_cast<size_t>(captured) * layers.size(), 0.0);
  for (int64_t w = 0; w < captured; ++w) {
    trace_.read_gradient(iteration_index, w, g);
    for (size_t l = 0; l < layers.size(); ++l) {
      double a = scales_[static_cast<size_t>(w) * layers.size() + l];
      const auto first = static_cast<size_t>(layers[l].offset);
      const size_t last = first + static_cast<size_t>(layers[l].params);
      double layer_energy = 0;
      for (size_t j = first; j < last; ++j) {
        double m = static_cast<double>(mean_[j]);
        double r = static_cast<double>(g[j]) - m - a * m;
        sum[j] += r * r;
        layer_energy += r * r;
        if (shrink)
          fourth[j] += r * r * r * r;
      }
      energy[static_cast<size_t>(w) * layers.size() + l] = layer_energy;
    }
  }
  const auto count = static_cast<double>(captured);
  if (shrink)
    for (const TraceLayer& layer : layers)
      detail::shrink_variance(layer, count, sum, fourth);
  mean_factors_.assign(layers.size(), 1.0);
  residual_scales_.assign(static_cast<size_t>(captured) * layers.size(), 1.0);
  if (method_ == "shrunk_mean_scaling")
    shrink_mean(energy, sum);
  spread_.resize(total);
  for (size_t j = 0; j < total; ++j)
    spread_[j] = static_cast<float>(std::sqrt(sum[j] / count));
  moments_iteration_ = iteration_index;
}

// shrunk_mean_scaling: the captured mean m = mu + e is the true mean plus the
// mean of W workers' noise, E|e|^2 = T / W (T the summed per-element variance
// of a worker's residual, estimated as sum_w |r_w|^2 / (W - 1)). Every
// synthesized worker shares m, hence e, which real workers do not share: where
// the mean is weak (|m|^2 about 1.3-4 T / W in a 16-worker ResNet-18 capture)
// that alone makes their top-k sets overlap 10-25% too much. So the shared
// part is c m with c^2 = max(0, 1 - T / (W |m|^2)) per layer (|c m|^2
// estimates |mu|^2), and the energy taken away, (1 - c^2) |m|^2 mean_w (1 +
// a_w)^2, is added to the residual variance in proportion to it (it is noise:
// the residual variance about the captured mean is low by the same amount), so
// each layer's expected squared norm over a group is unchanged. Each captured
// worker's residual norm relative to the workers' rms, s_w[l], goes with its
// scales (noise levels differ between micro-batches: sd of s_w 0.2-0.3 on the
// CNN trace).
void GradientSource::shrink_mean(const std::vector<double>& energy, std::vector<double>& second) {
  const auto& layers = trace_.manifest().layers;
  const int64_t captured = trace_.captured_workers();
  const auto count = static_cast<double>(captured);
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto first = static_cast<size_t>(layers[l].offset);
    const size_t last = first + static_cast<size_t>(layers[l].params);
    double mass = 0, residual = 0, along = 0;
    for (size_t j = first; j < last; ++j) {
      mass += static_cast<double>(mean_[j]) * static_cast<double>(mean_[j]);
      residual += second[j];
    }
    double energies = 0;
    for (int64_t w = 0; w < captured; ++w) {
      double a = scales_[static_cast<size_t>(w) * layers.size() + l];
      along += (1.0 + a) * (1.0 + a) / count;
      energies += energy[static_cast<size_t>(w) * layers.size() + l];
    }
    if (energies > 0)
      for (int64_t w = 0; w < captured; ++w)
        residual_scales_[static_cast<size_t>(w) * layers.size() + l] =
            std::sqrt(energy[static_cast<size_t>(w) * layers.size() + l] / (energies / count));
    if (mass <= 0 || captured < 2)
      continue;
    const double noise = energies / (count - 1.0) / count; // T / W
    const double kept = std::max(0.0, 1.0 - noise / mass);
    mean_factors_[l] = std::sqrt(kept);
    // second holds W times the variance: add W times the removed energy.
    const double removed = count * (1.0 - kept) * mass * along;
    if (residual > 0)
      for (size_t j = first; j < last; ++j)
        second[j] *= 1.0 + removed / residual;
  }
}

void GradientSource::add_normal(size_t iteration_index, int64_t worker, std::vector<float>& out,
                                const double* layer_scales) const {
  const size_t total = spread_.size();
  const uint64_t key = mix64(
      seed_ ^ mix64(static_cast<uint64_t>(iteration_index) ^ mix64(static_cast<uint64_t>(worker))));
  const auto& layers = trace_.manifest().layers;
  // With layer_scales, element j's spread is multiplied by its layer's scale
  // (layers tile [0, total) in order).
  size_t layer = 0;
  auto spread = [&](size_t j) {
    if (layer_scales == nullptr)
      return spread_[j];
    while (layer + 1 < layers.size() &&
           j >= static_cast<size_t>(layers[layer].offset + layers[layer].params))
      ++layer;
    return spread_[j] * static_cast<float>(layer_scales[layer]);
  };
  // One hashed pair of uniforms gives the normals of two elements (so that
  // an element's draw does not depend on the others').
  for (size_t j = 0; j < total; j += 2) {
    const uint64_t bits = mix64(key ^ static_cast<uint64_t>(j));
    const auto [first, second] = compress::box_muller(unit_open(bits), unit_open(mix64(bits)));
    out[j] += spread(j) * static_cast<float>(first);
    if (j + 1 < total)
      out[j + 1] += spread(j + 1) * static_cast<float>(second);
  }
}

void GradientSource::gaussian(size_t iteration_index, int64_t worker, std::vector<float>& out) {
  load_moments(iteration_index);
  out = mean_;
  add_normal(iteration_index, worker, out);
}

void GradientSource::scaled(size_t iteration_index, int64_t worker, std::vector<float>& out) {
  load_moments(iteration_index);
  out = mean_;
  const auto& layers = trace_.manifest().layers;
  const auto source = static_cast<size_t>(scale_source(iteration_index, worker));
  const bool shrunk = method_ == "shrunk_mean_scaling";
  for (size_t l = 0; l < layers.size(); ++l) {
    double scale = 1.0 + scales_[source * layers.size() + l];
    if (shrunk)
      scale *= mean_factors_[l];
    auto factor = static_cast<float>(scale);
    const auto first = static_cast<size_t>(layers[l].offset);
    const size_t last = first + static_cast<size_t>(layers[l].params);
    for (size_t j = first; j < last; ++j)
      out[j] *= factor;
  }
  add_normal(iteration_index, worker, out,
             shrunk ? residual_scales_.data() + source * layers.size() : nullptr);
}

void GradientSource::shuffled(size_t iteration_index, int64_t worker,
                              std::vector<float>& out) const {
  const int64_t captured = trace_.captured_workers();
  // Every captured file of the iteration is mapped; only the blocks taken
  // from each are paged in, and all are unmapped on return.
  std::vector<MappedNpy> sources;
  sources.reserve(static_cast<size_t>(captured));
  for (int64_t w = 0; w < captured; ++w)
    sources.push_back(trace_.map_gradient(iteration_index, w));
  const auto total = static_cast<size_t>(trace_.total_params());
  out.resize(total);
  const auto block_size = static_cast<size_t>(block_elements_);
  for (size_t first = 0, block = 0; first < total; first += block_size, ++block) {
    size_t count = std::min(block_size, total - first);
    const MappedNpy& source = sources[static_cast<size_t>(
        source_worker(iteration_index, worker, static_cast<int64_t>(block)))];
    size_t bad = source.read_float32(first, count, out.data() + first);
    if (bad != MappedNpy::npos)
      trace_.fail_unusable(source, bad, out[bad]);
  }
}

const std::vector<float>& GradientSource::noise_spread(size_t iteration_index) {
  load_moments(iteration_index);
  return spread_;
}

const std::vector<double>& GradientSource::mean_factors(size_t iteration_index) {
  load_moments(iteration_index);
  return mean_factors_;
}

double GradientSource::residual_scale(size_t iteration_index, int64_t captured_worker,
                                      size_t layer) {
  load_moments(iteration_index);
  return residual_scales_.at(
      static_cast<size_t>(captured_worker) * trace_.manifest().layers.size() + layer);
}

void GradientSource::weights(size_t iteration_index, std::vector<float>& out) const {
  trace_.read_weights(iteration_index, out);
}

} // namespace gcsim::trace
