#include "sim/trace/gradient_source.hpp"
#include "sim/trace/statistics.hpp"
#include "sim/trace/trace.hpp"
#include "sim/trace/workload.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace gcsim::trace;

namespace {

const std::string kShipped = std::string(GCSIM_SOURCE_DIR) + "/workloads/traces/fmnist-cnn-16w";

// A trace of one 12-parameter layer, stored in float16, without tensors:
// enough for what is read from the manifest alone.
nlohmann::json small_manifest() {
  const nlohmann::json layer = {
      {"name", "fc.weight"}, {"module", "fc"}, {"shape", {4, 3}}, {"params", 12}, {"offset", 0}};
  return {{"format", "gcsim-trace"}, {"format_version", 1}, {"model", "m"},
          {"dataset", "d"},          {"workers", 2},        {"micro_batch", 32},
          {"learning_rate", 0.1},    {"seed", 1},           {"iterations", {0}},
          {"dtype", "float16"},      {"total_params", 12},  {"layers", {layer}}};
}

// A folder of its own holding `manifest`, removed at the end of the scope.
struct ManifestFolder {
  explicit ManifestFolder(const nlohmann::json& manifest)
      : path(std::filesystem::temp_directory_path() /
             ("gcsim-trace-test-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path);
    std::ofstream(path / "manifest.json") << manifest.dump();
  }
  ~ManifestFolder() { std::filesystem::remove_all(path); }
  ManifestFolder(const ManifestFolder&) = delete;
  ManifestFolder& operator=(const ManifestFolder&) = delete;
  std::filesystem::path path;
};

double norm(const std::vector<float>& v) {
  double sum = 0;
  for (float x : v)
    sum += static_cast<double>(x) * static_cast<double>(x);
  return std::sqrt(sum);
}

} // namespace

TEST_CASE("the shipped Fashion-MNIST CNN trace opens and its tensors are real gradients") {
  Trace trace = Trace::open(kShipped);
  const Manifest& manifest = trace.manifest();
  CHECK(manifest.model == "cnn");
  CHECK(manifest.dataset == "fashion-mnist");
  CHECK(trace.captured_workers() == 16);
  CHECK(trace.total_params() == 29994);
  REQUIRE(manifest.layers.size() == 8);
  CHECK(manifest.layers[2].name == "conv2.weight");
  CHECK(manifest.layers[2].shape == std::vector<int64_t>{32, 16, 5, 5});
  CHECK(manifest.iterations == std::vector<int64_t>{0, 50, 100, 150});
  CHECK_FALSE(manifest.capture_command.empty());

  std::vector<float> a, b, weights;
  trace.read_gradient(3, 0, a);
  trace.read_gradient(3, 1, b);
  trace.read_weights(3, weights);
  REQUIRE(a.size() == 29994);
  REQUIRE(weights.size() == 29994);
  CHECK(norm(a) > 0);
  CHECK(a != b); // disjoint micro-batches give different gradients
  CHECK(norm(weights) > norm(a) * 0.01);
  CHECK_THROWS_AS(trace.read_gradient(4, 0, a), std::out_of_range);
  CHECK_THROWS_AS(trace.read_gradient(0, 16, a), std::out_of_range);
}

TEST_CASE("workload from trace: one layer per parameterised module, times add up") {
  Trace trace = Trace::open(kShipped);
  TraceWorkload workload = workload_from_trace(trace.manifest());
  REQUIRE(workload.layers.size() == 4);
  CHECK(workload.layers[0].name == "conv1");
  CHECK(workload.layers[0].type == "Conv2d");
  CHECK(workload.layers[0].tensors == std::vector<std::string>{"conv1.weight", "conv1.bias"});
  CHECK(workload.layers[1].offset == 416);
  CHECK(workload.layers[3].name == "fc2");
  CHECK(workload.has_times);
  CHECK(workload.micro_batch == 32);
  int64_t params = 0;
  double forward = 0, backward = 0, module_forward = 0, module_backward = 0;
  for (const WorkloadLayer& layer : workload.layers) {
    params += layer.params;
    REQUIRE(layer.forward_s);
    REQUIRE(layer.backward_s);
    forward += *layer.forward_s;
    backward += *layer.backward_s;
  }
  for (const TraceModule& module : trace.manifest().modules) {
    module_forward += *module.forward_s;
    module_backward += *module.backward_s;
  }
  CHECK(params == workload.total_params);
  CHECK(forward == doctest::Approx(module_forward).scale(0));
  CHECK(backward == doctest::Approx(module_backward).scale(0));
  CHECK(forward > 0);
}

TEST_CASE("workload from trace: a parameter-free module's time goes to the layer before it") {
  Trace trace = Trace::open(kShipped);
  const std::vector<TraceModule>& modules = trace.manifest().modules;
  const TraceWorkload workload = workload_from_trace(trace.manifest());
  // conv1 relu1 pool1 | conv2 relu2 pool2 flatten | fc1 relu3 | fc2
  const std::vector<std::pair<size_t, size_t>> spans = {{0, 3}, {3, 7}, {7, 9}, {9, 10}};
  REQUIRE(modules.size() == 10);
  REQUIRE(workload.layers.size() == spans.size());
  for (size_t l = 0; l < spans.size(); ++l) {
    CAPTURE(workload.layers[l].name);
    double forward = 0, backward = 0;
    for (size_t m = spans[l].first; m < spans[l].second; ++m) {
      forward += *modules[m].forward_s;
      backward += *modules[m].backward_s;
    }
    CHECK(*workload.layers[l].forward_s == doctest::Approx(forward).epsilon(1e-12).scale(0));
    CHECK(*workload.layers[l].backward_s == doctest::Approx(backward).epsilon(1e-12).scale(0));
  }
}

TEST_CASE("workload from trace: parameter-free modules before the first layer are its own") {
  nlohmann::json manifest = small_manifest();
  manifest["modules"] = {
      {{"name", "flatten"}, {"params", 0}, {"forward_s", 0.001}, {"backward_s", 0.002}},
      {{"name", "fc"}, {"params", 12}, {"forward_s", 0.003}, {"backward_s", 0.005}}};
  const ManifestFolder folder(manifest);
  const TraceWorkload workload = workload_from_trace(load_manifest(folder.path));
  REQUIRE(workload.layers.size() == 1);
  CHECK(*workload.layers[0].forward_s == doctest::Approx(0.004).scale(0));
  CHECK(*workload.layers[0].backward_s == doctest::Approx(0.007).scale(0));
}

TEST_CASE("a manifest's defaults: weights in float32, times at the timing's micro-batch") {
  nlohmann::json manifest = small_manifest();
  {
    const ManifestFolder folder(manifest);
    CHECK(load_manifest(folder.path).weights_dtype == NpyDtype::float32);
  }
  // Measured at 8 samples while the gradients were captured at 32: the
  // times are per micro-batch of 8.
  manifest["timing"] = {{"device", "cpu"}, {"micro_batch", 8}};
  const ManifestFolder folder(manifest);
  CHECK(workload_from_trace(load_manifest(folder.path)).micro_batch == 8);
}

TEST_CASE("a gradient source with P <= W hands out the first P captured workers") {
  Trace trace = Trace::open(kShipped);
  GradientSource source(trace, 4, 42);
  CHECK(source.method() == "captured");
  std::vector<float> produced, captured;
  for (int64_t w = 0; w < 4; ++w) {
    source.gradient(1, w, produced);
    trace.read_gradient(1, w, captured);
    CHECK(produced == captured);
  }
  CHECK_THROWS_AS(source.gradient(1, 4, produced), std::out_of_range);
}

TEST_CASE("layer statistics follow their definitions") {
  // Two workers over 200 elements: k = 2. Worker 0's two largest are 0 and 1,
  // worker 1's are 1 and 2, so the overlap is 1/2.
  std::vector<std::vector<float>> g(2, std::vector<float>(200, 0.1f));
  g[0][0] = 10;
  g[0][1] = 10;
  g[1][1] = 10;
  g[1][2] = 10;
  SliceReader read = [&](int64_t w, int64_t offset, int64_t count, float* out) {
    std::copy_n(g[static_cast<size_t>(w)].begin() + offset, count, out);
  };
  LayerStatistics stats = layer_statistics(read, 2, 0, 200);
  CHECK(stats.k == 2);
  CHECK(stats.overlap == doctest::Approx(0.5).scale(0));
  double mass = 200 + 198 * 0.01;
  CHECK(stats.top_mass == doctest::Approx(200 / mass).scale(0));
  CHECK(stats.norm == doctest::Approx(std::sqrt(mass)).scale(0));
  // k is 1% rounded up: 3 of 250, where rounding down gives 2.
  std::vector<float> ramp(250);
  std::iota(ramp.begin(), ramp.end(), 0.0f);
  SliceReader read_ramp = [&](int64_t, int64_t offset, int64_t count, float* out) {
    std::copy_n(ramp.begin() + offset, count, out);
  };
  CHECK(layer_statistics(read_ramp, 1, 0, 250).k == 3);
  // The share as written: 7% of 10,000 is 700, though 0.07 * 10000 is
  // 700.0000000000001 in doubles and rounded up gave 701.
  std::vector<float> wide(10000, 1.0f);
  SliceReader read_wide = [&](int64_t, int64_t offset, int64_t count, float* out) {
    std::copy_n(wide.begin() + offset, count, out);
  };
  CHECK(layer_statistics(read_wide, 1, 0, 10000, 0.07).k == 700);
}

// The capture is plain synchronous SGD: w_{t+1} = w_t - lr * mean_w g_w(t).
// Reading consecutive captured iterations back through the C++ reader must
// give that identity to 1e-3 relative (float32 and float16 storage); a wrong
// layer order, offset, dtype conversion or worker file breaks it.
TEST_CASE("captured gradients: their mean is the weight change divided by the learning rate") {
  for (const std::string name : {"a", "f16", "own", "vit"}) {
    const std::string folder = std::string(GCSIM_TRACE_FIXTURES) + "/capture/" + name;
    CAPTURE(folder);
    Trace trace = Trace::open(folder);
    const Manifest& manifest = trace.manifest();
    REQUIRE(trace.iteration_count() == 3);
    const auto total = static_cast<size_t>(trace.total_params());
    for (size_t i = 0; i + 1 < trace.iteration_count(); ++i) {
      REQUIRE(manifest.iterations[i + 1] == manifest.iterations[i] + 1);
      std::vector<double> mean(total, 0.0);
      std::vector<float> g, before, after;
      for (int64_t w = 0; w < trace.captured_workers(); ++w) {
        trace.read_gradient(i, w, g);
        for (size_t j = 0; j < total; ++j)
          mean[j] += static_cast<double>(g[j]) / static_cast<double>(trace.captured_workers());
      }
      trace.read_weights(i, before);
      trace.read_weights(i + 1, after);
      double error = 0, reference = 0;
      for (size_t j = 0; j < total; ++j) {
        double step = (static_cast<double>(before[j]) - static_cast<double>(after[j])) /
                      manifest.learning_rate;
        error += (step - mean[j]) * (step - mean[j]);
        reference += mean[j] * mean[j];
      }
      double relative = std::sqrt(error / reference);
      MESSAGE(name << " iteration " << manifest.iterations[i] << ": relative error " << relative);
      CHECK(reference > 0);
      CHECK(relative < 1e-3);
      // Per layer too, so a swapped pair of layers cannot hide in the total.
      for (const TraceLayer& layer : manifest.layers) {
        double layer_error = 0, layer_reference = 0;
        for (int64_t j = layer.offset; j < layer.offset + layer.params; ++j) {
          auto k = static_cast<size_t>(j);
          double step = (static_cast<double>(before[k]) - static_cast<double>(after[k])) /
                        manifest.learning_rate;
          layer_error += (step - mean[k]) * (step - mean[k]);
          layer_reference += mean[k] * mean[k];
        }
        CAPTURE(layer.name);
        CHECK(std::sqrt(layer_error / layer_reference) < 1e-2);
      }
    }
  }
}

TEST_CASE("the shipped ResNet-18 statistics trace gives a workload but no tensors") {
  Trace trace =
      Trace::open(std::string(GCSIM_SOURCE_DIR) + "/workloads/traces/fmnist-resnet18-stats");
  CHECK_FALSE(trace.manifest().has_tensors);
  CHECK(trace.total_params() == 11173962); // the CIFAR ResNet-18 of the DEFT paper
  CHECK(trace.manifest().layers.size() == 62);
  std::vector<float> g;
  CHECK_THROWS_AS(trace.read_gradient(0, 0, g), gcsim::InputError);
  CHECK_THROWS_AS(GradientSource(trace, 4, 1), gcsim::InputError);
  TraceWorkload workload = workload_from_trace(trace.manifest());
  // conv1, bn1, 8 blocks x (conv, bn, conv, bn), 3 shortcuts x (conv, bn), linear
  CHECK(workload.layers.size() == 41);
  CHECK(workload.has_times);
  CHECK(workload.layers.back().name == "linear");
  int64_t params = 0;
  for (const WorkloadLayer& layer : workload.layers)
    params += layer.params;
  CHECK(params == 11173962);
}
