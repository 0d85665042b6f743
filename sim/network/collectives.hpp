#pragma once
// Collectives as the point-to-point messages their algorithms really send.
//
// Every function here is called by the actor of one rank, and every rank of
// the group calls it (MPI semantics): each message is a SimGrid
// communication, so contention with other traffic is modelled by SimGrid.
// Only sizes travel; the values are computed by the compressors. Sizes are
// whole bytes (SimGrid truncates fractions); where an algorithm splits a
// buffer into P chunks, the first (bytes mod P) chunks are one byte longer.

#include "sim/network/log2.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace simgrid::s4u {
class Host;
class Mailbox;
} // namespace simgrid::s4u

namespace gcsim::net {

/// The ranks of one collective context. Mailboxes are per (sender,
/// receiver) pair and per group, so that concurrent groups never mix up
/// their messages.
class Group {
public:
  Group(std::string tag, std::vector<simgrid::s4u::Host*> hosts);
  /// `ids` name the ranks in mailbox names (e.g. their global worker ranks),
  /// so that groups of different members never share a mailbox.
  Group(std::string tag, std::vector<simgrid::s4u::Host*> hosts, std::vector<int> ids);

  int size() const { return static_cast<int>(hosts_.size()); }
  simgrid::s4u::Host* host(int rank) const { return hosts_[static_cast<size_t>(rank)]; }
  /// Messages of different `channel`s between the same two ranks never
  /// meet (two trees may link the same pair).
  simgrid::s4u::Mailbox* mailbox(int from, int to, int channel = 0) const;

  /// Bytes each rank has put on the network through this group.
  uint64_t bytes_sent(int rank) const { return bytes_sent_[static_cast<size_t>(rank)]; }
  void count_sent(int rank, uint64_t bytes) { bytes_sent_[static_cast<size_t>(rank)] += bytes; }
  /// The (from, to) pairs of ranks that have had a mailbox so far, sorted.
  std::vector<std::pair<int, int>> pairs_used() const;

private:
  std::string tag_;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<int> ids_;
  std::vector<uint64_t> bytes_sent_;
  // The mailboxes used so far, by from * size + to: a ring at 1024 ranks asks
  // for millions, and naming one builds and hashes a string each time.
  mutable std::unordered_map<uint64_t, simgrid::s4u::Mailbox*> mailboxes_;
};

/// Size of chunk `index` when `bytes` is cut into `parts` chunks.
uint64_t chunk_bytes(uint64_t bytes, int parts, int index);

/// Sends `bytes` to `to` and waits until it is received.
void send(Group& group, int rank, int to, uint64_t bytes);
/// Receives one message from `from`.
void receive(const Group& group, int rank, int from);
/// Sends to `to` while receiving from `from`; returns when both are done.
void send_receive(Group& group, int rank, int to, uint64_t send_bytes, int from);

/// The arithmetic of a reduction where it is not free: gloo sums float16 on
/// the CPU element by element, slower than a link of 1 Gbit/s carries them.
/// Each chunk a rank receives is summed on `cpu` (the rank's compute host,
/// shared as its compute is) at `seconds_per_byte` of one core, beside the
/// transfer, as gloo pipelines them: a reduce-scatter step takes the longer
/// of the two. Zero: the sum is free (NCCL on GPUs, float32 on CPUs).
struct SumCost {
  simgrid::s4u::Host* cpu = nullptr;
  double seconds_per_byte = 0;
};

/// Ring allreduce of `bytes` (reduce-scatter then allgather): 2(P-1) steps
/// of bytes/P; the reduce-scatter's sums cost `sum`.
void ring_allreduce(Group& group, int rank, uint64_t bytes, const SumCost& sum = {});
/// Ring reduce-scatter of `bytes` in total: P-1 steps of bytes/P.
void ring_reduce_scatter(Group& group, int rank, uint64_t bytes);
/// Ring allgather where every rank contributes `bytes_per_rank`.
void ring_allgather(Group& group, int rank, uint64_t bytes_per_rank);
/// Ring allgatherv: rank r contributes bytes_per_rank[r].
void ring_allgatherv(Group& group, int rank, const std::vector<uint64_t>& bytes_per_rank);
/// Hierarchical (two-level) allreduce of `bytes` over machines of
/// `ranks_per_node` consecutive ranks (Horovod's hierarchical allreduce,
/// BlueConnect): a ring reduce-scatter among each machine's ranks, a ring
/// allreduce of each chunk among the ranks that hold it (one per machine,
/// all G of a machine at once through its NIC), and a ring allgather within
/// each machine. Each NIC carries 2(N-1)/N of the buffer each way (a flat
/// ring over the same ranks: 2(GN-1)/(GN)) in 2(N-1) latencies between
/// machines instead of 2(GN-1), for 2(G-1) more steps of bytes/G inside
/// each machine.
void hierarchical_allreduce(Group& group, int rank, uint64_t bytes, int ranks_per_node);
/// A rank's place in a tree: its parent (-1 at the root) and children.
struct TreeLinks {
  int parent = -1;
  std::vector<int> children;
};
/// NCCL's binary tree over ranks 0..size-1 (in order, rooted at rank 0,
/// which has one child), and the two complementary trees of its double
/// binary tree (`tree` 0 or 1): a rank is a leaf in one of them and, where
/// the size allows, interior in the other.
TreeLinks binary_tree_links(int size, int rank);
TreeLinks double_binary_tree_links(int size, int rank, int tree);
/// NCCL's trees on `nodes` machines of `per_node` consecutive ranks: the
/// double binary tree joins the machines through their first rank, and each
/// machine's ranks hang from it in a chain. One rank per machine: the
/// double binary tree itself.
TreeLinks machine_tree_links(int nodes, int per_node, int rank, int tree);
/// NCCL's double binary tree allreduce (NCCL 2.4): each tree carries half
/// the buffer in chunks (512 KiB, halved down to 64 KiB while a half makes
/// fewer than 8 chunks per level of the tree), reduced up to the root and
/// broadcast back down, pipelined up and down at once: a rank passes the
/// stream on as soon as its first chunk is in (the first chunk, the middle
/// ones as one body and the last chunk are a message each, so each hop pays
/// a latency at the pipeline's fill, not one per chunk, as NCCL keeps 8
/// chunks in flight). About 2 log2 P latencies against a ring's
/// 2(P-1); every rank sends the half it is interior for three times (once up
/// to its parent, once down to each of its two children) and the other half
/// once, 2 buffers in all. With
/// `ranks_per_node` > 1 the trees are machine_tree_links'.
void double_binary_tree_allreduce(Group& group, int rank, uint64_t bytes, int ranks_per_node = 1);
/// A piece of a pipelined stream: a rank sends it on once it has arrived,
/// or, where it `cuts_through`, as soon as the piece before it has, its
/// bytes following while they come in.
struct StreamPiece {
  uint64_t bytes;
  bool cuts_through;
};
/// The pieces gcsim sends a pipelined stream of `bytes` in chunks of
/// `chunk` as: the first chunk, the chunks between as one cut-through body,
/// the last chunk (fewer where there are fewer chunks).
std::vector<StreamPiece> stream_pieces(uint64_t bytes, uint64_t chunk);
/// Cuts one tree's half of the buffer, given the tree's chunk, into pieces.
using PiecesOf = std::function<std::vector<StreamPiece>(uint64_t half, uint64_t chunk)>;
/// double_binary_tree_allreduce with each half sent as `pieces_of` cuts it:
/// stream_pieces there, one piece per chunk for the chunk-by-chunk pipeline
/// the streams approximate (tests/sim/tree_stream_simtest.cpp).
void tree_allreduce_in_pieces(Group& group, int rank, uint64_t bytes, int ranks_per_node,
                              const PiecesOf& pieces_of);
/// Binomial-tree broadcast of `bytes` from `root`, gloo's tree (the nearest
/// child first), each send waited for before the next.
void binomial_broadcast(Group& group, int rank, int root, uint64_t bytes);
/// gloo's broadcast (gloo/broadcast.cc): the same binomial tree, but a rank
/// posts the sends to all its children at once after it has received, and
/// waits for them only at the end, so concurrent sends share its link.
void eager_binomial_broadcast(Group& group, int rank, int root, uint64_t bytes);
/// NCCL's default step (NCCL_BUFFSIZE 4 MiB over its 8 steps): the piece
/// its ring broadcast forwards at a time.
constexpr uint64_t kNcclChunkBytes = 512 * 1024;
/// NCCL's ring broadcast: a chain from `root` along the ranks, the buffer
/// cut into chunks of at most `chunk` bytes that stream through it as the
/// tree's do: (n + P - 2) chunk / B + (P + 1) latencies for n >= 3 chunks
/// on uniform links, about bytes / B plus a chunk per hop, where a tree
/// takes a multiple of bytes / B.
void pipelined_ring_broadcast(Group& group, int rank, int root, uint64_t bytes, uint64_t chunk);
/// Binomial-tree reduce of `bytes` to `root`.
void binomial_reduce(Group& group, int rank, int root, uint64_t bytes);
/// Recursive doubling's ranks in a group of `size`: the `power` ranks that
/// exchange are the odd ones among the first 2 * extra and every one after.
struct DoublingRanks {
  explicit DoublingRanks(int size) : power(1 << floor_log2(size)), extra(size - power) {}
  /// The exchanging rank of real rank `rank`; -1 for a rank that sits out.
  int virtual_rank(int rank) const {
    if (rank >= 2 * extra)
      return rank - extra;
    return rank % 2 == 0 ? -1 : rank / 2;
  }
  int real_rank(int virtual_peer) const {
    return virtual_peer < extra ? 2 * virtual_peer + 1 : virtual_peer + extra;
  }
  int power;
  int extra;
};
/// Recursive-doubling allreduce of `bytes`; non-powers of two fold the
/// extra ranks in first and out last (Thakur, Rabenseifner, Gropp 2005).
void recursive_doubling_allreduce(Group& group, int rank, uint64_t bytes);

/// Parameter-server push/pull. Every worker calls ps_worker_push_pull and
/// every server calls ps_server_push_pull; the group's ranks are the
/// workers first, then the servers. Each worker pushes bytes/S to every
/// server and pulls the same back after the server has heard from all.
/// `pushes_in`, where given, gets the time the server had every push (its
/// pulls start then).
void ps_worker_push_pull(Group& group, int rank, int workers, uint64_t bytes);
void ps_server_push_pull(Group& group, int rank, int workers, uint64_t bytes,
                         double* pushes_in = nullptr);

/// The ordered pairs of ranks (from, to) that the collectives above send
/// between in a group of `size`, whatever the root: ranks 2^k apart modulo
/// `size` (rings, binomial trees and reductions, the double binary tree) and
/// recursive doubling's partners. What a platform must route for them; a parameter server's, a
/// subset group's and the hierarchical allreduce's pairs are not included
/// (the last runs on machines of GPUs only, multi_gpu platforms and fat
/// trees of them, which gcsim builds itself).
std::vector<std::pair<int, int>> whole_group_pairs(int size);

} // namespace gcsim::net
