// Uneven workers without stragglers: an iteration ends when its slowest
// worker ends, and with compute_variation 0 no part of it is a straggler
// wait (result.json has no such field then: the wait is communication).
// Two workers, two layers; only worker 0 runs a kernel of K seconds:
//   after: once the backward pass has ended, after the allgather: worker 0
//     ends K after worker 1, and the iteration with it;
//   beside: ready after the last layer's backward, sharing worker 0's device
//     with layer 0's backward (kernels_share_device): both at half speed
//     while both run, so worker 0's compute is K longer, worker 1 waits K.

#include "sim/training/iteration_model.hpp"
#include "tests/sim/test_platforms.hpp"

#include <doctest/doctest.h>

using namespace gcsim;
using namespace gcsim::training;

namespace {

constexpr int kWorkers = 2;
constexpr double kForward = 2e-3;
constexpr double kBackwardFirst = 6e-3; // layer 0, computed last
constexpr double kBackwardLast = 3e-3;  // layer 1, computed first
constexpr double kOptimizer = 1e-3;
constexpr double kKernel = 2e-3;
constexpr double kCompute = kForward + kBackwardFirst + kBackwardLast + kOptimizer;

IterationPlan leader_plan(int ready_layer, size_t before_step, bool share) {
  IterationPlan plan;
  plan.layers = {{kForward / 2, kBackwardFirst}, {kForward / 2, kBackwardLast}};
  plan.layer_bytes = {40000, 40000};
  plan.optimizer_s = kOptimizer;
  plan.bucket_bytes = 40000;
  plan.kernels_share_device = share;
  plan.iterations = 3;
  for (int i = 0; i < plan.iterations; ++i) {
    CompressionPart part;
    part.ready_layer = ready_layer;
    part.kernels.resize(kWorkers);
    part.kernels[0].push_back({"select", kKernel, before_step});
    StepPlan step;
    step.kind = StepPlan::Kind::allgather;
    step.label = "pairs";
    step.participants = {0, 1};
    step.bytes = {8, 8}; // a few microseconds
    part.steps.push_back(step);
    plan.compressed.push_back({{part}});
  }
  return plan;
}

} // namespace

TEST_CASE("the slowest worker ends the iteration; without stragglers nothing is a straggler wait") {
  const net::PlatformSpec platform = testing::star_platform("pair", kWorkers, 1.25e9, 1e-6);
  const std::vector<RunResult> results =
      simulate(platform, {leader_plan(0, 1, false), leader_plan(1, 0, true)});
  REQUIRE(results.size() == 2);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    // After: worker 0's kernel follows the allgather, exposed whole.
    const IterationRecord& after = results[0].iterations[i];
    CHECK(after.iteration_s == doctest::Approx(kCompute + kKernel).epsilon(1e-3).scale(0));
    CHECK(after.compute_s == doctest::Approx(kCompute).epsilon(1e-12).scale(0));
    CHECK(after.compression_exposed_s == doctest::Approx(kKernel).epsilon(1e-9).scale(0));
    CHECK(after.kernel_s.at("select") == doctest::Approx(kKernel / 2).epsilon(1e-12).scale(0));
    // Beside: worker 0 computes K longer; the mean worker K / 2.
    const IterationRecord& beside = results[1].iterations[i];
    CHECK(beside.iteration_s == doctest::Approx(kCompute + kKernel).epsilon(1e-9).scale(0));
    CHECK(beside.compute_s == doctest::Approx(kCompute + kKernel / 2).epsilon(1e-9).scale(0));
    CHECK(beside.compression_exposed_s == 0.0);
    CHECK(beside.straggler_wait_s == 0.0);
    // Worker 1's wait for worker 0 is communication, and the phases add up.
    CHECK(beside.communication_s == doctest::Approx(kKernel / 2).epsilon(1e-6).scale(0));
    CHECK(beside.iteration_s ==
          doctest::Approx(beside.compute_s + beside.compression_exposed_s + beside.communication_s)
              .epsilon(1e-9)
              .scale(0));
  }
}
