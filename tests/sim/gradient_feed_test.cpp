// The gradient feeds: a trace's captured iterations taken in turn
// (iteration i is captured iteration i mod n), and synthetic gradients whose
// shared signal is drawn anew every iteration.

#include "sim/training/gradient_feed.hpp"
#include "sim/training/workload.hpp"

#include <cmath>
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
  auto feed = make_synthetic_feed(workload, 4, 7);
  REQUIRE(feed->layout().total() == 5000);
  const std::vector<float> w0_t0 = gradient_of(*feed, 0, 0);
  const std::vector<float> w1_t0 = gradient_of(*feed, 0, 1);
  const std::vector<float> w0_t1 = gradient_of(*feed, 1, 0);
  const std::vector<float> again = gradient_of(*feed, 0, 0);
  CHECK(again == w0_t0); // deterministic from (seed, iteration, worker)
  CHECK(w1_t0 != w0_t0);
  // Two workers of one iteration share its signal; two iterations do not.
  CHECK(cosine(w0_t0, w1_t0) > 0.5);
  CHECK(std::abs(cosine(w0_t0, w0_t1)) < 0.2);
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
  auto with_tensors = make_synthetic_feed(shaped, 2, 3);
  auto without = make_synthetic_feed(plain, 2, 3);
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
