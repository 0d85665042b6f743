// Compression kernels that run while the backward pass computes: by default
// they overlap it for free; with kernels_share_device they share the
// worker's device with it, so the work of both is conserved. One part whose
// kernel (K) becomes ready after the last layer's backward and runs beside
// the first layer's (B > K): free, the backward pass is not slowed; shared,
// both run at half speed while both run, so the backward pass ends K later.
// And uneven workers without stragglers: an iteration ends when its slowest
// worker ends, and with compute_variation 0 no part of it is a straggler
// wait (result.json has no such field then: the wait is communication).

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

// The kernel runs on the first `kernel_workers` workers (the others have
// none), its part ready once layer `ready_layer`'s gradient is computed,
// before step `before_step` (1: after the allgather).
IterationPlan plan(bool share, int ready_layer = 1, size_t before_step = 0,
                   int kernel_workers = kWorkers) {
  IterationPlan plan;
  plan.layers = {{kForward / 2, kBackwardFirst}, {kForward / 2, kBackwardLast}};
  plan.layer_bytes = {40000, 40000};
  plan.optimizer_s = kOptimizer;
  plan.bucket_bytes = 40000;
  plan.overlap = true;
  plan.kernels_share_device = share;
  plan.iterations = 2;
  for (int i = 0; i < plan.iterations; ++i) {
    CompressionPart part;
    part.ready_layer = ready_layer;
    part.kernels.resize(kWorkers);
    for (int w = 0; w < kernel_workers; ++w)
      part.kernels[static_cast<size_t>(w)].push_back({"select", kKernel, before_step});
    StepPlan step;
    step.kind = StepPlan::Kind::allgather;
    step.label = "pairs";
    step.participants = {0, 1};
    step.bytes = {8, 8}; // tiny: done long before the backward pass ends
    part.steps.push_back(step);
    plan.compressed.push_back({{part}});
  }
  return plan;
}

// Both test cases' runs: one SimGrid engine per process, so one simulation.
const std::vector<RunResult>& runs() {
  static const std::vector<RunResult> results =
      simulate(testing::star_platform("pair", kWorkers, 1.25e9, 1e-6),
               {plan(false), plan(true), plan(false, 0, 1, 1), plan(true, 1, 0, 1)});
  return results;
}

} // namespace

TEST_CASE("kernels beside the backward pass share the device only when asked") {
  const std::vector<RunResult> results(runs().begin(), runs().begin() + 2);
  REQUIRE(results.size() == 2);
  const double compute = kForward + kBackwardFirst + kBackwardLast + kOptimizer;
  for (size_t i = 0; i < results[0].iterations.size(); ++i) {
    const IterationRecord& free_run = results[0].iterations[i];
    const IterationRecord& shared_run = results[1].iterations[i];
    // Free: the kernel hides entirely behind layer 0's backward.
    CHECK(free_run.compute_s == doctest::Approx(compute).epsilon(1e-12).scale(0));
    CHECK(free_run.compression_exposed_s == 0.0);
    CHECK(free_run.kernel_s.at("select") == doctest::Approx(kKernel).epsilon(1e-12).scale(0));
    // Shared: the kernel runs at half speed for 2K, the backward pass loses K.
    CHECK(shared_run.compute_s == doctest::Approx(compute + kKernel).epsilon(1e-9).scale(0));
    CHECK(shared_run.kernel_s.at("select") == doctest::Approx(2 * kKernel).epsilon(1e-9).scale(0));
    CHECK(shared_run.iteration_s ==
          doctest::Approx(free_run.iteration_s + kKernel).epsilon(1e-9).scale(0));
    CHECK(shared_run.compression_exposed_s == 0.0);
  }
}

// Two workers, two layers; only worker 0 runs a kernel of K seconds:
//   after: once the backward pass has ended, after the allgather: worker 0
//     ends K after worker 1, and the iteration with it;
//   beside: ready after the last layer's backward, sharing worker 0's device
//     with layer 0's backward (kernels_share_device): both at half speed
//     while both run, so worker 0's compute is K longer, worker 1 waits K.
TEST_CASE("the slowest worker ends the iteration; without stragglers nothing is a straggler wait") {
  const std::vector<RunResult> results(runs().begin() + 2, runs().end());
  REQUIRE(results.size() == 2);
  const double compute = kForward + kBackwardFirst + kBackwardLast + kOptimizer;
  for (size_t i = 0; i < results[0].iterations.size(); ++i) {
    CAPTURE(i);
    // After: worker 0's kernel follows the allgather, exposed whole.
    const IterationRecord& after = results[0].iterations[i];
    CHECK(after.iteration_s == doctest::Approx(compute + kKernel).epsilon(1e-3).scale(0));
    CHECK(after.compute_s == doctest::Approx(compute).epsilon(1e-12).scale(0));
    CHECK(after.compression_exposed_s == doctest::Approx(kKernel).epsilon(1e-9).scale(0));
    CHECK(after.kernel_s.at("select") == doctest::Approx(kKernel / 2).epsilon(1e-12).scale(0));
    // Beside: worker 0 computes K longer; the mean worker K / 2.
    const IterationRecord& beside = results[1].iterations[i];
    CHECK(beside.iteration_s == doctest::Approx(compute + kKernel).epsilon(1e-9).scale(0));
    CHECK(beside.compute_s == doctest::Approx(compute + kKernel / 2).epsilon(1e-9).scale(0));
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
