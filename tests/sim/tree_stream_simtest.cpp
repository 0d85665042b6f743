// The tree allreduce's streams (first chunk, body, last chunk per hop)
// against the pipeline they stand for, chunk by chunk on the same trees:
// every chunk a message that a rank passes on once it has it from all its
// inputs. With no latency the chunk-by-chunk pipeline is exact and the
// streams differ only by how a body shares links before its inputs have
// arrived: not at all on machines
// of GPUs, 0.16% on a star, up to 1.8% faster on an oversubscribed fat-tree
// (1 MiB; 0.26% at 64 MiB). With latency the chunk-by-chunk messages also
// pay one per chunk, which NCCL's chunks in flight hide and the streams do
// not pay (2-10% here). The test prints each size's two times.

#include "sim/network/collectives.hpp"
#include "sim/network/platform.hpp"
#include "tests/sim/child_simulation.hpp"
#include "tests/sim/lockstep.hpp"
#include "tests/sim/test_platforms.hpp"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;
using namespace gcsim::net;

namespace {

// The pipeline the streams stand for: every chunk a piece of its own.
std::vector<StreamPiece> chunk_by_chunk(uint64_t half, uint64_t chunk) {
  std::vector<StreamPiece> pieces;
  for (uint64_t done = 0; done < half; done += chunk)
    pieces.push_back({std::min(chunk, half - done), false});
  return pieces;
}

// Both allreduces of each size over every worker of `spec`: the streamed
// one's time, then the chunk-by-chunk one's, size by size.
std::vector<double> both_ways(const PlatformSpec& spec, const std::vector<uint64_t>& sizes,
                              int per_node) {
  return gcsim::testing::simulate_in_child(spec, [&](Simulation& simulation) {
    const std::vector<sg4::Host*>& hosts = simulation.platform().workers;
    std::vector<std::unique_ptr<Group>> groups;
    for (size_t c = 0; c < 2 * sizes.size(); ++c)
      groups.push_back(std::make_unique<Group>("case" + std::to_string(c), hosts));
    return gcsim::testing::time_in_lockstep(
        simulation, hosts, groups.size(), [&](size_t c, int rank) {
          const uint64_t bytes = sizes[c / 2];
          if (c % 2 == 0)
            double_binary_tree_allreduce(*groups[c], rank, bytes, per_node);
          else
            tree_allreduce_in_pieces(*groups[c], rank, bytes, per_node, chunk_by_chunk);
        });
  });
}

const std::vector<uint64_t> kSizes{1u << 20, 8u << 20, 64u << 20};

// Each size's streamed time over its chunk-by-chunk time, printed with both.
std::vector<double> stream_ratios(const std::vector<double>& seconds) {
  REQUIRE(seconds.size() == 2 * kSizes.size());
  std::vector<double> ratios;
  for (size_t s = 0; s < kSizes.size(); ++s) {
    MESSAGE(kSizes[s] << " bytes: streams " << seconds[2 * s] << " s, chunk by chunk "
                      << seconds[2 * s + 1] << " s");
    ratios.push_back(seconds[2 * s] / seconds[2 * s + 1]);
  }
  return ratios;
}

void check_close(const std::vector<double>& seconds, double tolerance) {
  for (double ratio : stream_ratios(seconds))
    CHECK(std::fabs(ratio - 1) <= tolerance);
}

} // namespace

TEST_CASE("streams time a star's trees as the chunk-by-chunk pipeline does") {
  check_close(both_ways(gcsim::testing::star_platform("star", 16, 1.25e9, 0), kSizes, 1), 0.005);
}

TEST_CASE("and machines' trees, GPU links far faster than the NICs") {
  const PlatformSpec machines =
      gcsim::testing::machines_platform("machines", 4, 4, {150e9, 0}, {12.5e9, 0});
  check_close(both_ways(machines, kSizes, 4), 1e-9);
}

TEST_CASE("and an oversubscribed fat-tree's, where a tree's links run at different rates") {
  PlatformSpec fat_tree = gcsim::testing::star_platform("fat-tree", 16, 1.25e9, 0);
  fat_tree.topology = Topology::fat_tree;
  fat_tree.fat_tree = {{4, 4}, {1, 1}, {1, 1}}; // 4 nodes a leaf, one uplink each: 4:1
  check_close(both_ways(fat_tree, kSizes, 1), 0.02);
}

TEST_CASE("with latency, chunk-by-chunk messages pay one per chunk and the streams do not") {
  // 10 Gbps and 25 us a link (50 us a route): a 128 KiB chunk takes 105 us.
  for (double ratio : stream_ratios(
           both_ways(gcsim::testing::star_platform("star", 16, 1.25e9, 25e-6), kSizes, 1)))
    CHECK(ratio < 0.99);
}

TEST_CASE("a half of two chunks streams as the chunk-by-chunk pipeline does, exactly") {
  // 191072 bytes on 8 ranks: halves of 95536 bytes, 64 KiB chunks: a whole
  // chunk, then one of 30000 bytes. Two pieces either way, in the same order.
  const std::vector<double> seconds = gcsim::testing::simulate_in_child(
      gcsim::testing::star_platform("star", 8, 1.25e9, 25e-6), [](Simulation& simulation) {
        const std::vector<sg4::Host*>& hosts = simulation.platform().workers;
        Group streamed("streamed", hosts);
        Group chunked("chunked", hosts);
        return gcsim::testing::time_in_lockstep(simulation, hosts, 2, [&](size_t c, int r) {
          if (c == 0)
            double_binary_tree_allreduce(streamed, r, 191072);
          else
            tree_allreduce_in_pieces(chunked, r, 191072, 1, chunk_by_chunk);
        });
      });
  REQUIRE(seconds.size() == 2);
  CHECK(seconds[0] == doctest::Approx(seconds[1]).epsilon(1e-12).scale(0));
}
