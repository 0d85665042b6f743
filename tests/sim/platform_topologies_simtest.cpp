// The topologies gcsim builds in code other than the plain star: a star
// behind a shared backbone, a physical ring, a fat-tree's leaf order. Each
// platform runs in a child process of its own (one engine per process) and
// hands its times back; every expected time is a closed form on CM02 without
// cross-traffic.

#include "sim/network/collectives.hpp"
#include "sim/network/platform.hpp"
#include "tests/sim/child_simulation.hpp"
#include "tests/sim/lockstep.hpp"
#include "tests/sim/test_platforms.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;
using namespace gcsim::net;

namespace {

constexpr double kBandwidth = 1.25e9; // bytes/s
constexpr double kLatency = 10e-6;
constexpr uint64_t kBytes = 4000000;

using Run = std::function<void(Group&, int rank)>;

// Each case's time over every worker of `spec`, a fresh group per case.
std::vector<double> times_on(const PlatformSpec& spec, const std::vector<Run>& cases) {
  return gcsim::testing::simulate_in_child(spec, [&](Simulation& simulation) {
    const std::vector<sg4::Host*>& hosts = simulation.platform().workers;
    std::vector<std::unique_ptr<Group>> groups;
    for (size_t c = 0; c < cases.size(); ++c)
      groups.push_back(std::make_unique<Group>("case" + std::to_string(c), hosts));
    return gcsim::testing::time_in_lockstep(
        simulation, hosts, cases.size(), [&](size_t c, int rank) { cases[c](*groups[c], rank); });
  });
}

// `from` sends kBytes to `to`; nobody else sends.
Run one_message(int from, int to) {
  return [from, to](Group& g, int r) {
    if (r == from)
      send(g, r, to, kBytes);
    else if (r == to)
      receive(g, r, from);
  };
}

// Ranks a and b send each other kBytes at once.
Run exchange_between(int a, int b) {
  return [a, b](Group& g, int r) {
    if (r == a)
      send_receive(g, r, b, kBytes, b);
    else if (r == b)
      send_receive(g, r, a, kBytes, a);
  };
}

// The number in each worker's host name ("gpu-N"), in rank order.
std::vector<double> worker_numbers(const PlatformSpec& spec) {
  return gcsim::testing::simulate_in_child(spec, [](Simulation& s) {
    std::vector<double> numbers;
    for (const sg4::Host* host : s.platform().workers)
      numbers.push_back(std::stod(host->get_name().substr(4)));
    return numbers;
  });
}

} // namespace

TEST_CASE("a star's backbone is on every route, once, and shared by all traffic") {
  PlatformSpec star = gcsim::testing::star_platform("backbone", 4, kBandwidth, kLatency);
  const double backbone_latency = 3e-6;
  star.backbone = LinkSpec{kBandwidth, backbone_latency};
  const std::vector<double> seconds = times_on(star, {one_message(0, 1), [](Group& g, int r) {
                                                        // Two pairs with no NIC in common: only the
                                                        // backbone joins them.
                                                        if (r % 2 == 0)
                                                          send(g, r, r + 1, kBytes);
                                                        else
                                                          receive(g, r, r - 1);
                                                      }});
  REQUIRE(seconds.size() == 2);
  const double latency = 2 * kLatency + backbone_latency;
  CHECK(seconds[0] == doctest::Approx(latency + kBytes / kBandwidth).epsilon(1e-9).scale(0));
  CHECK(seconds[1] == doctest::Approx(latency + 2 * kBytes / kBandwidth).epsilon(1e-9).scale(0));
}

TEST_CASE("a physical ring cables each node to both neighbours, full duplex, closed") {
  PlatformSpec ring = gcsim::testing::star_platform("ring", 4, kBandwidth, kLatency);
  ring.topology = Topology::ring;
  const std::vector<double> seconds =
      times_on(ring, {[](Group& g, int r) { ring_allreduce(g, r, kBytes); }, one_message(1, 0),
                      one_message(0, 2), exchange_between(0, 1), one_message(3, 0)});
  REQUIRE(seconds.size() == 5);
  // Every step of the ring is one cable, P = 4: 2(P-1) steps of n/P.
  CHECK(seconds[0] ==
        doctest::Approx(6 * (kLatency + kBytes / 4 / kBandwidth)).epsilon(1e-9).scale(0));
  const double one_hop = kLatency + kBytes / kBandwidth;
  CHECK(seconds[1] == doctest::Approx(one_hop).epsilon(1e-9).scale(0)); // against the ring's order
  CHECK(seconds[2] ==
        doctest::Approx(2 * kLatency + kBytes / kBandwidth).epsilon(1e-9).scale(0)); // 2 cables
  CHECK(seconds[3] == doctest::Approx(one_hop).epsilon(1e-9).scale(0)); // both ways at once
  CHECK(seconds[4] == doctest::Approx(one_hop).epsilon(1e-9).scale(0)); // the closing cable
}

TEST_CASE("a fat-tree's ranks are its leaves in order, on full-duplex links") {
  PlatformSpec tree = gcsim::testing::star_platform("fat-tree", 6, kBandwidth, kLatency);
  tree.topology = Topology::fat_tree;
  tree.fat_tree = {{4, 4}, {1, 1}, {1, 1}}; // 16 leaves, 4 a switch
  const std::vector<double> seconds =
      times_on(tree, {one_message(0, 3), one_message(0, 4), exchange_between(0, 1)});
  REQUIRE(seconds.size() == 3);
  // Ranks 0-3 share a leaf switch (2 links apart), rank 4 is behind the next (4).
  CHECK(seconds[0] == doctest::Approx(2 * kLatency + kBytes / kBandwidth).epsilon(1e-9).scale(0));
  CHECK(seconds[1] == doctest::Approx(4 * kLatency + kBytes / kBandwidth).epsilon(1e-9).scale(0));
  CHECK(seconds[2] == doctest::Approx(2 * kLatency + kBytes / kBandwidth).epsilon(1e-9).scale(0));
  CHECK(worker_numbers(tree) == std::vector<double>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("a fat-tree's leaves can be machines of GPUs, each GPU on its own link inside") {
  PlatformSpec tree = gcsim::testing::star_platform("fat-tree-machines", 3, kBandwidth, kLatency);
  tree.topology = Topology::fat_tree;
  tree.fat_tree = {{2, 2}, {1, 1}, {1, 1}}; // 4 leaves, 2 a switch; 3 of them used
  tree.gpus_per_node = 2;
  tree.machine_leaves = true;
  const double gpu_latency = 1e-6;
  tree.gpu_link = {4 * kBandwidth, gpu_latency};
  REQUIRE(tree.has_gpu_machines());
  REQUIRE(tree.worker_count() == 6);
  const std::vector<double> seconds =
      times_on(tree, {one_message(0, 1), one_message(0, 2), one_message(0, 4),
                      exchange_between(1, 3), [](Group& g, int r) {
                        // Both GPUs of machine 0 send to machine 1's at once: one NIC.
                        if (r < 2)
                          send(g, r, r + 2, kBytes);
                        else if (r < 4)
                          receive(g, r, r - 2);
                      }});
  REQUIRE(seconds.size() == 5);
  const double inside = 2 * gpu_latency;
  // GPUs of one machine meet on their own links, never on the tree's.
  CHECK(seconds[0] == doctest::Approx(inside + kBytes / (4 * kBandwidth)).epsilon(1e-9).scale(0));
  // Machines 0 and 1 share a leaf switch (2 tree links), machine 2 is
  // behind the next (4); the tree's links are the slower ones.
  CHECK(seconds[1] ==
        doctest::Approx(inside + 2 * kLatency + kBytes / kBandwidth).epsilon(1e-9).scale(0));
  CHECK(seconds[2] ==
        doctest::Approx(inside + 4 * kLatency + kBytes / kBandwidth).epsilon(1e-9).scale(0));
  CHECK(seconds[3] ==
        doctest::Approx(inside + 2 * kLatency + kBytes / kBandwidth).epsilon(1e-9).scale(0));
  CHECK(seconds[4] ==
        doctest::Approx(inside + 2 * kLatency + 2 * kBytes / kBandwidth).epsilon(1e-9).scale(0));
  CHECK(worker_numbers(tree) == std::vector<double>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("one switch of machines times collectives as a multi_gpu platform does") {
  // A fat tree of one level is a switch: its machines' NICs are its leaf
  // links, so every route crosses the same links as on a multi_gpu star.
  const LinkSpec gpu_link{4 * kBandwidth, 1e-6};
  PlatformSpec tree = gcsim::testing::star_platform("one-switch", 3, kBandwidth, kLatency);
  tree.topology = Topology::fat_tree;
  tree.fat_tree = {{4}, {1}, {1}};
  tree.gpus_per_node = 4;
  tree.machine_leaves = true;
  tree.gpu_link = gpu_link;
  const PlatformSpec star =
      gcsim::testing::machines_platform("machines", 3, 4, gpu_link, {kBandwidth, kLatency});
  const std::vector<Run> cases{
      [](Group& g, int r) { hierarchical_allreduce(g, r, 12 * kBytes, 4); },
      [](Group& g, int r) { ring_allreduce(g, r, 12 * kBytes); },
      [](Group& g, int r) { double_binary_tree_allreduce(g, r, 12 * kBytes, 4); }};
  const std::vector<double> on_tree = times_on(tree, cases);
  const std::vector<double> on_star = times_on(star, cases);
  REQUIRE(on_tree.size() == cases.size());
  REQUIRE(on_star.size() == cases.size());
  for (size_t c = 0; c < cases.size(); ++c) {
    CAPTURE(c);
    CHECK(on_tree[c] > 12 * kBytes / kBandwidth / 3); // the cases did cross the NICs
    CHECK(on_tree[c] == doctest::Approx(on_star[c]).epsilon(1e-12).scale(0));
  }
}
