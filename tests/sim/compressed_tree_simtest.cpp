// A compressor's tree allreduce step (gs-SGD's `allreduce: "tree"`) over
// every worker of a multi-GPU platform runs the trees NCCL builds there, as
// the dense buckets' tree does: the double binary tree over the machines'
// first GPUs with each machine's GPUs in a chain (`run_step`'s choice; a
// step over a subset takes the flat tree over its participants).

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
IterationPlan dense_tree(int ranks_per_node) {
  IterationPlan plan;
  plan.layers.push_back({1e-3, 2e-3});
  plan.layer_bytes.push_back(kBytes);
  plan.optimizer_s = 5e-4;
  plan.bucket_bytes = uint64_t{1} << 40;
  plan.overlap = false;
  plan.algorithm = AllreduceAlgorithm::double_binary_tree;
  plan.ranks_per_node = ranks_per_node;
  return plan;
}

// The same reduction as one compressed step after the backward pass, no
// kernels, over `participants`.
IterationPlan compressed_tree(std::vector<int> participants) {
  IterationPlan plan = dense_tree(kPerNode);
  StepPlan step;
  step.kind = StepPlan::Kind::allreduce_tree;
  step.label = "allreduce values";
  step.bytes.assign(participants.size(), kBytes);
  step.participants = std::move(participants);
  CompressedIteration iteration;
  iteration.parts.resize(1);
  iteration.parts[0].steps.push_back(step);
  iteration.parts[0].kernels.resize(kWorkers);
  plan.compressed.push_back(iteration);
  return plan;
}

} // namespace

TEST_CASE("a compressed tree step over every worker follows the machines") {
  std::vector<int> everyone(kWorkers);
  std::iota(everyone.begin(), everyone.end(), 0);

  const net::PlatformSpec platform =
      testing::machines_platform("machines", kNodes, kPerNode, {2.5e9, 2e-6}, {1.25e9, 50e-6});
  const std::vector<RunResult> results =
      simulate(platform, {dense_tree(kPerNode), dense_tree(1), compressed_tree(everyone)});
  const double machine_trees = results[0].iterations[0].communication_s;
  const double flat_trees = results[1].iterations[0].communication_s;
  const double step = results[2].iterations[0].communication_s;
  INFO("dense on machine trees " << machine_trees << " s, on flat trees " << flat_trees
                                 << " s; the compressed step " << step << " s");
  // The two tree shapes cost visibly different times here (16% apart), so
  // equality with one of them says which the step ran. Equal to SimGrid's
  // sharing precision (1e-5 a solve): the flows of the chains and the trees
  // meet on the NICs, and the two runs' actors post them in another order.
  CHECK(flat_trees > 1.1 * machine_trees);
  CHECK(step == doctest::Approx(machine_trees).epsilon(1e-4).scale(0));
  CHECK(results[2].iterations[0].bytes_sent_per_worker ==
        results[0].iterations[0].bytes_sent_per_worker);
}
