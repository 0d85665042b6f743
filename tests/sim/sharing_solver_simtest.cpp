// SimGrid's two sharing solvers (`network/optim`, the platform's
// `network.solver`). Each case runs in a child process of its own (one
// engine per process) and hands its finishing times back through a pipe.
//
// With more parameter servers than workers SimGrid 3.32's lazy solver ends
// one worker's pull faster than its link allows while the last worker
// finishes exactly on time; the full solver times both right.
// platforms/README.md states this; the lazy check fails once SimGrid no
// longer does it (then drop the note there). On a ring, whose flows share
// no link, the two agree to the last digits, and on a double binary tree
// (whose streams share links) here too. While the tree sent a message per
// chunk the lazy solver ran it up to 0.7% faster; this would show it again.

#include "sim/network/alpha_beta.hpp"
#include "sim/network/collectives.hpp"
#include "sim/network/platform.hpp"
#include "tests/sim/child_simulation.hpp"
#include "tests/sim/lockstep.hpp"
#include "tests/sim/test_platforms.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;
using namespace gcsim::net;

namespace {

constexpr double kBandwidth = 1.25e9; // 10 Gbps
constexpr double kLatency = 10e-6;

// Runs `simulate` on `spec` with `solver` in a child and returns the times
// it reports.
std::vector<double> in_child(PlatformSpec spec, SharingSolver solver,
                             const std::function<std::vector<double>(Simulation&)>& simulate) {
  spec.network.solver = solver;
  return gcsim::testing::simulate_in_child(spec, simulate);
}

constexpr int kWorkers = 2;
constexpr int kServers = 4;
constexpr uint64_t kPushBytes = 4000000;

// When each worker's push/pull ends.
std::vector<double> push_pull(Simulation& simulation) {
  const Platform& platform = simulation.platform();
  std::vector<sg4::Host*> hosts = platform.workers;
  hosts.insert(hosts.end(), platform.servers.begin(), platform.servers.end());
  auto group = std::make_shared<Group>("ps", hosts);
  auto done = std::make_shared<std::vector<double>>(kWorkers, -1.0);
  for (int w = 0; w < kWorkers; ++w)
    sg4::Actor::create("worker", platform.workers[static_cast<size_t>(w)], [group, done, w] {
      ps_worker_push_pull(*group, w, kWorkers, kPushBytes);
      (*done)[static_cast<size_t>(w)] = sg4::Engine::get_clock();
    });
  for (int s = 0; s < kServers; ++s)
    sg4::Actor::create("server", platform.servers[static_cast<size_t>(s)], [group, s] {
      ps_server_push_pull(*group, kWorkers + s, kWorkers, kPushBytes);
    });
  simulation.run();
  return *done;
}

PlatformSpec servers_outnumber_workers() {
  return gcsim::testing::parameter_server_platform("ps", kWorkers, kServers, kBandwidth, kLatency);
}

double push_pull_closed_form() {
  return alpha_beta::ps_push_pull(2 * kLatency, kBandwidth, kBandwidth, kWorkers, kServers,
                                  kPushBytes);
}

constexpr int kRanks = 16;

// A double binary tree and a ring allreduce of `bytes` over 16 ranks, one
// after the other.
std::vector<double> tree_then_ring(Simulation& simulation, uint64_t bytes) {
  const Platform& platform = simulation.platform();
  std::vector<std::unique_ptr<Group>> groups;
  for (const char* name : {"tree", "ring"})
    groups.push_back(std::make_unique<Group>(name, platform.workers));
  return gcsim::testing::time_in_lockstep(simulation, platform.workers, 2, [&](size_t c, int rank) {
    if (c == 0)
      double_binary_tree_allreduce(*groups[0], rank, bytes);
    else
      ring_allreduce(*groups[1], rank, bytes);
  });
}

} // namespace

TEST_CASE("lazy solver: more servers than workers, the last pull is on time, another is early") {
  const std::vector<double> done =
      in_child(servers_outnumber_workers(), SharingSolver::lazy, push_pull);
  REQUIRE(done.size() == kWorkers);
  const double expected = push_pull_closed_form();
  // A worker pulls all of its bytes through its own link after the push:
  // no pull can end sooner than the push plus that.
  const double pull = static_cast<double>(kPushBytes) / kBandwidth;
  const double last = *std::max_element(done.begin(), done.end());
  const double first = *std::min_element(done.begin(), done.end());
  INFO("workers done at " << done[0] << " and " << done[1] << " s; closed form " << expected
                          << " s");
  CHECK(last == doctest::Approx(expected).epsilon(1e-6).scale(0));
  CHECK_MESSAGE(first < expected - pull / 2,
                "SimGrid no longer finishes a pull early: drop the lazy-solver note in "
                "platforms/README.md");
}

TEST_CASE("full solver: more servers than workers, every pull is on time") {
  const std::vector<double> done =
      in_child(servers_outnumber_workers(), SharingSolver::full, push_pull);
  REQUIRE(done.size() == kWorkers);
  const double expected = push_pull_closed_form();
  for (double t : done)
    CHECK(t == doctest::Approx(expected).epsilon(1e-6).scale(0));
}

TEST_CASE("the two solvers agree on a ring and on a double binary tree") {
  const PlatformSpec star = gcsim::testing::star_platform("star", kRanks, kBandwidth, kLatency);
  for (uint64_t bytes : {uint64_t{0}, uint64_t{64} << 10, uint64_t{8} << 20}) {
    auto run = [bytes](Simulation& simulation) { return tree_then_ring(simulation, bytes); };
    const std::vector<double> lazy = in_child(star, SharingSolver::lazy, run);
    const std::vector<double> full = in_child(star, SharingSolver::full, run);
    REQUIRE(lazy.size() == 2);
    REQUIRE(full.size() == 2);
    INFO(bytes << " bytes: tree " << lazy[0] << " s (lazy), " << full[0] << " s (full); ring "
               << lazy[1] << " s, " << full[1] << " s");
    CHECK(full[0] == doctest::Approx(lazy[0]).epsilon(1e-9).scale(0));
    CHECK(full[1] == doctest::Approx(lazy[1]).epsilon(1e-12).scale(0));
    // Not the same number by accident: the tree is a pipelined stream, the
    // ring 2(P-1) steps.
    if (bytes > 0)
      CHECK(full[0] != full[1]);
  }
}
