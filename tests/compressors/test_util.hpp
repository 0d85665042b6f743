// Shared helpers for the compressor tests.
#pragma once

#include "compressors/rng.hpp"
#include "compressors/tensor.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace gcsim::compress::test {

// Synthetic heavy-tailed gradient values: a Student-t-like mix (normal divided
// by the square root of a uniform), so a few coordinates dominate, as in real
// gradients. Deterministic from the seed.
inline std::vector<float> heavy_tailed(std::size_t n, std::uint64_t seed, float scale = 1e-3f) {
  Xoshiro256 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) {
    const double u1 = std::max(rng.uniform(), 1e-12);
    const double u2 = rng.uniform();
    const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    const double tail = 1.0 / std::sqrt(std::max(rng.uniform(), 1e-6));
    x = static_cast<float>(normal * tail) * scale;
  }
  return v;
}

// P synthetic workers' gradients sharing one layout; worker w and iteration t
// give distinct but correlated data (a shared signal plus worker noise).
// Layers of `sizes`, each a matrix as square as its size allows (rows the
// largest divisor not above its square root), so that low-rank compressors
// have shapes to work with.
inline LayerLayout matrix_layout(const std::vector<std::size_t>& sizes) {
  std::vector<Layer> layers;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::size_t rows = 1;
    for (std::size_t r = 1; r * r <= sizes[i]; ++r)
      if (sizes[i] % r == 0)
        rows = r;
    layers.push_back(
        Layer{"layer" + std::to_string(i), offset, sizes[i], {{rows, sizes[i] / rows}}});
    offset += sizes[i];
  }
  return LayerLayout(std::move(layers));
}

struct SyntheticWorkers {
  LayerLayout layout;
  std::vector<std::vector<float>> grads;

  SyntheticWorkers(const std::vector<std::size_t>& layer_sizes, std::size_t workers,
                   std::uint64_t seed, std::uint64_t iteration = 0)
      : layout(matrix_layout(layer_sizes)) {
    const std::vector<float> shared = heavy_tailed(layout.total(), seed * 1000 + iteration);
    for (std::size_t w = 0; w < workers; ++w) {
      std::vector<float> g = heavy_tailed(layout.total(), seed * 1000 + 7919 * (w + 1) + iteration);
      for (std::size_t i = 0; i < g.size(); ++i) {
        g[i] += shared[i];
      }
      grads.push_back(std::move(g));
    }
  }
  std::vector<GradientView> views() const {
    std::vector<GradientView> v;
    for (const auto& g : grads) {
      v.push_back(GradientView{g.data(), &layout});
    }
    return v;
  }
};

} // namespace gcsim::compress::test
