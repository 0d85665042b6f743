#include "sim/network/alpha_beta.hpp"

#include "sim/network/log2.hpp"

#include <algorithm>
#include <cmath>

namespace gcsim::net::alpha_beta {

double ring_allreduce(const Cost& cost, int ranks, uint64_t bytes) {
  if (ranks < 2)
    return 0;
  return 2.0 * (ranks - 1) * cost.message(static_cast<double>(largest_chunk(bytes, ranks)));
}

double ring_reduce_scatter(const Cost& cost, int ranks, uint64_t bytes) {
  if (ranks < 2)
    return 0;
  return (ranks - 1) * cost.message(static_cast<double>(largest_chunk(bytes, ranks)));
}

double ring_allgather(const Cost& cost, int ranks, uint64_t bytes_per_rank) {
  if (ranks < 2)
    return 0;
  return (ranks - 1) * cost.message(static_cast<double>(bytes_per_rank));
}

double ring_allgatherv(const Cost& cost, const std::vector<uint64_t>& bytes_per_rank) {
  if (bytes_per_rank.size() < 2)
    return 0;
  // The largest block travels P-1 hops; every step waits for it.
  uint64_t largest = *std::max_element(bytes_per_rank.begin(), bytes_per_rank.end());
  return static_cast<double>(bytes_per_rank.size() - 1) *
         cost.message(static_cast<double>(largest));
}

double hierarchical_allreduce(const Cost& intra, const Cost& inter, int nodes, int per_node,
                              uint64_t bytes) {
  const uint64_t chunk = largest_chunk(bytes, per_node);
  return ring_reduce_scatter(intra, per_node, bytes) + ring_allreduce(inter, nodes, chunk) +
         ring_allgather(intra, per_node, chunk);
}

double binomial_broadcast(const Cost& cost, int ranks, uint64_t bytes) {
  return ceil_log2(ranks) * cost.message(static_cast<double>(bytes));
}

double binomial_reduce(const Cost& cost, int ranks, uint64_t bytes) {
  return ceil_log2(ranks) * cost.message(static_cast<double>(bytes));
}

double recursive_doubling_allreduce(const Cost& cost, int ranks, uint64_t bytes) {
  if (ranks < 2)
    return 0;
  int steps = floor_log2(ranks);
  bool power_of_two = (1 << steps) == ranks;
  return (steps + (power_of_two ? 0 : 2)) * cost.message(static_cast<double>(bytes));
}

double ps_push_pull(double route_latency_s, double worker_bandwidth_Bps,
                    double server_bandwidth_Bps, int workers, int servers, uint64_t bytes) {
  // Max-min fair sharing: a worker link carries its whole buffer in
  // `servers` shards, a server link `workers` copies of its shard; the busier
  // side sets the pace.
  auto shard = static_cast<double>(largest_chunk(bytes, servers));
  double worker_side = static_cast<double>(bytes) / worker_bandwidth_Bps;
  double server_side = workers * shard / server_bandwidth_Bps;
  return 2.0 * (route_latency_s + std::max(worker_side, server_side));
}

} // namespace gcsim::net::alpha_beta
