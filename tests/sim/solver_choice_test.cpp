// Which sharing solver a run gets (training::choose_solver): the one the
// platform names, else the full solver for push/pull with more servers than
// workers, else the lazy one.

#include "sim/training/iteration_model.hpp"
#include "tests/sim/test_platforms.hpp"

#include <vector>

#include <doctest/doctest.h>

using gcsim::AllreduceAlgorithm;
using gcsim::net::SharingSolver;
using gcsim::net::Topology;
using gcsim::training::choose_solver;
using gcsim::training::CompressedIteration;
using gcsim::training::IterationPlan;
using gcsim::training::StepPlan;

namespace {

IterationPlan dense(AllreduceAlgorithm algorithm) {
  IterationPlan plan;
  plan.algorithm = algorithm;
  return plan;
}

// A compressed plan whose one step is of `kind`, in a run whose allreduce is
// `algorithm`: its generic allreduce steps run that.
IterationPlan compressed(StepPlan::Kind kind,
                         AllreduceAlgorithm algorithm = AllreduceAlgorithm::ring) {
  IterationPlan plan = dense(algorithm);
  StepPlan step;
  step.kind = kind;
  CompressedIteration iteration;
  iteration.parts.resize(1);
  iteration.parts[0].steps.push_back(step);
  plan.compressed.push_back(iteration);
  return plan;
}

} // namespace

TEST_CASE("trees, rings and a compressor's steps get the lazy solver") {
  // The full solver was once the choice for trees, whose per-chunk messages
  // kept it busy; their streams no longer need it, and it is 8 times slower
  // on the allgathers a compressed run beside them makes.
  const gcsim::net::PlatformSpec star = gcsim::testing::star_platform("star", 16, 1e9, 1e-5);
  CHECK(choose_solver(star, {dense(AllreduceAlgorithm::ring)}) == SharingSolver::lazy);
  CHECK(choose_solver(star, {dense(AllreduceAlgorithm::double_binary_tree)}) ==
        SharingSolver::lazy);
  CHECK(choose_solver(star, {dense(AllreduceAlgorithm::double_binary_tree),
                             compressed(StepPlan::Kind::allgather,
                                        AllreduceAlgorithm::double_binary_tree)}) ==
        SharingSolver::lazy);
  CHECK(choose_solver(star, {compressed(StepPlan::Kind::allreduce_tree)}) == SharingSolver::lazy);
}

TEST_CASE("push/pull gets the full solver only with more servers than workers") {
  CHECK(choose_solver(gcsim::testing::parameter_server_platform("ps", 32, 4, 1e9, 1e-5),
                      {dense(AllreduceAlgorithm::parameter_server)}) == SharingSolver::lazy);
  const gcsim::net::PlatformSpec outnumbered =
      gcsim::testing::parameter_server_platform("ps", 2, 4, 1e9, 1e-5);
  CHECK(choose_solver(outnumbered, {dense(AllreduceAlgorithm::parameter_server)}) ==
        SharingSolver::full);
  // A ring on the same platform does not touch the servers.
  CHECK(choose_solver(outnumbered, {dense(AllreduceAlgorithm::ring)}) == SharingSolver::lazy);
}

TEST_CASE("the platform's own choice wins") {
  gcsim::net::PlatformSpec star = gcsim::testing::star_platform("star", 16, 1e9, 1e-5);
  star.network.solver = SharingSolver::lazy;
  CHECK(choose_solver(star, {dense(AllreduceAlgorithm::double_binary_tree)}) ==
        SharingSolver::lazy);
  star.network.solver = SharingSolver::full;
  CHECK(choose_solver(star, {dense(AllreduceAlgorithm::ring)}) == SharingSolver::full);
}
