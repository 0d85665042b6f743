// The hierarchical allreduce on multi-GPU machines equals its closed form
// (three ring phases, the middle one with every GPU of a machine sharing its
// NIC), sends what its rings send, and beats the flat ring where latency
// between machines dominates and not where the NIC's bandwidth does; NCCL's
// machine trees pay their depth's latency.

#include "sim/network/alpha_beta.hpp"
#include "sim/network/collectives.hpp"
#include "sim/network/platform.hpp"
#include "tests/sim/lockstep.hpp"
#include "tests/sim/test_platforms.hpp"

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <simgrid/s4u.hpp>

using namespace gcsim::net;

namespace {

constexpr int kNodes = 3;
constexpr int kPerNode = 4;
constexpr int kRanks = kNodes * kPerNode;
constexpr double kGpuBandwidth = 2.5e9; // bytes/s, each GPU's link
constexpr double kGpuLatency = 2e-6;
constexpr double kNicBandwidth = 1.25e9; // 10 Gbps
constexpr double kNicLatency = 50e-6;

PlatformSpec machines() {
  return gcsim::testing::machines_platform(
      "hierarchy", kNodes, kPerNode, {kGpuBandwidth, kGpuLatency}, {kNicBandwidth, kNicLatency});
}

using Run = std::function<void(Group&, int rank)>;

struct Case {
  std::string label;
  Run run;
};

} // namespace

TEST_CASE("hierarchical allreduce on 3 machines of 4 GPUs") {
  Simulation simulation(machines());
  const Platform& platform = simulation.platform();
  REQUIRE(platform.workers.size() == static_cast<size_t>(kRanks));

  // Sizes that kRanks divides, so that every concurrent flow is as long.
  const std::vector<uint64_t> sizes{12, 1200, 65536 * 12, 4194300, 1073741820};
  std::vector<Case> cases;
  for (uint64_t bytes : sizes) {
    cases.push_back({"hierarchical " + std::to_string(bytes),
                     [bytes](Group& g, int r) { hierarchical_allreduce(g, r, bytes, kPerNode); }});
    cases.push_back({"flat ring " + std::to_string(bytes),
                     [bytes](Group& g, int r) { ring_allreduce(g, r, bytes); }});
  }
  // NCCL's trees: between the machines' first GPUs, chains below them.
  cases.push_back({"machine trees, empty buffer",
                   [](Group& g, int r) { double_binary_tree_allreduce(g, r, 0, kPerNode); }});
  std::vector<std::unique_ptr<Group>> groups;
  for (size_t c = 0; c < cases.size(); ++c)
    groups.push_back(std::make_unique<Group>("case" + std::to_string(c), platform.workers));

  const std::vector<double> seconds =
      gcsim::testing::time_in_lockstep(simulation, platform.workers, cases.size(),
                                       [&](size_t c, int rank) { cases[c].run(*groups[c], rank); });

  // Inside a machine a message crosses two GPU links; between machines two
  // GPU links and two NICs, each NIC carrying all kPerNode GPUs' flows.
  const alpha_beta::Cost intra{2 * kGpuLatency, 1 / kGpuBandwidth};
  const alpha_beta::Cost inter{2 * kGpuLatency + 2 * kNicLatency, kPerNode / kNicBandwidth};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t bytes = sizes[i];
    const double hierarchical = seconds[2 * i];
    const double flat = seconds[2 * i + 1];
    INFO("bytes " << bytes << ": hierarchical " << hierarchical << " s, flat ring " << flat
                  << " s");
    const double expected =
        alpha_beta::hierarchical_allreduce(intra, inter, kNodes, kPerNode, bytes);
    CHECK(std::fabs(hierarchical - expected) / expected <= 1e-6);

    // Each GPU sends (G-1)/G of the buffer twice inside its machine and
    // 2(N-1)/N of its chunk between machines.
    const uint64_t chunk = bytes / kPerNode;
    const uint64_t sent = 2 * (kPerNode - 1) * chunk + 2 * (kNodes - 1) * (chunk / kNodes);
    for (int r = 0; r < kRanks; ++r)
      CHECK(groups[2 * i]->bytes_sent(r) == sent);
  }
  // The deepest GPU is 3 links down its machine's chain and its machine two
  // machines below the root (both trees of 3 machines are 2 deep): up and
  // back down.
  const double tree = seconds[2 * sizes.size()];
  CHECK(std::fabs(tree - 2 * (3 * intra.alpha_s + 2 * inter.alpha_s)) <= 1e-12);
  // 12 bytes: latency only; 2(N-1) = 4 crossings between machines against 2(GN-1) = 22.
  CHECK(seconds[0] < 0.5 * seconds[1]);
  // 1 GB: the NICs' bandwidth; the flat ring puts a little more through each
  // NIC (22/12 of the buffer against 4/3) but skips the 2(G-1) steps inside
  // the machines, which cost more here.
  CHECK(seconds[8] > seconds[9]);
}
