// whole_group_pairs is what the XML platform check looks up routes for: it
// must hold every pair of ranks the whole-group collectives send between,
// whatever the root, and no pair that none of them uses.

#include "sim/network/collectives.hpp"
#include "sim/network/platform.hpp"
#include "tests/sim/test_platforms.hpp"

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;
using namespace gcsim::net;

namespace {

constexpr int kHosts = 72;
constexpr uint64_t kBytes = 4096;

using Run = std::function<void(Group&, int rank)>;

// Every collective of a group of `size`, rooted ones from every root.
std::vector<Run> collectives_of(int size) {
  std::vector<Run> runs = {
      [](Group& g, int r) { ring_allreduce(g, r, kBytes); },
      [](Group& g, int r) { ring_reduce_scatter(g, r, kBytes); },
      [](Group& g, int r) { ring_allgather(g, r, kBytes); },
      [size](Group& g, int r) {
        ring_allgatherv(g, r, std::vector<uint64_t>(static_cast<size_t>(size), kBytes));
      },
      [](Group& g, int r) { recursive_doubling_allreduce(g, r, kBytes); },
      [](Group& g, int r) { double_binary_tree_allreduce(g, r, kBytes); },
  };
  for (int root = 0; root < size; ++root) {
    runs.push_back([root](Group& g, int r) { binomial_broadcast(g, r, root, kBytes); });
    runs.push_back([root](Group& g, int r) { eager_binomial_broadcast(g, r, root, kBytes); });
    runs.push_back([root](Group& g, int r) { pipelined_ring_broadcast(g, r, root, kBytes, 1024); });
    runs.push_back([root](Group& g, int r) { binomial_reduce(g, r, root, kBytes); });
  }
  return runs;
}

} // namespace

TEST_CASE("whole_group_pairs are exactly the pairs the whole-group collectives use") {
  Simulation simulation(gcsim::testing::star_platform("pairs", kHosts, 1e9, 1e-6));
  const Platform& platform = simulation.platform();
  const std::vector<int> sizes = {2, 3, 5, 6, 8, 12, 33, kHosts};
  std::vector<std::unique_ptr<Group>> groups;
  std::vector<std::vector<Run>> runs;
  for (int size : sizes) {
    groups.push_back(std::make_unique<Group>(
        "size" + std::to_string(size),
        std::vector<sg4::Host*>(platform.workers.begin(), platform.workers.begin() + size)));
    runs.push_back(collectives_of(size));
  }
  sg4::BarrierPtr barrier = sg4::Barrier::create(kHosts);
  for (int w = 0; w < kHosts; ++w)
    sg4::Actor::create("rank", platform.workers[static_cast<size_t>(w)], [&, w] {
      for (size_t s = 0; s < sizes.size(); ++s)
        for (const Run& run : runs[s]) {
          barrier->wait();
          if (w < sizes[s])
            run(*groups[s], w);
        }
    });
  simulation.run();

  for (size_t s = 0; s < sizes.size(); ++s) {
    INFO("size " << sizes[s]);
    CHECK(groups[s]->pairs_used() == whole_group_pairs(sizes[s]));
  }
}

TEST_CASE("whole_group_pairs at 72 ranks: both directions of 2^k apart, and doubling's partners") {
  const std::vector<std::pair<int, int>> pairs = whole_group_pairs(kHosts);
  const std::set<std::pair<int, int>> set(pairs.begin(), pairs.end());
  CHECK(set.size() == pairs.size());
  CHECK(set.count({71, 0}) == 1);  // the ring closes
  CHECK(set.count({3, 67}) == 1);  // 64 apart, backwards
  CHECK(set.count({20, 16}) == 1); // recursive doubling: virtual 12 ^ 4 = 8
  CHECK(set.count({0, 3}) == 0);   // 3 apart: no algorithm sends there
}
