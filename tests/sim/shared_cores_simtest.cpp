// Workers that are processes of one machine share its cores (the validation
// mini-cluster: P network namespaces on a 2-core machine). Four workers on
// two cores: while all four compute, each runs at half a core, so an
// iteration's compute takes twice its one-core cost; when the workers take
// turns (a compressed part's kernels on one worker only) nothing slows down.

#include "sim/input/atomic_write.hpp"
#include "sim/network/alpha_beta.hpp"
#include "sim/network/forked.hpp"
#include "sim/training/iteration_model.hpp"
#include "tests/sim/test_platforms.hpp"

#include <cstring>

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

// gloo sums float16 on the CPU: each reduce-scatter step of fp16's ring
// allreduce takes the longer of its transfer and its sum, the sum shared
// like compute. A chunk of 300 kB at 100 ns a byte is 30 ms of one core,
// its transfer 24 ms; the allgather's steps carry no sum.
TEST_CASE("a costed sum bounds the ring's reduce-scatter steps") {
  constexpr uint64_t kBytes = 1200000;
  constexpr double kPerByte = 100e-9;
  auto summed_plan = [&](double per_byte) {
    IterationPlan plan = dense_plan();
    plan.allreduce_sum_s_per_byte = per_byte;
    for (int i = 0; i < plan.iterations; ++i) {
      StepPlan step;
      step.kind = StepPlan::Kind::allreduce;
      step.label = "allreduce float16 gradient";
      step.participants = {0, 1, 2, 3};
      step.bytes = std::vector<uint64_t>(kWorkers, kBytes);
      CompressionPart part;
      part.ready_layer = 0;
      part.kernels.resize(kWorkers);
      part.steps.push_back(step);
      plan.compressed.push_back({{part}});
    }
    return plan;
  };
  const net::alpha_beta::Cost cost{2 * kLatency, 1 / kBandwidth};
  const double transfer = net::alpha_beta::ring_allgather(cost, kWorkers, kBytes / kWorkers) / 3;
  const double one_core = kForward + kBackward + kOptimizer;
  const double sum_alone = kBytes / kWorkers * kPerByte;
  REQUIRE(sum_alone > transfer);
  for (int cores : {0, 2}) {
    CAPTURE(cores);
    net::PlatformSpec platform =
        testing::star_platform("one-machine", kWorkers, kBandwidth, kLatency);
    platform.shared_cores = cores;
    // Four workers on two cores: the sums, like the compute, at half a core.
    const double share = cores == 0 ? 1.0 : 2.0;
    // One SimGrid engine per process: each platform's runs in a child (this
    // test comes first, while the process has none to hand down).
    const net::ForkedResult child = net::run_forked(
        [&](int fd) {
          std::vector<double> times;
          for (const RunResult& result :
               simulate(platform, {summed_plan(0), summed_plan(kPerByte), summed_plan(1e-9)}))
            for (const IterationRecord& record : result.iterations)
              times.push_back(record.iteration_s);
          return write_all(fd, times.data(), times.size() * sizeof(double)) ? 0 : 1;
        },
        net::ChildPipe::argument, 1 << 16);
    REQUIRE_MESSAGE(child.exited(0), child.output);
    std::vector<double> times(child.output.size() / sizeof(double));
    std::memcpy(times.data(), child.output.data(), times.size() * sizeof(double));
    REQUIRE(times.size() == 9);
    const double compute = share * one_core;
    const double plain = compute + 6 * transfer;
    const double summed = compute + 3 * share * sum_alone + 3 * transfer;
    // A sum shorter than the transfer (the third run) hides under it.
    for (size_t i = 0; i < 9; ++i)
      CHECK(times[i] == doctest::Approx(i / 3 == 1 ? summed : plain).epsilon(1e-6).scale(0));
  }
}

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
