// Gradients for the "real trace" tests: the committed capture when the build
// has the trace reader and the trace folder exists (GCSIM_REAL_TRACE_DIR is
// then defined by CMake), synthetic heavy-tailed data otherwise. Test names say
// which one ran (GCSIM_TRACE_LABEL).
#pragma once

#include "compressors/tensor.hpp"
#include "test_util.hpp"

#include <string>
#include <vector>

#ifdef GCSIM_REAL_TRACE_DIR
#include "sim/trace/trace.hpp"
#define GCSIM_TRACE_LABEL "(real trace fmnist-cnn-16w)"
#else
#define GCSIM_TRACE_LABEL "(SYNTHETIC heavy-tailed data: real trace not in this build)"
#endif

namespace gcsim::compress::test {

struct TraceData {
  std::string source;
  LayerLayout layout;
  std::vector<std::vector<std::vector<float>>> grads; // [captured iteration][worker]
  std::vector<std::vector<float>> weights;            // [captured iteration]
  std::size_t workers() const { return grads.front().size(); }
  std::vector<GradientView> views(std::size_t iteration, std::size_t P) const {
    std::vector<GradientView> v;
    for (std::size_t w = 0; w < P; ++w) {
      v.push_back(GradientView{grads[iteration][w].data(), &layout});
    }
    return v;
  }
};

inline const TraceData& trace_data() {
  static const TraceData data = [] {
    TraceData t;
#ifdef GCSIM_REAL_TRACE_DIR
    const auto trace = gcsim::trace::Trace::open(GCSIM_REAL_TRACE_DIR);
    std::vector<Layer> layers;
    for (const auto& l : trace.manifest().layers) {
      layers.push_back(Layer{l.name,
                             static_cast<std::size_t>(l.offset),
                             static_cast<std::size_t>(l.params),
                             {std::vector<std::size_t>(l.shape.begin(), l.shape.end())}});
    }
    t.source = GCSIM_REAL_TRACE_DIR;
    t.layout = LayerLayout(std::move(layers));
    for (std::size_t i = 0; i < trace.iteration_count(); ++i) {
      std::vector<std::vector<float>> workers(static_cast<std::size_t>(trace.captured_workers()));
      for (std::size_t w = 0; w < workers.size(); ++w) {
        trace.read_gradient(i, static_cast<std::int64_t>(w), workers[w]);
      }
      t.grads.push_back(std::move(workers));
      std::vector<float> weights;
      trace.read_weights(i, weights);
      t.weights.push_back(std::move(weights));
    }
#else
    // Shaped like the small CNN: conv, bias, conv, bias, fc, bias, fc, bias.
    const std::vector<std::size_t> sizes = {400, 16, 12800, 32, 16384, 32, 320, 10};
    t.source = "synthetic";
    t.layout = LayerLayout::from_sizes(sizes);
    for (std::uint64_t i = 0; i < 4; ++i) {
      SyntheticWorkers s(sizes, 16, 21, i);
      t.grads.push_back(std::move(s.grads));
      t.weights.push_back(heavy_tailed(t.layout.total(), 500 + i, 0.05f));
    }
#endif
    return t;
  }();
  return data;
}

} // namespace gcsim::compress::test
