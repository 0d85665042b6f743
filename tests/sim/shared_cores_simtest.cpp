// Workers that are processes of one machine share its cores (the validation
// mini-cluster: P network namespaces on a 2-core machine). Four workers on
// two cores: while all four compute, each runs at half a core, so an
// iteration's compute takes twice its one-core cost; when the workers take
// turns (a compressed part's kernels on one worker only) nothing slows down.

#include "sim/network/alpha_beta.hpp"
#include "sim/training/iteration_model.hpp"
#include "tests/sim/test_platforms.hpp"

#include <doctest/doctest.h>

using namespace gcsim;
using namespace gcsim::training;

namespace {

constexpr int kWorkers = 4;
constexpr double kBandwidth = 12.5e6; // 100 Mbit/s
constexpr double kLatency = 50e-6;
constexpr double kForward = 3e-3;
constexpr double kBackward = 5e-3;
constexpr double kOptimizer = 1e-3;
constexpr uint64_t kGradientBytes = 120000;

IterationPlan dense_plan() {
  IterationPlan plan;
  plan.layers = {{kForward, kBackward}};
  plan.layer_bytes = {kGradientBytes};
  plan.optimizer_s = kOptimizer;
  plan.bucket_bytes = kGradientBytes;
  plan.overlap = false;
  plan.iterations = 3;
  return plan;
}

// A compressed iteration whose one part runs a kernel on worker 0 alone and
// then a broadcast from it, as a leader's selection does.
IterationPlan leader_plan(double kernel_s) {
  IterationPlan plan = dense_plan();
  for (int i = 0; i < plan.iterations; ++i) {
    CompressedIteration iteration;
    CompressionPart part;
    part.ready_layer = 0;
    part.kernels.resize(kWorkers);
    part.kernels[0].push_back({"select", kernel_s, 0});
    StepPlan step;
    step.kind = StepPlan::Kind::broadcast;
    step.label = "indices";
    step.root = 0;
    step.participants = {0, 1, 2, 3};
    step.bytes = std::vector<uint64_t>(kWorkers, 4000);
    part.steps.push_back(step);
    iteration.parts.push_back(part);
    plan.compressed.push_back(iteration);
  }
  return plan;
}

} // namespace

TEST_CASE("workers sharing a machine's cores share its compute") {
  net::PlatformSpec platform =
      testing::star_platform("one-machine", kWorkers, kBandwidth, kLatency);
  platform.shared_cores = 2;
  const double kernel_s = 4e-3;
  std::vector<RunResult> results = simulate(platform, {dense_plan(), leader_plan(kernel_s)});
  REQUIRE(results.size() == 2);

  const net::alpha_beta::Cost cost{2 * kLatency, 1 / kBandwidth};
  const double allreduce = net::alpha_beta::ring_allreduce(cost, kWorkers, kGradientBytes);
  const double one_core = kForward + kBackward + kOptimizer;
  // Four workers on two cores: every compute phase takes twice its cost.
  for (const IterationRecord& record : results[0].iterations) {
    CHECK(record.compute_s == doctest::Approx(2 * one_core).epsilon(1e-9).scale(0));
    CHECK(record.iteration_s == doctest::Approx(2 * one_core + allreduce).epsilon(1e-7).scale(0));
  }
  // The leader's kernel runs while the others wait: it has a core to itself.
  const double broadcast = net::alpha_beta::binomial_broadcast(cost, kWorkers, 4000);
  for (const IterationRecord& record : results[1].iterations) {
    CHECK(record.kernel_s.at("select") ==
          doctest::Approx(kernel_s / kWorkers).epsilon(1e-9).scale(0));
    CHECK(record.iteration_s ==
          doctest::Approx(2 * one_core + kernel_s + broadcast).epsilon(1e-7).scale(0));
  }
}
