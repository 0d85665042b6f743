// The iteration model's time accounting: with overlap, an iteration is never
// longer than compute plus communication nor shorter than either; with one
// bucket bigger than the model it is exactly compute plus one allreduce;
// without overlap it is compute plus every bucket's allreduce in turn.

#include "sim/network/alpha_beta.hpp"
#include "sim/training/iteration_model.hpp"
#include "tests/sim/test_platforms.hpp"

#include <cmath>
#include <random>

#include <doctest/doctest.h>

using namespace gcsim;
using namespace gcsim::training;

namespace {

constexpr double kBandwidth = 1.25e9;
constexpr double kLatency = 5e-6;
constexpr int kWorkers = 8;

IterationPlan random_plan(std::mt19937& random, uint64_t bucket_bytes, bool overlap) {
  IterationPlan plan;
  std::uniform_real_distribution<double> seconds(1e-4, 5e-3);
  std::uniform_int_distribution<uint64_t> bytes(1000, 8000000);
  for (int layer = 0; layer < 30; ++layer) {
    plan.layers.push_back({seconds(random), seconds(random)});
    plan.layer_bytes.push_back(bytes(random));
  }
  plan.optimizer_s = 1e-3;
  plan.bucket_bytes = bucket_bytes;
  plan.overlap = overlap;
  plan.iterations = 2;
  return plan;
}

double compute_of(const IterationPlan& plan) {
  double total = plan.optimizer_s;
  for (const LayerTimes& layer : plan.layers)
    total += layer.forward_s + layer.backward_s;
  return total;
}

} // namespace

TEST_CASE("buckets hold every gradient once, in backward order") {
  std::vector<uint64_t> bytes{10, 20, 30, 40, 50};
  std::vector<Bucket> buckets = make_buckets(bytes, 60, 0);
  // Backward order: 50+40 reaches 60 first, then 30+20+10.
  REQUIRE(buckets.size() == 2);
  CHECK(buckets[0].first_layer == 3);
  CHECK(buckets[0].last_layer == 4);
  CHECK(buckets[0].bytes == 90);
  CHECK(buckets[1].first_layer == 0);
  CHECK(buckets[1].last_layer == 2);
  CHECK(buckets[1].bytes == 60);
  // A last, partly filled bucket is still reduced.
  std::vector<Bucket> tail = make_buckets(bytes, 100, 0);
  REQUIRE(tail.size() == 2);
  CHECK(tail[1].bytes == 30);
  CHECK(make_buckets(bytes, 1000, 0).size() == 1);
  CHECK(make_buckets(bytes, 1, 0).size() == 5);
  // A bucket that reaches the cap exactly is full (DDP's size >= limit).
  const std::vector<Bucket> exact = make_buckets({30, 30, 30}, 60, 0);
  REQUIRE(exact.size() == 2);
  CHECK(exact[0].first_layer == 1);
  CHECK(exact[0].bytes == 60);
  CHECK(exact[1].bytes == 30);
  // DDP's small first bucket: the last layers' gradients go out on their own.
  const std::vector<Bucket> ddp = make_buckets(bytes, 60, 45);
  REQUIRE(ddp.size() == 3);
  CHECK(ddp[0].first_layer == 4);
  CHECK(ddp[0].bytes == 50);
  CHECK(ddp[1].first_layer == 2);
  CHECK(ddp[1].bytes == 70);
  CHECK(ddp[2].bytes == 30);
  // Parameter-free layers first in the model (a pooling): no empty bucket,
  // whose allreduce would cost 2(P-1) latencies for nothing. A bucket spans
  // the layers whose gradients it holds.
  const std::vector<Bucket> pooled = make_buckets({0, 0, 40, 0, 8}, 1, 0);
  REQUIRE(pooled.size() == 2);
  CHECK(pooled[0].first_layer == 4);
  CHECK(pooled[1].first_layer == 2);
  CHECK(pooled[1].last_layer == 2);
  CHECK(pooled[1].bytes == 40);
  // Nor does the backward pass of a parameter-free first layer hold back the
  // last, open bucket: it was ready only once layer 0 was through.
  const std::vector<Bucket> open = make_buckets({0, 40, 0, 8}, 100, 0);
  REQUIRE(open.size() == 1);
  CHECK(open[0].first_layer == 1);
  CHECK(open[0].last_layer == 3);
  CHECK(open[0].bytes == 48);
}

TEST_CASE("iteration time bounds and exact cases on SimGrid") {
  std::mt19937 random(7);
  std::vector<IterationPlan> plans;
  for (uint64_t bucket : {uint64_t{1} << 20, uint64_t{25} << 20, uint64_t{4} << 20})
    plans.push_back(random_plan(random, bucket, true));
  plans.push_back(random_plan(random, uint64_t{1} << 40, true));  // one bucket
  plans.push_back(random_plan(random, uint64_t{4} << 20, false)); // no overlap

  const net::PlatformSpec platform =
      testing::star_platform("bounds", kWorkers, kBandwidth, kLatency);
  std::vector<RunResult> results = simulate(platform, plans);
  REQUIRE(results.size() == plans.size());

  const net::alpha_beta::Cost cost{2 * kLatency, 1 / kBandwidth};
  for (size_t p = 0; p < plans.size(); ++p) {
    INFO("plan " << p);
    const double compute = compute_of(plans[p]);
    double allreduce_sum = 0;
    for (const Bucket& bucket : results[p].buckets)
      allreduce_sum += net::alpha_beta::ring_allreduce(cost, kWorkers, bucket.bytes);
    for (const IterationRecord& record : results[p].iterations) {
      CHECK(record.compute_s == doctest::Approx(compute).epsilon(1e-12).scale(0));
      // Nothing else is on the network: the collectives take their oracle time.
      // (SimGrid's clock advances in floating point: 1e-7 relative slack.)
      CHECK(record.communication_total_s == doctest::Approx(allreduce_sum).epsilon(1e-7).scale(0));
      const double slack = 1e-7 * record.iteration_s;
      CHECK(record.iteration_s <= compute + record.communication_total_s + slack);
      CHECK(record.iteration_s >= std::max(compute, record.communication_total_s) - slack);
      CHECK(record.bytes_sent_per_worker > 0);
      // A dense iteration sends nothing but its buckets' allreduces.
      CHECK(record.bytes_by_step.at("allreduce gradient buckets") == record.bytes_sent_per_worker);
    }
  }
  // One bucket bigger than the model: compute + exactly one allreduce.
  REQUIRE(results[3].buckets.size() == 1);
  for (const IterationRecord& record : results[3].iterations)
    CHECK(record.iteration_s ==
          doctest::Approx(compute_of(plans[3]) + net::alpha_beta::ring_allreduce(
                                                     cost, kWorkers, results[3].buckets[0].bytes))
              .epsilon(1e-7)
              .scale(0));
  // Without overlap every bucket waits for the whole backward pass.
  for (const IterationRecord& record : results[4].iterations)
    CHECK(record.iteration_s == doctest::Approx(compute_of(plans[4]) + record.communication_total_s)
                                    .epsilon(1e-7)
                                    .scale(0));
  // With small buckets overlap really hides communication.
  CHECK(results[0].iterations[0].iteration_s <
        compute_of(plans[0]) + results[0].iterations[0].communication_total_s - 1e-4);
}
