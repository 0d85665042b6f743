#include "sim/cost/device_profile.hpp"
#include "sim/training/plan.hpp"
#include "sim/training/workload.hpp"

#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using gcsim::cost::DeviceProfile;
using gcsim::training::Layer;
using gcsim::training::layer_times;
using gcsim::training::Workload;

namespace {

const std::string kV100 = std::string(GCSIM_SOURCE_DIR) + "/platforms/devices/v100.json";

Workload two_layers(double norm_backward_flops) {
  Workload workload;
  workload.name = "two-layers";
  workload.source = "layer_times_test";
  workload.layers.push_back(Layer{"conv1", "conv", 1728, 1e8, 2e8, {}, {}, {}});
  workload.layers.push_back(Layer{"bn1", "norm", 128, 1e6, norm_backward_flops, {}, {}, {}});
  return workload;
}

} // namespace

TEST_CASE("a layer's backward time is its workload's backward FLOPs, not a fixed multiple of "
          "its forward ones") {
  const DeviceProfile v100 = DeviceProfile::load(kV100);
  const int batch = 64;
  const auto once = layer_times(two_layers(1e6), v100, batch);
  const auto twice = layer_times(two_layers(2e6), v100, batch);
  REQUIRE(once.size() == 2);
  CHECK(once[0].backward_s == v100.backward_seconds("conv", 2e8 * batch));
  CHECK(once[1].backward_s == v100.backward_seconds("norm", 1e6 * batch));
  // Until 2026-12-02 the field was read and then ignored: the two were equal.
  const double per_flop =
      (v100.backward_seconds("norm", 2e6 * batch) - v100.backward_seconds("norm", 1e6 * batch)) /
      (1e6 * batch);
  CHECK(per_flop > 0);
  CHECK(twice[1].backward_s - once[1].backward_s ==
        doctest::Approx(1e6 * batch * per_flop).epsilon(1e-12).scale(0));
  CHECK(twice[0].backward_s == once[0].backward_s);
  CHECK(twice[1].forward_s == once[1].forward_s);
}

TEST_CASE("a trace's own layer times scale in proportion to the batch, whatever the profile's "
          "latency") {
  // Measured on the trace's device: the H200 profile's latency per layer is
  // not theirs to keep.
  const DeviceProfile h200 =
      DeviceProfile::load(std::string(GCSIM_SOURCE_DIR) + "/platforms/devices/h200.json");
  REQUIRE(h200.compute().layer_latency_s > 0);
  Workload traced = two_layers(1e6);
  traced.measured_batch = 32;
  traced.layers[0].measured_forward_s = 4e-3;
  traced.layers[0].measured_backward_s = 8e-3;
  traced.layers[1].measured_forward_s = 1e-5; // below the profile's latency
  traced.layers[1].measured_backward_s = 2e-5;
  const auto at_8 = layer_times(traced, h200, 8);
  const auto at_128 = layer_times(traced, h200, 128);
  CHECK(at_8[0].forward_s == doctest::Approx(1e-3).epsilon(1e-12).scale(0));
  CHECK(at_8[1].backward_s == doctest::Approx(5e-6).epsilon(1e-12).scale(0));
  CHECK(at_128[0].backward_s == doctest::Approx(32e-3).epsilon(1e-12).scale(0));
  CHECK(at_128[1].forward_s == doctest::Approx(4e-5).epsilon(1e-12).scale(0));
}

TEST_CASE("a profile's measured model times give each layer its own forward and backward") {
  // At a measured batch (128 of 16..256) each pass is the measured one:
  // the backward pass is not the forward's, nor the other way round.
  const DeviceProfile h200 =
      DeviceProfile::load(std::string(GCSIM_SOURCE_DIR) + "/platforms/devices/h200.json");
  const std::string spec_file =
      std::string(GCSIM_SOURCE_DIR) + "/workloads/models/resnet50-imagenet.json";
  std::ifstream in(spec_file);
  const Workload resnet50 = gcsim::training::read_layer_spec(nlohmann::json::parse(in), spec_file);
  const gcsim::cost::ModelTimes* measured = h200.model_times(resnet50.name);
  REQUIRE(measured != nullptr);
  REQUIRE(measured->batches.at(3) == 128);
  const auto times = layer_times(resnet50, h200, 128);
  REQUIRE(times.size() == resnet50.layers.size());
  int differing = 0;
  for (std::size_t i = 0; i < times.size(); ++i) {
    CAPTURE(resnet50.layers[i].name);
    const auto& layer = measured->layers.at(resnet50.layers[i].name);
    CHECK(times[i].forward_s == doctest::Approx(layer.forward_s[3]).epsilon(1e-12).scale(0));
    CHECK(times[i].backward_s == doctest::Approx(layer.backward_s[3]).epsilon(1e-12).scale(0));
    differing += layer.forward_s[3] != layer.backward_s[3] ? 1 : 0;
  }
  CHECK(differing > 10); // a swap would show
}
