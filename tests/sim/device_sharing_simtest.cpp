// Compression kernels that run while the backward pass computes: by default
// they overlap it for free; with kernels_share_device they share the
// worker's device with it, so the work of both is conserved. One part whose
// kernel (K) becomes ready after the last layer's backward and runs beside
// the first layer's (B > K): free, the backward pass is not slowed; shared,
// both run at half speed while both run, so the backward pass ends K later.

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

IterationPlan plan(bool share) {
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
    part.ready_layer = 1; // ready once layer 1's gradient is computed
    part.kernels.assign(kWorkers, {{"select", kKernel, 0}});
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

} // namespace

TEST_CASE("kernels beside the backward pass share the device only when asked") {
  const net::PlatformSpec platform = testing::star_platform("pair", kWorkers, 1.25e9, 1e-6);
  std::vector<RunResult> results = simulate(platform, {plan(false), plan(true)});
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
