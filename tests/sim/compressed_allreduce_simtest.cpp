// A compressor's allreduce steps over every worker of a multi-GPU platform
// run what the dense buckets run there: gs-SGD's tree (`allreduce_tree`)
// the trees NCCL builds (the double binary tree over the machines' first
// GPUs, each machine's GPUs in a chain), and the steps that leave the
// algorithm to the run (`allreduce`: DEFT's, CLT-k's, random-k's ...) the
// run's training.allreduce, hierarchical rings included (`run_step`'s
// choices; a step over a subset takes the flat shapes over its
// participants).

#include "sim/training/iteration_model.hpp"
#include "tests/sim/test_platforms.hpp"

#include <cstdint>
#include <numeric>
#include <vector>

#include <doctest/doctest.h>

using namespace gcsim;
using namespace gcsim::training;

namespace {

constexpr int kNodes = 4;
constexpr int kPerNode = 4;
constexpr int kWorkers = kNodes * kPerNode;
constexpr uint64_t kBytes = uint64_t{4} << 20;

// One layer, one bucket reduced after the backward pass.
IterationPlan dense(AllreduceAlgorithm algorithm, int ranks_per_node = kPerNode) {
  IterationPlan plan;
  plan.layers.push_back({1e-3, 2e-3});
  plan.layer_bytes.push_back(kBytes);
  plan.optimizer_s = 5e-4;
  plan.bucket_bytes = uint64_t{1} << 40;
  plan.overlap = false;
  plan.algorithm = algorithm;
  plan.ranks_per_node = ranks_per_node;
  return plan;
}

// The same reduction as one compressed step of `kind` over every worker
// after the backward pass, no kernels, in a run whose allreduce is
// `algorithm`.
IterationPlan compressed(StepPlan::Kind kind, AllreduceAlgorithm algorithm) {
  IterationPlan plan = dense(algorithm);
  StepPlan step;
  step.kind = kind;
  step.label = "allreduce values";
  step.participants.resize(kWorkers);
  std::iota(step.participants.begin(), step.participants.end(), 0);
  step.bytes.assign(kWorkers, kBytes);
  CompressedIteration iteration;
  iteration.parts.resize(1);
  iteration.parts[0].steps.push_back(step);
  iteration.parts[0].kernels.resize(kWorkers);
  plan.compressed.push_back(iteration);
  return plan;
}

} // namespace

TEST_CASE("a compressor's allreduce over every worker runs what the dense buckets run") {
  using Algorithm = AllreduceAlgorithm;
  const net::PlatformSpec platform =
      testing::machines_platform("machines", kNodes, kPerNode, {2.5e9, 2e-6}, {1.25e9, 50e-6});
  const std::vector<RunResult> results = simulate(
      platform, {dense(Algorithm::double_binary_tree), dense(Algorithm::double_binary_tree, 1),
                 dense(Algorithm::hierarchical), dense(Algorithm::ring),
                 compressed(StepPlan::Kind::allreduce_tree, Algorithm::ring),
                 compressed(StepPlan::Kind::allreduce, Algorithm::double_binary_tree),
                 compressed(StepPlan::Kind::allreduce, Algorithm::hierarchical),
                 compressed(StepPlan::Kind::allreduce, Algorithm::ring)});
  auto communication = [&](size_t run) { return results[run].iterations[0].communication_s; };
  auto bytes = [&](size_t run) { return results[run].iterations[0].bytes_sent_per_worker; };
  const double machine_trees = communication(0);
  const double flat_trees = communication(1);
  const double hierarchical = communication(2);
  const double ring = communication(3);
  INFO("dense: machine trees " << machine_trees << " s, flat trees " << flat_trees
                               << " s, hierarchical " << hierarchical << " s, ring " << ring
                               << " s; compressed: tree step " << communication(4)
                               << " s, allreduce under the tree " << communication(5)
                               << " s, under hierarchical " << communication(6)
                               << " s, under the ring " << communication(7) << " s");
  // The shapes cost visibly different times here (at least 5% apart), so
  // equality with one of them says which a step ran.
  CHECK(flat_trees > 1.05 * machine_trees);
  CHECK(ring > 1.1 * hierarchical);
  CHECK(std::abs(machine_trees / ring - 1) > 0.05);
  CHECK(std::abs(hierarchical / machine_trees - 1) > 0.05);
  // Alike to SimGrid's sharing precision.
  CHECK(communication(4) == doctest::Approx(machine_trees).epsilon(1e-4).scale(0));
  CHECK(communication(5) == doctest::Approx(machine_trees).epsilon(1e-4).scale(0));
  CHECK(communication(6) == doctest::Approx(hierarchical).epsilon(1e-4).scale(0));
  CHECK(communication(7) == doctest::Approx(ring).epsilon(1e-4).scale(0));
  CHECK(bytes(4) == bytes(0));
  CHECK(bytes(5) == bytes(0));
  CHECK(bytes(6) == bytes(2));
  CHECK(bytes(7) == bytes(3));
}
