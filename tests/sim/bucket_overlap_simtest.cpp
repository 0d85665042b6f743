// Per-bucket compression overlaps the backward pass; whole-model compression
// waits for it. The same top-k on the same gradients and network:
//   model scope: one part, ready when the backward pass ends;
//   bucket scope: one top-k per bucket, each ready when the backward pass
//     reaches the bucket, so the early buckets' kernels and allgathers hide
//     behind the rest of the backward pass;
//   bucket scope, overlap off: the same parts, all started after backward
//     (a part's first kernels as soon as the device is free, during the
//     earlier parts' allgathers);
//   bucket scope with one bucket: the same as model scope, exactly.

#include "compressors/registry.hpp"
#include "sim/cost/device_profile.hpp"
#include "sim/input/paths.hpp"
#include "sim/training/compression.hpp"
#include "sim/training/iteration_model.hpp"
#include "tests/sim/test_platforms.hpp"

#include <limits>

#include <doctest/doctest.h>

using namespace gcsim;
using namespace gcsim::training;

namespace {

constexpr int kWorkers = 8;
constexpr int kIterations = 2;
const nlohmann::json kTopk = {{"density", 0.01}};

Workload four_layers() {
  Workload workload;
  workload.name = "four-layers";
  for (int64_t params : {400000, 300000, 200000, 100000})
    workload.layers.push_back(
        {"layer" + std::to_string(params), "linear", params, 1e9, 2e9, {}, {}, {}});
  return workload;
}

IterationPlan base_plan(const Workload& workload, uint64_t bucket_bytes) {
  IterationPlan plan;
  for (const Layer& layer : workload.layers) {
    plan.layers.push_back({1e-3, 4e-3});
    plan.layer_bytes.push_back(static_cast<uint64_t>(layer.parameters) * 4);
  }
  plan.optimizer_s = 5e-4;
  plan.bucket_bytes = bucket_bytes;
  plan.iterations = kIterations;
  return plan;
}

CompressedRun per_bucket(const Workload& workload, const IterationPlan& plan,
                         const cost::DeviceProfile& profile) {
  std::unique_ptr<GradientFeed> feed = make_synthetic_feed(workload, kWorkers, 3);
  return run_compressor_per_bucket([] { return compress::make_compressor("topk", kTopk); }, *feed,
                                   plan_buckets(plan), plan.layer_bytes, kWorkers, kIterations, 3,
                                   profile);
}

double first_start(const std::vector<TimelineEvent>& timeline, int plan, int worker,
                   const std::string& category) {
  double first = 1e300;
  for (const TimelineEvent& event : timeline)
    if (event.plan == plan && event.worker == worker && event.category == category)
      first = std::min(first, event.start_s);
  return first;
}

double first_backward_end(const std::vector<TimelineEvent>& timeline, int plan) {
  for (const TimelineEvent& event : timeline)
    if (event.plan == plan && event.worker == 0 && event.name == "backward")
      return event.end_s;
  return -1;
}

} // namespace

TEST_CASE("per-bucket compression overlaps the backward pass") {
  const Workload workload = four_layers();
  cost::DeviceProfile profile =
      cost::DeviceProfile::load(source_root() / "platforms/devices/v100.json");

  // One layer per bucket (the smallest layer is 400 kB).
  IterationPlan model = base_plan(workload, 300000);
  {
    auto topk = compress::make_compressor("topk", kTopk);
    std::unique_ptr<GradientFeed> feed = make_synthetic_feed(workload, kWorkers, 3);
    model.compressed = run_compressor(*topk, *feed, kWorkers, kIterations, 3, profile).schedule;
  }
  IterationPlan bucket = base_plan(workload, 300000);
  CompressedRun bucket_run = per_bucket(workload, bucket, profile);
  bucket.compressed = bucket_run.schedule;
  IterationPlan serial = bucket;
  serial.overlap = false;
  IterationPlan one_bucket = base_plan(workload, uint64_t{1} << 40);
  one_bucket.compressed = per_bucket(workload, one_bucket, profile).schedule;

  REQUIRE(bucket.compressed.front().parts.size() == 4);
  // Backward order: the last layer's bucket first, ready at layer 3.
  CHECK(bucket.compressed.front().parts.front().ready_layer == 3);
  CHECK(bucket.compressed.front().parts.back().ready_layer == 0);
  REQUIRE(model.compressed.front().parts.size() == 1);
  CHECK(model.compressed.front().parts.front().ready_layer == 0);

  const net::PlatformSpec platform = testing::star_platform(
      "overlap", kWorkers, 1.25e8, 5e-6); // 1 Gbps: the allgathers take milliseconds
  std::vector<TimelineEvent> timeline;
  std::vector<RunResult> results =
      simulate(platform, {model, bucket, serial, one_bucket}, {}, &timeline);

  for (size_t i = 0; i < kIterations; ++i) {
    CAPTURE(i);
    const IterationRecord& m = results[0].iterations[i];
    const IterationRecord& b = results[1].iterations[i];
    const IterationRecord& s = results[2].iterations[i];
    const IterationRecord& one = results[3].iterations[i];
    // k per bucket: floor(0.01 * layer) pairs of 8 bytes, ring allgather of
    // P blocks: each worker forwards P - 1 of them.
    CHECK(b.bytes_sent_per_worker == (kWorkers - 1) * (4000 + 3000 + 2000 + 1000) * 8.0);
    CHECK(s.bytes_sent_per_worker == b.bytes_sent_per_worker);
    // The same parts: overlap only moves them earlier.
    CHECK(s.compression_s == doctest::Approx(b.compression_s).scale(0));
    CHECK(b.iteration_s < s.iteration_s - 5e-3);
    CHECK(b.iteration_s < m.iteration_s - 5e-3);
    // Serial: every kernel runs after the backward pass, one at a time on
    // the device, so all of the compression is exposed; the later parts'
    // first kernels run while the earlier parts' allgathers are in flight,
    // so not all of the communication is.
    CHECK(s.compression_exposed_s == doctest::Approx(s.compression_s).epsilon(1e-9).scale(0));
    CHECK(s.iteration_s >= s.compute_s + s.compression_s);
    CHECK(s.iteration_s < s.compute_s + s.compression_s + s.communication_total_s - 1e-4);
    // The breakdown adds up with the kernels' exposed part: all of it for
    // model scope, less for buckets that ran beside the backward pass.
    CHECK(m.compression_exposed_s == doctest::Approx(m.compression_s).epsilon(1e-9).scale(0));
    CHECK(b.compression_exposed_s < b.compression_s);
    double by_kernel = 0;
    for (const auto& [name, seconds] : b.kernel_exposed_s)
      by_kernel += seconds;
    CHECK(by_kernel == doctest::Approx(b.compression_exposed_s).epsilon(1e-12).scale(0));
    CHECK(b.iteration_s ==
          doctest::Approx(b.compute_s + b.compression_exposed_s + b.communication_s)
              .epsilon(1e-9)
              .scale(0));
    // One bucket holding everything is model scope (plans start at other
    // clock values, hence the rounding).
    CHECK(one.iteration_s == doctest::Approx(m.iteration_s).epsilon(1e-9).scale(0));
    CHECK(one.bytes_sent_per_worker == m.bytes_sent_per_worker);
    CHECK(bucket_run.quality[i].density_after_aggregation > 0.01);
  }
  // First iteration, worker 0: bucket scope communicates before the backward
  // pass ends; model scope and overlap off do not.
  CHECK(first_start(timeline, 1, 0, "communication") < first_backward_end(timeline, 1));
  CHECK(first_start(timeline, 1, 0, "kernel") < first_backward_end(timeline, 1));
  CHECK(first_start(timeline, 0, 0, "communication") >= first_backward_end(timeline, 0));
  CHECK(first_start(timeline, 2, 0, "kernel") >= first_backward_end(timeline, 2));

  // A part's first kernels wait for the device, not for the earlier parts'
  // steps: with overlap off every part is ready when the backward pass ends,
  // and the second part's top-k runs during the first part's allgather.
  double first_allgather_end = std::numeric_limits<double>::infinity();
  const double first_communication = first_start(timeline, 2, 0, "communication");
  for (const TimelineEvent& event : timeline)
    if (event.plan == 2 && event.worker == 0 && event.category == "communication" &&
        event.start_s == first_communication)
      first_allgather_end = event.end_s;
  size_t kernels_during_allgather = 0;
  for (const TimelineEvent& event : timeline)
    if (event.plan == 2 && event.worker == 0 && event.category == "kernel" &&
        event.start_s >= first_communication && event.start_s < first_allgather_end)
      ++kernels_during_allgather;
  // The first part's kernels before its allgather are done by then, its
  // scatter_add waits for the allgather: these are a later part's.
  CHECK(kernels_during_allgather > 0);
}

TEST_CASE("per-bucket runs cut a spec's tensors at its layers' edges") {
  // Two linear layers of a weight and a bias each, a bucket a layer: each
  // bucket's compressor sees its layer's two tensors, so DGC allreduces
  // that layer's bias whole (its own bytes, not the other's) beside the
  // weight's pairs.
  const auto linear = [](std::string name, int64_t out, int64_t in, std::string bias) {
    return Layer{std::move(name),
                 "linear",
                 out * in + out,
                 1e9,
                 2e9,
                 {Tensor{"weight", {out, in}}, Tensor{std::move(bias), {out}}},
                 {},
                 {}};
  };
  Workload workload;
  workload.name = "two-linear";
  workload.layers = {linear("fc1", 1000, 200, "bias"),
                     {"relu", "other", 0, 1e6, 2e6, {}, {}, {}},
                     linear("fc2", 10, 1000, "")}; // an unnamed bias
  cost::DeviceProfile profile =
      cost::DeviceProfile::load(source_root() / "platforms/devices/v100.json");
  const IterationPlan plan = base_plan(workload, 1000); // a bucket a layer
  std::unique_ptr<GradientFeed> feed = make_synthetic_feed(workload, kWorkers, 3);
  REQUIRE(feed->layout().size() == 4);
  const CompressedRun run = run_compressor_per_bucket(
      [] {
        return compress::make_compressor("dgc", {{"density", 0.01}});
      },
      *feed, plan_buckets(plan), plan.layer_bytes, kWorkers, kIterations, 3, profile);
  const std::vector<CompressionPart>& parts = run.schedule.front().parts;
  REQUIRE(parts.size() == 2);
  // Backward order: fc2's bucket first, then fc1's.
  std::vector<uint64_t> whole_bytes;
  for (const CompressionPart& part : parts)
    for (const StepPlan& step : part.steps)
      if (step.label == "allreduce the uncompressed layers")
        whole_bytes.push_back(step.bytes.front());
  CHECK(whole_bytes == std::vector<uint64_t>{10 * 4, 1000 * 4});
}
