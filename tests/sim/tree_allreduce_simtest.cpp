// NCCL's double binary tree: the trees' shape, and the allreduce on them
// against its latency-bound and bandwidth-bound limits and the flat ring.

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

namespace sg4 = simgrid::s4u;
using namespace gcsim::net;

namespace {

constexpr double kBandwidth = 1.25e9; // 10 Gbps
constexpr double kLatency = 25e-6;    // per NIC link; a route crosses two
constexpr int kHosts = 64;

int depth_of(int size, int tree) {
  int deepest = 0;
  for (int rank = 0; rank < size; ++rank) {
    int hops = 0;
    for (int at = rank; double_binary_tree_links(size, at, tree).parent >= 0;
         at = double_binary_tree_links(size, at, tree).parent)
      ++hops;
    deepest = std::max(deepest, hops);
  }
  return deepest;
}

} // namespace

TEST_CASE("the two trees span every rank, each link both ways, leaves complementary") {
  for (int size = 1; size <= 70; ++size) {
    for (int tree = 0; tree < 2; ++tree) {
      INFO("size " << size << " tree " << tree);
      int roots = 0;
      int edges = 0;
      for (int rank = 0; rank < size; ++rank) {
        const TreeLinks links = double_binary_tree_links(size, rank, tree);
        CHECK(links.children.size() <= 2);
        edges += static_cast<int>(links.children.size());
        for (int child : links.children) {
          REQUIRE(child >= 0);
          REQUIRE(child < size);
          CHECK(double_binary_tree_links(size, child, tree).parent == rank);
        }
        if (links.parent < 0)
          ++roots;
        else
          CHECK(links.parent < size);
      }
      CHECK(roots == 1);
      CHECK(edges == size - 1); // one root, every other rank its parent's child: a tree
      // Balanced: no deeper than the ranks' bits, plus the root's one child.
      int bits = 0;
      while ((1 << bits) < size)
        ++bits;
      CHECK(depth_of(size, tree) <= bits + 1);
    }
    // A rank is a leaf in at least one tree: interior work is spread. Odd
    // sizes leave rank 0 (the first tree's root) interior in both.
    for (int rank = size % 2 == 0 ? 0 : 1; rank < size; ++rank) {
      INFO("size " << size << " rank " << rank);
      CHECK((double_binary_tree_links(size, rank, 0).children.empty() ||
             double_binary_tree_links(size, rank, 1).children.empty()));
    }
  }
  // NCCL's first tree on 8 ranks: 0 -> 4 -> {2, 6}, 2 -> {1, 3}, 6 -> {5, 7}.
  CHECK(binary_tree_links(8, 0).children == std::vector<int>{4});
  CHECK(binary_tree_links(8, 4).children == std::vector<int>{2, 6});
  CHECK(binary_tree_links(8, 6).children == std::vector<int>{5, 7});
  CHECK(binary_tree_links(8, 5).parent == 6);
  // Past the last rank the nearest in range takes a child's place.
  CHECK(binary_tree_links(6, 4).children == std::vector<int>{2, 5});
  CHECK(binary_tree_links(6, 5).parent == 4);
}

TEST_CASE(
    "on machines of several GPUs the trees join the machines' first GPUs, chains hang below") {
  for (int nodes = 1; nodes <= 9; ++nodes)
    for (int per_node = 1; per_node <= 4; ++per_node)
      for (int tree = 0; tree < 2; ++tree) {
        INFO(nodes << " machines of " << per_node << ", tree " << tree);
        const int size = nodes * per_node;
        int roots = 0;
        int edges = 0;
        int between_machines = 0;
        for (int rank = 0; rank < size; ++rank) {
          const TreeLinks links = machine_tree_links(nodes, per_node, rank, tree);
          if (per_node == 1) {
            CHECK(links.parent == double_binary_tree_links(size, rank, tree).parent);
            CHECK(links.children == double_binary_tree_links(size, rank, tree).children);
          }
          roots += links.parent < 0 ? 1 : 0;
          for (int child : links.children) {
            REQUIRE(child >= 0);
            REQUIRE(child < size);
            CHECK(machine_tree_links(nodes, per_node, child, tree).parent == rank);
            ++edges;
            if (child / per_node != rank / per_node) {
              ++between_machines;
              CHECK(rank % per_node == 0);
              CHECK(child % per_node == 0);
            } else {
              CHECK(child == rank + 1); // the chain
            }
          }
        }
        CHECK(roots == 1);
        CHECK(edges == size - 1);
        CHECK(between_machines == nodes - 1);
      }
}

TEST_CASE("double binary tree allreduce on a 10 Gbps star") {
  Simulation simulation(gcsim::testing::star_platform("trees", kHosts, kBandwidth, kLatency));
  const Platform& platform = simulation.platform();

  struct Case {
    int ranks;
    uint64_t bytes;
    bool tree; // else the flat ring
  };
  const std::vector<Case> cases{
      {2, 40000, true},      {kHosts, 0, true},      {kHosts, 0, false},
      {8, 256u << 20, true}, {8, 256u << 20, false}, {8, 8u << 20, true},
  };
  std::vector<std::unique_ptr<Group>> groups;
  for (size_t c = 0; c < cases.size(); ++c)
    groups.push_back(std::make_unique<Group>(
        "case" + std::to_string(c),
        std::vector<sg4::Host*>(platform.workers.begin(),
                                platform.workers.begin() + cases[c].ranks)));
  const std::vector<double> seconds = gcsim::testing::time_in_lockstep(
      simulation, platform.workers, cases.size(), [&](size_t c, int rank) {
        if (rank >= cases[c].ranks)
          return;
        if (cases[c].tree)
          double_binary_tree_allreduce(*groups[c], rank, cases[c].bytes);
        else
          ring_allreduce(*groups[c], rank, cases[c].bytes);
      });

  const double alpha = 2 * kLatency;
  const double beta = 1 / kBandwidth;
  // Two ranks, one chunk per tree: each half goes up and comes back down,
  // the two trees' halves crossing in opposite directions.
  CHECK(std::fabs(seconds[0] - 2 * (alpha + 20000 * beta)) <= 1e-9);
  // Empty buffer on 64 ranks: latency only, up and down the deeper tree,
  // against the ring's 2(P-1) steps.
  const int depth = std::max(depth_of(kHosts, 0), depth_of(kHosts, 1));
  CHECK(depth == 6);
  CHECK(std::fabs(seconds[1] - 2 * depth * alpha) <= 1e-9);
  CHECK(std::fabs(seconds[2] - 2 * (kHosts - 1) * alpha) <= 1e-9);
  // 256 MiB on 8 ranks: bandwidth-bound. A rank sends its interior tree's
  // half three times (up, and down to two children) and its leaf tree's half
  // once, 2 n in all, about the ring's 2(P-1)/P n. The pipeline adds its
  // fill and drain, a chunk and a latency per level up and down (512 KiB
  // chunks here, 128 KiB for 8 MiB), and no latency per chunk: that would
  // add 3% at 256 MiB and 14% at 8 MiB (a chunk of 128 KiB takes 105 us, a
  // latency 50 us).
  const int depth8 = std::max(depth_of(8, 0), depth_of(8, 1));
  CHECK(depth8 == 3);
  auto pipeline_limit = [&](double buffer, double chunk) {
    return 2 * buffer * beta + 2 * depth8 * (alpha + chunk * beta);
  };
  const double bytes = 256.0 * (1 << 20);
  INFO("tree " << seconds[3] << " s, ring " << seconds[4] << " s, 2n/B " << 2 * bytes * beta);
  CHECK(seconds[3] >= 2 * bytes * beta);
  CHECK(seconds[3] <= pipeline_limit(bytes, 512 << 10));
  CHECK(seconds[4] < seconds[3]);
  const double small = 8.0 * (1 << 20);
  INFO("8 MiB: tree " << seconds[5] << " s, 2n/B " << 2 * small * beta);
  CHECK(seconds[5] >= 2 * small * beta);
  CHECK(seconds[5] <= pipeline_limit(small, 128 << 10));
  for (int r = 0; r < 8; ++r) {
    uint64_t expected = 0;
    for (int tree = 0; tree < 2; ++tree) {
      const TreeLinks links = double_binary_tree_links(8, r, tree);
      const uint64_t half = (256u << 20) / 2;
      expected += half * (links.children.size() + (links.parent >= 0 ? 1 : 0));
    }
    CHECK(groups[3]->bytes_sent(r) == expected);
  }
}
