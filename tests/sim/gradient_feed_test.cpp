// The gradient feeds: a trace's captured iterations taken in turn
// (iteration i is captured iteration i mod n), and synthetic gradients whose
// shared signal is drawn anew every iteration, by default as alike between
// workers as a ResNet-18 capture's.

#include "sim/input/json_reader.hpp"
#include "sim/training/gradient_feed.hpp"
#include "sim/training/workload.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include <doctest/doctest.h>

using namespace gcsim::training;

namespace {

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0;
  double aa = 0;
  double bb = 0;
  for (size_t j = 0; j < a.size(); ++j) {
    const auto x = static_cast<double>(a[j]);
    const auto y = static_cast<double>(b[j]);
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  return ab / std::sqrt(aa * bb);
}

// Worker `worker`'s gradient of iteration `iteration`.
std::vector<float> gradient_of(GradientFeed& feed, int iteration, int worker) {
  std::vector<float> gradient;
  feed.gradient(iteration, worker, gradient);
  return gradient;
}

} // namespace

TEST_CASE("a trace feed takes its captured iterations in turn") {
  // The shipped trace has 4 captured iterations of 16 workers.
  auto feed = make_trace_feed(std::string(GCSIM_SOURCE_DIR) + "/workloads/traces/fmnist-cnn-16w",
                              16, 3, "shrunk_mean_scaling");
  const std::vector<float> first = gradient_of(*feed, 0, 2);
  const std::vector<float> second = gradient_of(*feed, 1, 2);
  const std::vector<float> fifth = gradient_of(*feed, 4, 2);
  const std::vector<float> sixth = gradient_of(*feed, 5, 2);
  REQUIRE(first.size() == feed->layout().total());
  CHECK(first != second); // each iteration its own captured gradients
  CHECK(fifth == first);  // iteration 4 is captured iteration 0 again
  CHECK(sixth == second);
  std::vector<float> weights0;
  std::vector<float> weights1;
  std::vector<float> weights5;
  REQUIRE(feed->weights(0, weights0));
  REQUIRE(feed->weights(1, weights1));
  REQUIRE(feed->weights(5, weights5));
  CHECK(weights0 != weights1); // the weights move between captured iterations
  CHECK(weights5 == weights1);
}

TEST_CASE("synthetic gradients: a shared signal per iteration, a noise per worker") {
  Workload workload;
  workload.name = "two-layers";
  workload.layers.push_back({"a", "linear", 4000, 1e6, 2e6, {}, {}, {}});
  workload.layers.push_back({"pool", "pool", 0, 1e5, 1e5, {}, {}, {}});
  workload.layers.push_back({"b", "linear", 1000, 1e6, 2e6, {}, {}, {}});
  for (const std::string& method : SyntheticGradients::methods()) {
    INFO(method);
    SyntheticGradients how;
    how.method = method;
    auto feed = make_synthetic_feed(workload, 4, 7, how);
    REQUIRE(feed->layout().total() == 5000);
    const std::vector<float> w0_t0 = gradient_of(*feed, 0, 0);
    const std::vector<float> w1_t0 = gradient_of(*feed, 0, 1);
    const std::vector<float> w0_t1 = gradient_of(*feed, 1, 0);
    const std::vector<float> again = gradient_of(*feed, 0, 0);
    CHECK(again == w0_t0); // deterministic from (seed, iteration, worker)
    CHECK(w1_t0 != w0_t0);
    // Two workers of one iteration share its signal (capture_fitted: as its
    // share of their energy, 0.1); two iterations do not.
    if (method == "capture_fitted")
      CHECK(std::abs(cosine(w0_t0, w1_t0) - 0.1) < 0.05);
    else
      CHECK(cosine(w0_t0, w1_t0) > 0.5);
    CHECK(std::abs(cosine(w0_t0, w0_t1)) < 0.2);
  }
}

TEST_CASE("capture_fitted: a weight's expected squared norm is 1, a vector's elements half its") {
  // A spec layer without tensors is one weight; a convolution's bias and the
  // norm layer after it take half the convolution's element scale, as a
  // ResNet-18 capture's vectors do.
  Workload workload;
  workload.name = "blocks";
  workload.layers.push_back({"plain", "linear", 1000000, 1e6, 2e6, {}, {}, {}});
  workload.layers.push_back({"conv",
                             "conv",
                             400000 + 4000,
                             1e6,
                             2e6,
                             {Tensor{"weight", {4000, 100}}, Tensor{"bias", {4000}}},
                             {},
                             {}});
  workload.layers.push_back(
      {"bn", "other", 8000, 1e3, 2e3, {Tensor{"weight", {4000}}, Tensor{"bias", {4000}}}, {}, {}});
  for (const auto& [share, spread] : {std::pair{0.1, 0.28}, std::pair{0.0, 0.5}}) {
    INFO("signal_share " << share << ", spread " << spread);
    SyntheticGradients how;
    how.signal_share = share;
    how.spread = spread;
    auto feed = make_synthetic_feed(workload, 4, 7, how);
    REQUIRE(feed->layout().size() == 5);
    std::vector<double> squares(5, 0.0);
    for (int worker = 0; worker < 4; ++worker) {
      const std::vector<float> gradient = gradient_of(*feed, 0, worker);
      for (size_t l = 0; l < 5; ++l) {
        const gcsim::compress::Layer& layer = feed->layout()[l];
        for (size_t j = layer.offset; j < layer.offset + layer.size; ++j)
          squares[l] += static_cast<double>(gradient[j]) * static_cast<double>(gradient[j]) / 4;
      }
    }
    CHECK(std::abs(squares[0] - 1) < 0.01);
    CHECK(std::abs(squares[1] - 1) < 0.01);
    // Element scales: the weight's 1/400000, the vectors' a quarter of it.
    for (size_t l = 2; l < 5; ++l)
      CHECK(std::abs(squares[l] / 4000 / (0.25 / 400000) - 1) < 0.1);
  }
}

// The default synthesis against the ResNet-18 capture it was fitted to
// (workloads/traces/fmnist-resnet18-stats: 8 workers, iterations 0, 10 and
// 20): the layers of at least 10,000 parameters, their pairwise top-1%
// overlap and top-1% energy share weighted by size, as statistics.json
// gives them. The captured iterations span 0.041-0.066 and 0.108-0.135;
// the old shared_heavy_signal's workers chose nearly the same elements.
TEST_CASE("capture_fitted synthetic gradients overlap as a ResNet-18 capture's do") {
  const std::string spec_file =
      std::string(GCSIM_SOURCE_DIR) + "/workloads/models/resnet18-cifar10.json";
  const Workload workload = read_layer_spec(gcsim::load_json_file(spec_file), spec_file);
  constexpr int kWorkers = 8;
  auto statistics_of = [&](const SyntheticGradients& how) {
    auto feed = make_synthetic_feed(workload, kWorkers, 1, how);
    std::vector<std::vector<float>> gradients(kWorkers);
    for (int worker = 0; worker < kWorkers; ++worker)
      feed->gradient(0, worker, gradients[static_cast<size_t>(worker)]);
    double overlap = 0;
    double mass = 0;
    double weight = 0;
    for (const gcsim::compress::Layer& layer : feed->layout().layers()) {
      if (layer.size < 10000)
        continue;
      const auto k = static_cast<size_t>(std::ceil(0.01 * static_cast<double>(layer.size)));
      std::vector<std::vector<size_t>> tops;
      double layer_mass = 0;
      for (const std::vector<float>& gradient : gradients) {
        const float* values = gradient.data() + layer.offset;
        std::vector<size_t> order(layer.size);
        std::iota(order.begin(), order.end(), size_t{0});
        std::nth_element(
            order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
            [values](size_t a, size_t b) { return std::abs(values[a]) > std::abs(values[b]); });
        order.resize(k);
        std::sort(order.begin(), order.end());
        double top = 0;
        double all = 0;
        for (size_t i = 0; i < layer.size; ++i)
          all += static_cast<double>(values[i]) * static_cast<double>(values[i]);
        for (size_t i : order)
          top += static_cast<double>(values[i]) * static_cast<double>(values[i]);
        layer_mass += top / all / kWorkers;
        tops.push_back(std::move(order));
      }
      double pairs = 0;
      double shared = 0;
      for (size_t a = 0; a < tops.size(); ++a)
        for (size_t b = a + 1; b < tops.size(); ++b) {
          std::vector<size_t> both;
          std::set_intersection(tops[a].begin(), tops[a].end(), tops[b].begin(), tops[b].end(),
                                std::back_inserter(both));
          shared += static_cast<double>(both.size()) / static_cast<double>(k);
          pairs += 1;
        }
      const auto size = static_cast<double>(layer.size);
      overlap += size * shared / pairs;
      mass += size * layer_mass;
      weight += size;
    }
    return std::pair{overlap / weight, mass / weight};
  };
  const auto [overlap, mass] = statistics_of({});
  INFO("capture_fitted: overlap " << overlap << ", top-1% share " << mass);
  CHECK(overlap >= 0.041);
  CHECK(overlap <= 0.066);
  CHECK(mass >= 0.108);
  CHECK(mass <= 0.135);
  SyntheticGradients old;
  old.method = "shared_heavy_signal";
  const auto [old_overlap, old_mass] = statistics_of(old);
  INFO("shared_heavy_signal: overlap " << old_overlap << ", top-1% share " << old_mass);
  CHECK(old_overlap > 0.5);
  // A larger spread shares more of the workers' top elements.
  SyntheticGradients spread;
  spread.spread = 0.5;
  CHECK(statistics_of(spread).first > 1.5 * overlap);
}

TEST_CASE("a layer spec's tensors are the compressors' layers; its gradients do not depend on "
          "them") {
  Workload shaped;
  shaped.name = "shaped";
  shaped.layers.push_back({"conv",
                           "conv",
                           6 * 3 * 2 + 6,
                           1e6,
                           2e6,
                           {Tensor{"weight", {6, 3, 2}}, Tensor{"bias", {6}}},
                           {},
                           {}});
  shaped.layers.push_back({"relu", "other", 0, 1e3, 2e3, {}, {}, {}});
  shaped.layers.push_back({"scale", "other", 1, 0, 0, {Tensor{"", {}}}, {}, {}});
  Workload plain = shaped;
  for (Layer& layer : plain.layers)
    layer.tensors.clear();
  // (shared_heavy_signal's: capture_fitted scales a vector by its weight.)
  SyntheticGradients shared;
  shared.method = "shared_heavy_signal";
  auto with_tensors = make_synthetic_feed(shaped, 2, 3, shared);
  auto without = make_synthetic_feed(plain, 2, 3, shared);
  const gcsim::compress::LayerLayout& layout = with_tensors->layout();
  REQUIRE(layout.size() == 3);
  CHECK(layout[0].name == "conv.weight");
  CHECK(layout[0].offset == 0);
  CHECK(layout[0].size == 36);
  CHECK(layout[0].shape == std::vector<size_t>{6, 3, 2});
  CHECK(layout[1].name == "conv.bias");
  CHECK(layout[1].offset == 36);
  CHECK(layout[1].size == 6);
  CHECK(layout[1].shape == std::vector<size_t>{6});
  // An unnamed tensor is named by its place in the layer.
  CHECK(layout[2].name == "scale.0");
  CHECK(layout[2].offset == 42);
  CHECK(layout[2].shape == std::vector<size_t>{});
  // Without tensors, a layer is one block.
  REQUIRE(without->layout().size() == 2);
  CHECK(without->layout()[0].name == "conv");
  CHECK(without->layout()[0].size == 42);
  CHECK(!without->layout()[0].shape);
  CHECK(gradient_of(*with_tensors, 1, 1) == gradient_of(*without, 1, 1));
  std::vector<float> weights_with;
  std::vector<float> weights_without;
  REQUIRE(with_tensors->weights(0, weights_with));
  REQUIRE(without->weights(0, weights_without));
  CHECK(weights_with == weights_without);
}
