// The compression-aware path against the dense one: the dense compressor's
// schedule (one ring allreduce of the whole gradient after the backward pass,
// then its averaging kernel) must take exactly as long as the bucketed dense
// model with one bucket and no overlap plus that kernel, and send the same
// bytes; a sparsifier's kernels and real selection show up as they should.

#include "compressors/registry.hpp"
#include "sim/cost/device_profile.hpp"
#include "sim/input/paths.hpp"
#include "sim/training/compression.hpp"
#include "sim/training/iteration_model.hpp"
#include "tests/sim/test_platforms.hpp"

#include <doctest/doctest.h>

using namespace gcsim;
using namespace gcsim::training;

TEST_CASE("dense through the compressed path equals the dense model") {
  constexpr int kWorkers = 8;
  Workload workload;
  workload.name = "three-layers";
  for (int64_t params : {300000, 20000, 1000000})
    workload.layers.push_back(
        {"layer" + std::to_string(params), "linear", params, 1e9, 2e9, {}, {}, {}});
  cost::DeviceProfile profile =
      cost::DeviceProfile::load(source_root() / "platforms/devices/v100.json");

  IterationPlan dense;
  for (const Layer& layer : workload.layers) {
    dense.layers.push_back({1e-3, 2e-3});
    dense.layer_bytes.push_back(static_cast<uint64_t>(layer.parameters) * 4);
  }
  dense.optimizer_s = 5e-4;
  dense.bucket_bytes = uint64_t{1} << 40; // one bucket
  dense.overlap = false;
  dense.iterations = 2;

  auto compressor = compress::make_compressor("dense", nlohmann::json::object());
  std::unique_ptr<GradientFeed> feed = make_synthetic_feed(workload, kWorkers, 3);
  CompressedRun run = run_compressor(*compressor, *feed, kWorkers, dense.iterations, 3, profile);
  IterationPlan through_compressor = dense;
  through_compressor.compressed = run.schedule;

  auto topk = compress::make_compressor("topk", {{"density", 0.01}});
  std::unique_ptr<GradientFeed> topk_feed = make_synthetic_feed(workload, kWorkers, 3);
  CompressedRun topk_run =
      run_compressor(*topk, *topk_feed, kWorkers, dense.iterations, 3, profile);
  IterationPlan sparse = dense;
  sparse.compressed = topk_run.schedule;

  const net::PlatformSpec platform = testing::star_platform("equality", kWorkers, 1.25e9, 5e-6);
  std::vector<RunResult> results = simulate(platform, {dense, through_compressor, sparse});

  for (size_t i = 0; i < 2; ++i) {
    const IterationRecord& a = results[0].iterations[i];
    const IterationRecord& b = results[1].iterations[i];
    // The dense compressor's only kernel is the averaging (dense_scale over d).
    REQUIRE(b.kernel_s.size() == 1);
    CHECK(b.kernel_s.count("dense_scale") == 1);
    CHECK(
        b.compression_s ==
        doctest::Approx(profile.kernel_seconds("dense_scale", cost::KernelShape{1320000, 0, 0, 0}))
            .scale(0));
    CHECK(b.iteration_s == doctest::Approx(a.iteration_s + b.compression_s).epsilon(1e-9).scale(0));
    CHECK(b.bytes_sent_per_worker == a.bytes_sent_per_worker);
    CHECK(run.quality[i].cosine == doctest::Approx(1.0).epsilon(1e-6).scale(0));
    // Against the dense average, not the sum of the workers' gradients.
    CHECK(run.quality[i].rel_l2 < 1e-5);
    CHECK(run.quality[i].energy_share == doctest::Approx(1.0).epsilon(1e-5).scale(0));
    CHECK(run.quality[i].density_after_aggregation == doctest::Approx(1.0).epsilon(1e-3).scale(0));

    // top-k: kernels are charged, bytes are the real selection's, and the
    // breakdown adds up.
    const IterationRecord& c = results[2].iterations[i];
    CHECK(c.compression_s > 0);
    CHECK(c.kernel_s.count("topk_select") == 1);
    CHECK(c.bytes_sent_per_worker < a.bytes_sent_per_worker / 10);
    CHECK(
        c.iteration_s ==
        doctest::Approx(c.compute_s + c.compression_s + c.communication_s).epsilon(1e-9).scale(0));
    // A ring allgather of k (index, value) pairs: each worker forwards P-1 blocks.
    const double k = 13200; // floor(0.01 * 1,320,000)
    CHECK(c.bytes_sent_per_worker == (kWorkers - 1) * k * 8);
    CHECK(topk_run.quality[i].bytes_sent_mean == k * 8); // the library counts contributions
  }
}

TEST_CASE("a leader's bytes count once in the mean over workers") {
  // CLT-k: the leader (t mod P) broadcasts k indices, then every worker's k
  // values are allreduced. Only the root counts a broadcast's bytes, so the
  // mean per worker is k * 4 (its allreduce buffer) + k * 4 / P.
  constexpr int kWorkers = 4;
  Workload workload;
  workload.name = "one-layer";
  workload.layers.push_back({"layer", "linear", 100000, 1e9, 2e9, {}, {}, {}});
  const cost::DeviceProfile profile =
      cost::DeviceProfile::load(source_root() / "platforms/devices/v100.json");
  auto cltk = compress::make_compressor("cltk", {{"density", 0.01}});
  std::unique_ptr<GradientFeed> feed = make_synthetic_feed(workload, kWorkers, 5);
  const CompressedRun run = run_compressor(*cltk, *feed, kWorkers, kWorkers, 5, profile);
  const double k = 1000;
  for (size_t t = 0; t < kWorkers; ++t) {
    CAPTURE(t);
    CHECK(run.quality[t].info.at("leader") == t);
    CHECK(run.quality[t].bytes_sent_mean == k * 4 + k * 4 / kWorkers);
  }
}
