// Every collective's simulated time equals its closed-form alpha-beta cost
// when SimGrid runs CM02 without cross-traffic and nothing else is on the
// network. One SimGrid engine per process, so all cases run in sequence in
// one simulation, separated by barriers.

#include "sim/network/alpha_beta.hpp"
#include "sim/network/collectives.hpp"
#include "sim/network/platform.hpp"
#include "tests/sim/test_platforms.hpp"

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;
using namespace gcsim::net;

namespace {

constexpr double kBandwidth = 1.25e8; // 1 Gbps
constexpr double kLatency = 25e-6;    // per link; a route crosses two
constexpr int kWorkers = 96;
constexpr int kServers = 3;

struct Case {
  std::string label;
  int ranks;
  bool with_servers;
  std::function<void(Group&, int rank)> run; // called by each participating rank
  double expected_s;
};

std::vector<Case> build_cases() {
  const alpha_beta::Cost cost{2 * kLatency, 1.0 / kBandwidth};
  std::vector<Case> cases;
  const std::vector<uint64_t> sizes{1024, 65536 + 3, 4194304, 1073741824};
  for (int ranks : {2, 3, 8, 96}) {
    for (uint64_t bytes : sizes) {
      std::string suffix = " P=" + std::to_string(ranks) + " bytes=" + std::to_string(bytes);
      cases.push_back({"ring_allreduce" + suffix, ranks, false,
                       [bytes](Group& g, int r) { ring_allreduce(g, r, bytes); },
                       alpha_beta::ring_allreduce(cost, ranks, bytes)});
      cases.push_back({"ring_reduce_scatter" + suffix, ranks, false,
                       [bytes](Group& g, int r) { ring_reduce_scatter(g, r, bytes); },
                       alpha_beta::ring_reduce_scatter(cost, ranks, bytes)});
      cases.push_back({"ring_allgather" + suffix, ranks, false,
                       [bytes](Group& g, int r) { ring_allgather(g, r, bytes); },
                       alpha_beta::ring_allgather(cost, ranks, bytes)});
      std::vector<uint64_t> uneven;
      for (int r = 0; r < ranks; ++r)
        uneven.push_back(bytes * static_cast<uint64_t>(1 + (r * 7919 % 13)) / 13);
      cases.push_back({"ring_allgatherv" + suffix, ranks, false,
                       [uneven](Group& g, int r) { ring_allgatherv(g, r, uneven); },
                       alpha_beta::ring_allgatherv(cost, uneven)});
      int root = ranks - 1;
      cases.push_back({"binomial_broadcast" + suffix, ranks, false,
                       [bytes, root](Group& g, int r) { binomial_broadcast(g, r, root, bytes); },
                       alpha_beta::binomial_broadcast(cost, ranks, bytes)});
      cases.push_back({"binomial_reduce" + suffix, ranks, false,
                       [bytes](Group& g, int r) { binomial_reduce(g, r, 0, bytes); },
                       alpha_beta::binomial_reduce(cost, ranks, bytes)});
      cases.push_back({"recursive_doubling_allreduce" + suffix, ranks, false,
                       [bytes](Group& g, int r) { recursive_doubling_allreduce(g, r, bytes); },
                       alpha_beta::recursive_doubling_allreduce(cost, ranks, bytes)});
      // The push/pull closed form holds for equal shards (see alpha_beta.hpp).
      uint64_t sharded = bytes - bytes % kServers;
      cases.push_back({"ps_push_pull" + suffix, ranks, true,
                       [sharded, ranks](Group& g, int r) {
                         if (r < ranks)
                           ps_worker_push_pull(g, r, ranks, sharded);
                         else
                           ps_server_push_pull(g, r, ranks, sharded);
                       },
                       alpha_beta::ps_push_pull(2 * kLatency, kBandwidth, kBandwidth, ranks,
                                                kServers, sharded)});
    }
  }
  return cases;
}

struct Measured {
  std::vector<double> seconds;
};

} // namespace

TEST_CASE("collectives on SimGrid CM02 equal the alpha-beta oracle to 1e-6") {
  Simulation simulation(gcsim::testing::parameter_server_platform("oracle", kWorkers, kServers,
                                                                  kBandwidth, kLatency));
  const Platform& platform = simulation.platform();

  const std::vector<Case> cases = build_cases();
  std::vector<double> measured(cases.size(), -1.0);
  const int actors = kWorkers + kServers;
  sg4::BarrierPtr barrier = sg4::Barrier::create(static_cast<unsigned>(actors));

  std::vector<std::unique_ptr<Group>> groups;
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<sg4::Host*> hosts(platform.workers.begin(),
                                  platform.workers.begin() + cases[c].ranks);
    if (cases[c].with_servers)
      hosts.insert(hosts.end(), platform.servers.begin(), platform.servers.end());
    groups.push_back(std::make_unique<Group>("case" + std::to_string(c), hosts));
  }

  auto body = [&](int index, bool is_server) {
    for (size_t c = 0; c < cases.size(); ++c) {
      barrier->wait();
      double start = sg4::Engine::get_clock();
      const Case& current = cases[c];
      int rank = -1;
      if (!is_server && index < current.ranks)
        rank = index;
      if (is_server && current.with_servers)
        rank = current.ranks + index;
      if (rank >= 0)
        current.run(*groups[c], rank);
      barrier->wait();
      if (!is_server && index == 0)
        measured[c] = sg4::Engine::get_clock() - start;
    }
  };
  for (int w = 0; w < kWorkers; ++w)
    sg4::Actor::create("worker", platform.workers[static_cast<size_t>(w)],
                       [&body, w] { body(w, false); });
  for (int s = 0; s < kServers; ++s)
    sg4::Actor::create("server", platform.servers[static_cast<size_t>(s)],
                       [&body, s] { body(s, true); });
  simulation.run();

  for (size_t c = 0; c < cases.size(); ++c) {
    INFO(cases[c].label);
    CHECK(measured[c] > 0);
    double relative = std::fabs(measured[c] - cases[c].expected_s) / cases[c].expected_s;
    CHECK(relative <= 1e-6);
  }
}
