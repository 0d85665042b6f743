#include "sim/network/collectives.hpp"

#include "sim/network/log2.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace gcsim::net {
namespace {

// SimGrid needs a non-null payload pointer; the bytes are what matter.
int payload_token = 0;

} // namespace

Group::Group(std::string tag, std::vector<sg4::Host*> hosts)
    : tag_(std::move(tag)), hosts_(std::move(hosts)), bytes_sent_(hosts_.size(), 0) {
  ids_.resize(hosts_.size());
  for (size_t i = 0; i < ids_.size(); ++i)
    ids_[i] = static_cast<int>(i);
}

Group::Group(std::string tag, std::vector<sg4::Host*> hosts, std::vector<int> ids)
    : tag_(std::move(tag)), hosts_(std::move(hosts)), ids_(std::move(ids)),
      bytes_sent_(hosts_.size(), 0) {
  assert(ids_.size() == hosts_.size() && "one id per host");
}

sg4::Mailbox* Group::mailbox(int from, int to, int channel) const {
  assert(channel >= 0 && "channels count from 0");
  const uint64_t size = hosts_.size();
  const uint64_t key =
      (static_cast<uint64_t>(channel) * size + static_cast<uint64_t>(from)) * size +
      static_cast<uint64_t>(to);
  sg4::Mailbox*& found = mailboxes_[key];
  if (found == nullptr)
    found = sg4::Mailbox::by_name(tag_ + ":" + std::to_string(ids_[static_cast<size_t>(from)]) +
                                  ">" + std::to_string(ids_[static_cast<size_t>(to)]) +
                                  (channel == 0 ? "" : "#" + std::to_string(channel)));
  return found;
}

std::vector<std::pair<int, int>> Group::pairs_used() const {
  const uint64_t size = hosts_.size();
  std::vector<std::pair<int, int>> pairs;
  for (const auto& [key, mailbox] : mailboxes_) {
    const uint64_t pair = key % (size * size);
    pairs.emplace_back(static_cast<int>(pair / size), static_cast<int>(pair % size));
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

uint64_t chunk_bytes(uint64_t bytes, int parts, int index) {
  auto count = static_cast<uint64_t>(parts);
  return bytes / count + (static_cast<uint64_t>(index) < bytes % count ? 1 : 0);
}

void send(Group& group, int rank, int to, uint64_t bytes) {
  group.count_sent(rank, bytes);
  group.mailbox(rank, to)->put(&payload_token, bytes);
}

void receive(const Group& group, int rank, int from) {
  group.mailbox(from, rank)->get<int>();
}

namespace {

/// send_receive on mailboxes already looked up: a ring's steps all use the
/// same two, and looking them up per step cost a sixth of a 256-rank run
/// (a cache miss each, the map being cold after the other actors ran).
void exchange(Group& group, int rank, sg4::Mailbox* outgoing_box, uint64_t send_bytes,
              sg4::Mailbox* incoming_box) {
  group.count_sent(rank, send_bytes);
  sg4::CommPtr outgoing = outgoing_box->put_async(&payload_token, send_bytes);
  incoming_box->get<int>();
  outgoing->wait();
}

// Receives the next piece from every peer in `from`, all at once.
void receive_from_all(const Group& group, int rank, const std::vector<int>& from, int channel) {
  std::vector<sg4::CommPtr> pending;
  std::vector<int*> received(from.size(), nullptr);
  for (size_t i = 0; i < from.size(); ++i)
    pending.push_back(group.mailbox(from[i], rank, channel)->get_async<int>(&received[i]));
  sg4::Comm::wait_all(pending);
}

// Passes a stream's pieces on from the peers in `from` (none where the
// stream starts) to those in `to` (none where it ends); a piece from several
// peers (a reduction) goes on when all of them have sent it.
void forward_stream(Group& group, int rank, const std::vector<int>& from,
                    const std::vector<int>& to, int channel,
                    const std::vector<StreamPiece>& pieces) {
  std::vector<sg4::Mailbox*> outgoing;
  for (int peer : to)
    outgoing.push_back(group.mailbox(rank, peer, channel));
  std::vector<sg4::CommPtr> sends;
  for (const StreamPiece& piece : pieces) {
    if (!piece.cuts_through)
      receive_from_all(group, rank, from, channel);
    for (sg4::Mailbox* mailbox : outgoing) {
      group.count_sent(rank, piece.bytes);
      sends.push_back(mailbox->put_async(&payload_token, piece.bytes));
    }
    if (piece.cuts_through)
      receive_from_all(group, rank, from, channel);
  }
  sg4::Comm::wait_all(sends);
}

} // namespace

void send_receive(Group& group, int rank, int to, uint64_t send_bytes, int from) {
  exchange(group, rank, group.mailbox(rank, to), send_bytes, group.mailbox(from, rank));
}

namespace {

// The ranks a ring runs over, in ring order: first, first + stride, ... The
// whole group (0, 1), the GPUs of one machine (its first, 1) or one GPU of
// each machine (its index, G): arithmetic, so no list is built per call.
struct Ring {
  int first;
  int stride;
  int size;
  int rank(int position) const { return first + stride * position; }
};

// M-1 steps: at step s the member at `position` i sends block (i - s) mod M
// to member i+1 and receives block (i - s - 1) mod M from member i-1;
// `block_bytes(b)` weighs block b. In a reduce-scatter the blocks are the
// chunks being summed (member i ends with chunk (i + 1) mod M); in an
// allgather they are the members' contributions.
// With a `sum` that costs, each step also sums the block it receives, (i - s
// - 1) mod M, on the rank's compute host while the transfer runs.
template <typename BlockBytes>
void ring_pass(Group& group, Ring ring, int position, const BlockBytes& block_bytes,
               const SumCost& sum = {}) {
  const int size = ring.size;
  if (size < 2)
    return;
  const int rank = ring.rank(position);
  sg4::Mailbox* to_right = group.mailbox(rank, ring.rank((position + 1) % size));
  sg4::Mailbox* from_left = group.mailbox(ring.rank((position + size - 1) % size), rank);
  for (int step = 0; step < size - 1; ++step) {
    int block = ((position - step) % size + size) % size;
    if (sum.seconds_per_byte <= 0) {
      exchange(group, rank, to_right, block_bytes(block), from_left);
      continue;
    }
    assert(sum.cpu != nullptr && "a costed sum runs on a host");
    const double summed = static_cast<double>(block_bytes((block + size - 1) % size));
    sg4::ExecPtr work =
        sg4::this_actor::exec_init(summed * sum.seconds_per_byte * sum.cpu->get_speed())
            ->set_host(sum.cpu);
    work->start();
    exchange(group, rank, to_right, block_bytes(block), from_left);
    work->wait();
  }
}

// A reduce-scatter's block b: chunk b of the buffer.
auto summed_chunk(uint64_t bytes, int parts) {
  return [bytes, parts](int block) { return chunk_bytes(bytes, parts, block); };
}

// After the reduce-scatter member i holds chunk (i + 1) mod M: the
// allgather's block i.
auto held_chunk(uint64_t bytes, int parts) {
  return [bytes, parts](int block) { return chunk_bytes(bytes, parts, (block + 1) % parts); };
}

void allreduce_over(Group& group, Ring ring, int position, uint64_t bytes,
                    const SumCost& sum = {}) {
  ring_pass(group, ring, position, summed_chunk(bytes, ring.size), sum);
  ring_pass(group, ring, position, held_chunk(bytes, ring.size));
}

Ring whole(const Group& group) {
  return {0, 1, group.size()};
}

} // namespace

void ring_reduce_scatter(Group& group, int rank, uint64_t bytes) {
  ring_pass(group, whole(group), rank, summed_chunk(bytes, group.size()));
}

void ring_allgather(Group& group, int rank, uint64_t bytes_per_rank) {
  ring_pass(group, whole(group), rank, [bytes_per_rank](int) { return bytes_per_rank; });
}

void ring_allreduce(Group& group, int rank, uint64_t bytes, const SumCost& sum) {
  allreduce_over(group, whole(group), rank, bytes, sum);
}

void ring_allgatherv(Group& group, int rank, const std::vector<uint64_t>& bytes_per_rank) {
  assert(bytes_per_rank.size() == static_cast<size_t>(group.size()) && "one size per rank");
  ring_pass(group, whole(group), rank,
            [&bytes_per_rank](int block) { return bytes_per_rank[static_cast<size_t>(block)]; });
}

void hierarchical_allreduce(Group& group, int rank, uint64_t bytes, int ranks_per_node) {
  assert(ranks_per_node > 0 && group.size() % ranks_per_node == 0 &&
         "whole machines of ranks_per_node ranks");
  const int node = rank / ranks_per_node;
  const int local = rank % ranks_per_node;
  const Ring machine{node * ranks_per_node, 1, ranks_per_node};
  const Ring peers{local, ranks_per_node, group.size() / ranks_per_node};
  ring_pass(group, machine, local, summed_chunk(bytes, ranks_per_node));
  // GPU `local` now holds the machine's sum of chunk (local + 1) mod G; the
  // same GPU of every machine holds the same chunk.
  allreduce_over(group, peers, node, held_chunk(bytes, ranks_per_node)(local));
  ring_pass(group, machine, local, held_chunk(bytes, ranks_per_node));
}

void binomial_broadcast(Group& group, int rank, int root, uint64_t bytes) {
  const int size = group.size();
  const int relative = (rank - root + size) % size;
  auto absolute = [&](int rel) { return (rel + root) % size; };
  // Round k: relative ranks below 2^k send to rank + 2^k.
  for (int distance = 1; distance < size; distance <<= 1) {
    if (relative < distance) {
      if (relative + distance < size)
        send(group, rank, absolute(relative + distance), bytes);
    } else if (relative < 2 * distance) {
      receive(group, rank, absolute(relative - distance));
    }
  }
}

void eager_binomial_broadcast(Group& group, int rank, int root, uint64_t bytes) {
  const int size = group.size();
  const int relative = (rank - root + size) % size;
  const int dimensions = ceil_log2(size);
  std::vector<sg4::CommPtr> sends;
  int mask = (1 << dimensions) - 1;
  for (int bit = 0; bit < dimensions; ++bit) {
    mask ^= 1 << bit;
    if ((relative & mask) != 0)
      continue;
    const int relative_peer = relative ^ (1 << bit);
    if (relative_peer >= size)
      continue;
    const int peer = (relative_peer + root) % size;
    if ((relative & (1 << bit)) == 0) {
      group.count_sent(rank, bytes);
      sends.push_back(group.mailbox(rank, peer)->put_async(&payload_token, bytes));
    } else {
      receive(group, rank, peer);
    }
  }
  sg4::Comm::wait_all(sends);
}

// A pipelined stream of `bytes` in chunks of `chunk` bytes, simulated as
// three pieces: the first chunk, the chunks between as one body, the last
// chunk (fewer pieces where there are fewer chunks). A rank forwards the
// first and the last piece once it has them, and the body as soon as the
// first has arrived, its bytes following while they come in. So filling and
// draining the pipeline costs a chunk and a latency per hop, and the body
// streams at the rate its links share, with no latency per chunk: NCCL keeps
// 8 chunks in flight per peer, so its wire does not wait on each one. The
// body's own message starts once the first chunk is in, so a stream pays one
// latency more than a pipeline; receiving it alongside the first chunk would
// instead share the first chunk's link and add a chunk's time per hop. Three
// messages per hop instead of one per chunk also keep a 1024-rank tree within
// seconds of simulation (README, Speed).
std::vector<StreamPiece> stream_pieces(uint64_t bytes, uint64_t chunk) {
  assert(chunk > 0 && "a pipeline needs chunks of at least a byte");
  const uint64_t chunks = bytes <= chunk ? 1 : (bytes - 1) / chunk + 1;
  if (chunks == 1)
    return {{bytes, false}};
  const uint64_t last = bytes - (chunks - 1) * chunk;
  if (chunks == 2)
    return {{chunk, false}, {last, false}};
  return {{chunk, false}, {bytes - chunk - last, true}, {last, false}};
}

void pipelined_ring_broadcast(Group& group, int rank, int root, uint64_t bytes, uint64_t chunk) {
  const int size = group.size();
  const int relative = (rank - root + size) % size;
  std::vector<int> from; // the root starts the chain, its last rank ends it
  std::vector<int> to;
  if (relative != 0)
    from.push_back((rank + size - 1) % size);
  if (relative + 1 < size)
    to.push_back((rank + 1) % size);
  forward_stream(group, rank, from, to, 0, stream_pieces(bytes, chunk));
}

TreeLinks binary_tree_links(int size, int rank) {
  assert(size > 0 && rank >= 0 && rank < size && "a rank of the tree");
  TreeLinks links;
  if (size < 2)
    return links;
  // In-order binary tree: rank r > 0 with lowest set bit b sits log2 b
  // levels above the leaves (the odd ranks); its children are r -/+ b/2, and its
  // parent r - b or r + b, whichever has bit 2b set. Rank 0 is the root
  // and has one child, the largest power of two below `size`. Where a right
  // child or a parent falls past the last rank, the nearest one in range
  // below it takes its place.
  if (rank == 0) {
    int top = 1;
    while (top * 2 < size)
      top *= 2;
    links.children.push_back(top);
    return links;
  }
  const int low = rank & -rank;
  links.parent = (rank ^ low) | (low << 1);
  if (links.parent >= size)
    links.parent = rank ^ low;
  for (int step = low >> 1, left = 1; step > 0; step >>= 1) {
    if (left) {
      links.children.push_back(rank - step);
      left = 0;
    }
    if (rank + step < size) {
      links.children.push_back(rank + step);
      break;
    }
  }
  return links;
}

TreeLinks double_binary_tree_links(int size, int rank, int tree) {
  assert((tree == 0 || tree == 1) && "two trees");
  if (tree == 0)
    return binary_tree_links(size, rank);
  // The second tree is the first one mirrored (even sizes) or shifted by one
  // (odd sizes), so that a rank is a leaf in one tree and interior in the
  // other: the first tree's leaves are its odd ranks.
  const bool mirror = size % 2 == 0;
  auto into = [&](int r) { return mirror ? size - 1 - r : (r - 1 + size) % size; };
  auto back = [&](int r) { return mirror ? size - 1 - r : (r + 1) % size; };
  TreeLinks links = binary_tree_links(size, into(rank));
  if (links.parent >= 0)
    links.parent = back(links.parent);
  for (int& child : links.children)
    child = back(child);
  return links;
}

TreeLinks machine_tree_links(int nodes, int per_node, int rank, int tree) {
  assert(per_node > 0 && rank < nodes * per_node && "a rank of whole machines");
  const int node = rank / per_node;
  const int local = rank % per_node;
  TreeLinks links;
  if (local > 0) {
    links.parent = rank - 1;
    if (local + 1 < per_node)
      links.children.push_back(rank + 1);
    return links;
  }
  const TreeLinks between = double_binary_tree_links(nodes, node, tree);
  if (between.parent >= 0)
    links.parent = between.parent * per_node;
  for (int child : between.children)
    links.children.push_back(child * per_node);
  if (per_node > 1)
    links.children.push_back(rank + 1);
  return links;
}

namespace {

// NCCL's pipeline step (512 KiB), halved down to 64 KiB while a tree's half
// of the buffer makes fewer than 8 chunks per level of the tree.
uint64_t tree_chunk_bytes(uint64_t bytes, int nodes, int per_node) {
  int depth = per_node - 1;
  for (int reach = 1; reach < nodes; reach *= 2)
    ++depth;
  uint64_t chunk = 512 * 1024;
  while (chunk > 64 * 1024 && (bytes / 2) / chunk < static_cast<uint64_t>(8 * std::max(depth, 1)))
    chunk /= 2;
  return chunk;
}

} // namespace

void tree_allreduce_in_pieces(Group& group, int rank, uint64_t bytes, int ranks_per_node,
                              const PiecesOf& pieces_of) {
  const int size = group.size();
  assert(ranks_per_node > 0 && size % ranks_per_node == 0 && "whole machines");
  if (size < 2)
    return;
  const int nodes = size / ranks_per_node;
  const uint64_t chunk = tree_chunk_bytes(bytes, nodes, ranks_per_node);
  std::vector<sg4::ActorPtr> streams;
  for (int tree = 0; tree < 2; ++tree) {
    const std::vector<StreamPiece> pieces = pieces_of(chunk_bytes(bytes, 2, tree), chunk);
    const TreeLinks links = machine_tree_links(nodes, ranks_per_node, rank, tree);
    // Channel 1 + tree: the two trees may link the same pair of ranks.
    const int channel = 1 + tree;
    // The reduction flows up, children to parent, and the result down. The
    // root turns the pieces around as its children's come in; any other rank
    // runs the two directions side by side.
    if (links.parent >= 0)
      streams.push_back(sg4::Actor::create("tree-up", group.host(rank), [=, &group] {
        forward_stream(group, rank, links.children, {links.parent}, channel, pieces);
      }));
    const std::vector<int> down_from =
        links.parent >= 0 ? std::vector<int>{links.parent} : links.children;
    streams.push_back(sg4::Actor::create("tree-down", group.host(rank), [=, &group] {
      forward_stream(group, rank, down_from, links.children, channel, pieces);
    }));
  }
  for (const sg4::ActorPtr& stream : streams)
    stream->join();
}

void double_binary_tree_allreduce(Group& group, int rank, uint64_t bytes, int ranks_per_node) {
  tree_allreduce_in_pieces(group, rank, bytes, ranks_per_node, stream_pieces);
}

void binomial_reduce(Group& group, int rank, int root, uint64_t bytes) {
  const int size = group.size();
  const int relative = (rank - root + size) % size;
  auto absolute = [&](int rel) { return (rel + root) % size; };
  int top = 1;
  while (top < size)
    top <<= 1;
  // The broadcast's rounds in reverse.
  for (int distance = top >> 1; distance >= 1; distance >>= 1) {
    if (relative < distance) {
      if (relative + distance < size)
        receive(group, rank, absolute(relative + distance));
    } else if (relative < 2 * distance) {
      send(group, rank, absolute(relative - distance), bytes);
    }
  }
}

void recursive_doubling_allreduce(Group& group, int rank, uint64_t bytes) {
  const int size = group.size();
  if (size < 2)
    return;
  const DoublingRanks ranks(size);
  // Fold: among the first 2*extra ranks, even ranks hand their data to the
  // next odd rank and sit out the exchange.
  const int virtual_rank = ranks.virtual_rank(rank);
  if (rank < 2 * ranks.extra) {
    if (virtual_rank < 0)
      send(group, rank, rank + 1, bytes);
    else
      receive(group, rank, rank - 1);
  }
  if (virtual_rank >= 0) {
    for (int mask = 1; mask < ranks.power; mask <<= 1) {
      const int peer = ranks.real_rank(virtual_rank ^ mask);
      send_receive(group, rank, peer, bytes, peer);
    }
  }
  // Unfold: the odd ranks return the result.
  if (rank < 2 * ranks.extra) {
    if (virtual_rank < 0)
      receive(group, rank, rank + 1);
    else
      send(group, rank, rank - 1, bytes);
  }
}

void ps_worker_push_pull(Group& group, int rank, int workers, uint64_t bytes) {
  const int servers = group.size() - workers;
  assert(servers > 0 && "a parameter-server group needs servers after the workers");
  std::vector<sg4::CommPtr> pushes;
  for (int s = 0; s < servers; ++s) {
    uint64_t shard = chunk_bytes(bytes, servers, s);
    group.count_sent(rank, shard);
    pushes.push_back(group.mailbox(rank, workers + s)->put_async(&payload_token, shard));
  }
  sg4::Comm::wait_all(pushes);
  std::vector<sg4::CommPtr> pulls;
  std::vector<int*> received(static_cast<size_t>(servers));
  for (int s = 0; s < servers; ++s)
    pulls.push_back(
        group.mailbox(workers + s, rank)->get_async<int>(&received[static_cast<size_t>(s)]));
  sg4::Comm::wait_all(pulls);
}

void ps_server_push_pull(Group& group, int rank, int workers, uint64_t bytes, double* pushes_in) {
  const int servers = group.size() - workers;
  const uint64_t shard = chunk_bytes(bytes, servers, rank - workers);
  std::vector<sg4::CommPtr> pushes;
  std::vector<int*> received(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w)
    pushes.push_back(group.mailbox(w, rank)->get_async<int>(&received[static_cast<size_t>(w)]));
  sg4::Comm::wait_all(pushes);
  if (pushes_in != nullptr)
    *pushes_in = sg4::Engine::get_clock();
  std::vector<sg4::CommPtr> pulls;
  for (int w = 0; w < workers; ++w) {
    group.count_sent(rank, shard);
    pulls.push_back(group.mailbox(rank, w)->put_async(&payload_token, shard));
  }
  sg4::Comm::wait_all(pulls);
}

std::vector<std::pair<int, int>> whole_group_pairs(int size) {
  std::vector<std::pair<int, int>> pairs;
  for (int distance = 1; distance < size; distance *= 2)
    for (int rank = 0; rank < size; ++rank) {
      pairs.emplace_back(rank, (rank + distance) % size);
      pairs.emplace_back((rank + distance) % size, rank);
    }
  const DoublingRanks ranks(size);
  for (int rank = 0; rank < size; ++rank) {
    const int virtual_rank = ranks.virtual_rank(rank);
    if (virtual_rank < 0)
      continue;
    for (int mask = 1; mask < ranks.power; mask <<= 1)
      pairs.emplace_back(rank, ranks.real_rank(virtual_rank ^ mask));
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

} // namespace gcsim::net
