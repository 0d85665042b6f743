// The tree allreduce's streams (first chunk, body, last chunk per hop)
// against the pipeline they stand for, chunk by chunk: every chunk a message
// that a rank passes on once it has it from all its inputs. With no latency
// the chunk-by-chunk pipeline is exact and the streams differ only by how a
// body shares links before its inputs have arrived: not at all on machines
// of GPUs, 0.16% on a star, up to 1.8% faster on an oversubscribed fat-tree
// (1 MiB; 0.26% at 64 MiB). With latency the chunk-by-chunk messages also
// pay one per chunk, which NCCL's chunks in flight hide and the streams do
// not pay (2-10% here).

#include "sim/network/collectives.hpp"
#include "sim/network/platform.hpp"
#include "tests/sim/child_simulation.hpp"
#include "tests/sim/lockstep.hpp"
#include "tests/sim/test_platforms.hpp"

#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;
using namespace gcsim::net;

namespace {

int token = 0;

void receive_from_all(Group& group, int rank, const std::vector<int>& from, int channel) {
  std::vector<sg4::CommPtr> pending;
  std::vector<int*> received(from.size(), nullptr);
  for (size_t i = 0; i < from.size(); ++i)
    pending.push_back(group.mailbox(from[i], rank, channel)->get_async<int>(&received[i]));
  sg4::Comm::wait_all(pending);
}

void pass_chunks(Group& group, int rank, const std::vector<int>& from, const std::vector<int>& to,
                 int channel, const std::vector<uint64_t>& chunks) {
  std::vector<sg4::CommPtr> sends;
  for (uint64_t bytes : chunks) {
    receive_from_all(group, rank, from, channel);
    for (int peer : to)
      sends.push_back(group.mailbox(rank, peer, channel)->put_async(&token, bytes));
  }
  sg4::Comm::wait_all(sends);
}

// The same trees, halves and chunks as double_binary_tree_allreduce.
void chunk_by_chunk_tree_allreduce(Group& group, int rank, uint64_t bytes, int per_node) {
  const int nodes = group.size() / per_node;
  const uint64_t chunk = tree_chunk_bytes(bytes, nodes, per_node);
  std::vector<sg4::ActorPtr> streams;
  for (int tree = 0; tree < 2; ++tree) {
    const uint64_t half = chunk_bytes(bytes, 2, tree);
    std::vector<uint64_t> chunks;
    for (uint64_t done = 0; done < half; done += chunk)
      chunks.push_back(std::min(chunk, half - done));
    const TreeLinks links = machine_tree_links(nodes, per_node, rank, tree);
    const int channel = 1 + tree;
    if (links.parent >= 0)
      streams.push_back(sg4::Actor::create("up", group.host(rank), [=, &group] {
        pass_chunks(group, rank, links.children, {links.parent}, channel, chunks);
      }));
    const std::vector<int> down_from =
        links.parent >= 0 ? std::vector<int>{links.parent} : links.children;
    streams.push_back(sg4::Actor::create("down", group.host(rank), [=, &group] {
      pass_chunks(group, rank, down_from, links.children, channel, chunks);
    }));
  }
  for (const sg4::ActorPtr& stream : streams)
    stream->join();
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
            chunk_by_chunk_tree_allreduce(*groups[c], rank, bytes, per_node);
        });
  });
}

const std::vector<uint64_t> kSizes{1u << 20, 8u << 20, 64u << 20};

void check_close(const std::vector<double>& seconds, double tolerance) {
  REQUIRE(seconds.size() == 2 * kSizes.size());
  for (size_t s = 0; s < kSizes.size(); ++s) {
    INFO(kSizes[s] << " bytes: streams " << seconds[2 * s] << " s, chunk by chunk "
                   << seconds[2 * s + 1] << " s");
    CHECK(seconds[2 * s] == doctest::Approx(seconds[2 * s + 1]).epsilon(tolerance).scale(0));
  }
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
  const std::vector<double> seconds =
      both_ways(gcsim::testing::star_platform("star", 16, 1.25e9, 25e-6), kSizes, 1);
  REQUIRE(seconds.size() == 2 * kSizes.size());
  for (size_t s = 0; s < kSizes.size(); ++s) {
    INFO(kSizes[s] << " bytes: streams " << seconds[2 * s] << " s, chunk by chunk "
                   << seconds[2 * s + 1] << " s");
    CHECK(seconds[2 * s] < 0.99 * seconds[2 * s + 1]);
  }
}
