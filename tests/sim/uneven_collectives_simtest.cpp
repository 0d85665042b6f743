// Collectives of sizes the ranks do not divide: each rank sends exactly the
// blocks that are its own to send, so a slip between a rank's block and its
// neighbour's, or between a server's shard and another's, shows in the
// bytes (on even sizes every block is as large and it would not). And the
// double binary tree's pipeline step follows NCCL's rule for its depth.

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

// Every rank's bytes sent, in rank order, by one run of `collective` on each
// of `hosts` in a fresh group.
std::vector<double> bytes_sent_by(Simulation& simulation, const std::vector<sg4::Host*>& hosts,
                                  const std::function<void(Group&, int)>& collective) {
  Group group("g", hosts);
  gcsim::testing::time_in_lockstep(simulation, hosts, 1,
                                   [&](size_t, int rank) { collective(group, rank); });
  std::vector<double> sent;
  for (int r = 0; r < group.size(); ++r)
    sent.push_back(static_cast<double>(group.bytes_sent(r)));
  return sent;
}

constexpr int kRanks = 8;

} // namespace

TEST_CASE("ring allreduce of 1025 bytes on 8 ranks: each rank sends its own blocks") {
  const auto sent = gcsim::testing::simulate_in_child(
      gcsim::testing::star_platform("ring", kRanks, 1.25e9, 5e-6), [](Simulation& simulation) {
        return bytes_sent_by(simulation, simulation.platform().workers,
                             [](Group& g, int r) { ring_allreduce(g, r, 1025); });
      });
  REQUIRE(sent.size() == kRanks);
  // Blocks of 129 (the first) and 128 bytes. Rank r sends every block twice
  // (reduce-scatter, then allgather) except the two it never forwards: the
  // reduce-scatter's last block reaches it from r - 1 (block r + 1 in the
  // ring's order), and the allgather's last one is block r + 2.
  for (int r = 0; r < kRanks; ++r) {
    CAPTURE(r);
    CHECK(sent[static_cast<size_t>(r)] ==
          static_cast<double>(2 * 1025 - chunk_bytes(1025, kRanks, (r + 1) % kRanks) -
                              chunk_bytes(1025, kRanks, (r + 2) % kRanks)));
  }
}

TEST_CASE("a binomial broadcast and a recursive-doubling allreduce: who sends what") {
  // Bytes are the sender's: counted for the receiver, the total (and the
  // mean per worker) stays, each rank's and the busiest's do not.
  constexpr uint64_t kBytes = 1000;
  const auto sent = gcsim::testing::simulate_in_child(
      gcsim::testing::star_platform("binomial", kRanks, 1.25e9, 5e-6), [](Simulation& simulation) {
        std::vector<double> both =
            bytes_sent_by(simulation, simulation.platform().workers,
                          [](Group& g, int r) { binomial_broadcast(g, r, 0, kBytes); });
        // Six ranks: the first four fold into two (evens send theirs to the
        // odds), four exchange twice, and the odds send the sum back.
        const std::vector<sg4::Host*> six(simulation.platform().workers.begin(),
                                          simulation.platform().workers.begin() + 6);
        const std::vector<double> doubling = bytes_sent_by(
            simulation, six, [](Group& g, int r) { recursive_doubling_allreduce(g, r, kBytes); });
        both.insert(both.end(), doubling.begin(), doubling.end());
        return both;
      });
  const double b = kBytes;
  // gloo's tree: the root sends to 1, 2 and 4; 1 to 3 and 5; 2 to 6; 3 to 7.
  CHECK(std::vector<double>(sent.begin(), sent.begin() + kRanks) ==
        std::vector<double>{3 * b, 2 * b, b, b, 0, 0, 0, 0});
  CHECK(std::vector<double>(sent.begin() + kRanks, sent.end()) ==
        std::vector<double>{b, 3 * b, b, 3 * b, 2 * b, 2 * b});
}

TEST_CASE("ring allgatherv of 100 to 800 bytes: each rank forwards all blocks but one") {
  const std::vector<uint64_t> sizes{100, 200, 300, 400, 500, 600, 700, 800};
  const auto sent = gcsim::testing::simulate_in_child(
      gcsim::testing::star_platform("allgatherv", kRanks, 1.25e9, 5e-6),
      [&](Simulation& simulation) {
        return bytes_sent_by(simulation, simulation.platform().workers,
                             [&](Group& g, int r) { ring_allgatherv(g, r, sizes); });
      });
  REQUIRE(sent.size() == kRanks);
  // 3600 bytes in all: rank r never sends block r + 1, the last to reach it.
  for (int r = 0; r < kRanks; ++r) {
    CAPTURE(r);
    CHECK(sent[static_cast<size_t>(r)] == 3600.0 - static_cast<double>(sizes[(r + 1) % kRanks]));
  }
}

TEST_CASE("hierarchical allreduce of 1201 bytes on 3 machines of 4 GPUs sends 2(P-1)n in all") {
  const auto sent = gcsim::testing::simulate_in_child(
      gcsim::testing::machines_platform("hierarchy", 3, 4, {2.5e9, 2e-6}, {1.25e9, 50e-6}),
      [](Simulation& simulation) {
        return bytes_sent_by(simulation, simulation.platform().workers,
                             [](Group& g, int r) { hierarchical_allreduce(g, r, 1201, 4); });
      });
  REQUIRE(sent.size() == 12);
  // Every GPU's ring between the machines carries its own quarter of the
  // buffer (301, 300, 300, 300 bytes), so the phases add up to a flat
  // ring's 2(P - 1) n.
  double total = 0;
  for (const double s : sent)
    total += s;
  CHECK(total == 2.0 * 11 * 1201);
}

TEST_CASE("parameter servers of 1001 bytes over 3 shards: each sends its own shard back") {
  const auto sent = gcsim::testing::simulate_in_child(
      gcsim::testing::parameter_server_platform("ps", 4, 3, 1.25e9, 5e-6),
      [](Simulation& simulation) {
        std::vector<sg4::Host*> hosts = simulation.platform().workers;
        hosts.insert(hosts.end(), simulation.platform().servers.begin(),
                     simulation.platform().servers.end());
        return bytes_sent_by(simulation, hosts, [](Group& g, int r) {
          if (r < 4)
            ps_worker_push_pull(g, r, 4, 1001);
          else
            ps_server_push_pull(g, r, 4, 1001);
        });
      });
  REQUIRE(sent.size() == 7);
  // Shards of 334, 334 and 333 bytes, each pulled by the 4 workers.
  for (int s = 0; s < 3; ++s) {
    CAPTURE(s);
    CHECK(sent[static_cast<size_t>(4 + s)] == 4.0 * static_cast<double>(chunk_bytes(1001, 3, s)));
  }
  for (int w = 0; w < 4; ++w)
    CHECK(sent[static_cast<size_t>(w)] == 1001.0); // every worker pushes every shard
}

namespace {

// The double binary tree of `bytes` as chosen, and as explicit 128 KiB
// pieces: their times on `platform`, in that order.
std::vector<double> tree_against_128k_pieces(const PlatformSpec& platform, uint64_t bytes,
                                             int ranks_per_node) {
  return gcsim::testing::simulate_in_child(platform, [&](Simulation& simulation) {
    const std::vector<sg4::Host*>& hosts = simulation.platform().workers;
    Group chosen("chosen", hosts);
    Group given("given", hosts);
    return gcsim::testing::time_in_lockstep(simulation, hosts, 2, [&](size_t c, int r) {
      if (c == 0)
        double_binary_tree_allreduce(chosen, r, bytes, ranks_per_node);
      else
        tree_allreduce_in_pieces(given, r, bytes, ranks_per_node, [](uint64_t half, uint64_t) {
          return stream_pieces(half, 128u << 10);
        });
    });
  });
}

} // namespace

TEST_CASE("the double binary tree of 7 MiB on 8 ranks pipelines 128 KiB chunks") {
  // NCCL's 512 KiB step, halved while a tree's half (3.5 MiB) makes fewer
  // than 8 chunks per level of its depth, log2(8) = 3: 128 KiB gives 28.
  const std::vector<double> seconds = tree_against_128k_pieces(
      gcsim::testing::star_platform("tree", kRanks, 1.25e9, 5e-6), 7u << 20, 1);
  REQUIRE(seconds.size() == 2);
  CHECK(seconds[0] == doctest::Approx(seconds[1]).epsilon(1e-9).scale(0));
}

TEST_CASE("hierarchical allreduce of 1201 bytes on 3 machines of 4 GPUs: each GPU's own chunks") {
  constexpr int kNodes = 3;
  constexpr int kPerNode = 4;
  constexpr uint64_t kBytes = 1201; // GPU chunks of 301, 300, 300, 300 bytes
  const auto sent = gcsim::testing::simulate_in_child(
      gcsim::testing::machines_platform("hierarchy", kNodes, kPerNode, {2.5e9, 2e-6},
                                        {1.25e9, 50e-6}),
      [](Simulation& simulation) {
        return bytes_sent_by(simulation, simulation.platform().workers, [](Group& g, int r) {
          hierarchical_allreduce(g, r, kBytes, kPerNode);
        });
      });
  REQUIRE(sent.size() == kNodes * kPerNode);
  // GPU `local` of machine `node`: the reduce-scatter inside its machine
  // sends all chunks but (local + 1), which it ends up holding; the ring
  // between machines reduces that chunk, m bytes, and sends all of its N
  // sub-chunks twice but (node + 1) and (node + 2); the allgather inside the
  // machine sends all chunks but (local + 2), the last to reach it.
  for (int r = 0; r < kNodes * kPerNode; ++r) {
    CAPTURE(r);
    const int node = r / kPerNode;
    const int local = r % kPerNode;
    const uint64_t held = chunk_bytes(kBytes, kPerNode, (local + 1) % kPerNode);
    const uint64_t inside =
        2 * kBytes - held - chunk_bytes(kBytes, kPerNode, (local + 2) % kPerNode);
    const uint64_t between = 2 * held - chunk_bytes(held, kNodes, (node + 1) % kNodes) -
                             chunk_bytes(held, kNodes, (node + 2) % kNodes);
    CHECK(sent[static_cast<size_t>(r)] == static_cast<double>(inside + between));
  }
}

TEST_CASE("the double binary tree of an odd, chunk-unaligned buffer sends each half whole") {
  // 395217 bytes: halves of 197609 (tree 0) and 197608 (tree 1), streamed in
  // 64 KiB chunks (too few for a larger one at depth 3): three whole chunks
  // and a last one of 1001 or 1000 bytes.
  constexpr uint64_t kBytes = 395217;
  const auto sent = gcsim::testing::simulate_in_child(
      gcsim::testing::star_platform("tree", kRanks, 1.25e9, 5e-6), [](Simulation& simulation) {
        return bytes_sent_by(simulation, simulation.platform().workers,
                             [](Group& g, int r) { double_binary_tree_allreduce(g, r, kBytes); });
      });
  REQUIRE(sent.size() == kRanks);
  for (int r = 0; r < kRanks; ++r) {
    CAPTURE(r);
    uint64_t expected = 0;
    for (int tree = 0; tree < 2; ++tree) {
      const TreeLinks links = double_binary_tree_links(kRanks, r, tree);
      expected +=
          chunk_bytes(kBytes, 2, tree) * (links.children.size() + (links.parent >= 0 ? 1 : 0));
    }
    CHECK(sent[static_cast<size_t>(r)] == static_cast<double>(expected));
  }
}

TEST_CASE("machine trees of 10 MiB on 4 machines of 4 GPUs pipeline 128 KiB chunks") {
  // Depth 5: 3 GPUs down a machine's chain below 2 levels between 4
  // machines (not log2 of all 16 GPUs). A half of 5 MiB makes 40 chunks of
  // 128 KiB, 8 per level.
  const std::vector<double> seconds = tree_against_128k_pieces(
      gcsim::testing::machines_platform("machines", 4, 4, {150e9, 2e-6}, {12.5e9, 20e-6}),
      10u << 20, 4);
  REQUIRE(seconds.size() == 2);
  CHECK(seconds[0] == doctest::Approx(seconds[1]).epsilon(1e-9).scale(0));
}
