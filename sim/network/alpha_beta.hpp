#pragma once
// Closed-form alpha-beta costs of the collectives in collectives.hpp
// (Thakur, Rabenseifner and Gropp, "Optimization of Collective
// Communication Operations in MPICH", IJHPCA 2005), without the reduction
// term, for whole-byte messages: where a buffer of n bytes is cut into P
// chunks, the largest chunk, ceil(n/P), sets the pace. This is the analytic oracle the SimGrid path
// is checked against when nothing contends for the network.

#include <cstdint>
#include <vector>

namespace gcsim::net::alpha_beta {

/// alpha: seconds of latency per message; beta: seconds per byte.
struct Cost {
  double alpha_s;
  double beta_s_per_byte;
  double message(uint64_t bytes) const { return alpha_s + bytes * beta_s_per_byte; }
};

/// ceil(bytes / parts): the largest chunk.
inline uint64_t largest_chunk(uint64_t bytes, int parts) {
  auto count = static_cast<uint64_t>(parts);
  return (bytes + count - 1) / count;
}

double ring_allreduce(const Cost& cost, int ranks, uint64_t bytes);
double ring_reduce_scatter(const Cost& cost, int ranks, uint64_t bytes);
double ring_allgather(const Cost& cost, int ranks, uint64_t bytes_per_rank);
double ring_allgatherv(const Cost& cost, const std::vector<uint64_t>& bytes_per_rank);
/// On `nodes` machines of `per_node` ranks: `intra` is a message between
/// two ranks of a machine, `inter` one between machines while every rank of
/// the machine sends through its NIC at once (so its beta is the NIC's
/// share). Exact when per_node x nodes divides `bytes`.
double hierarchical_allreduce(const Cost& intra, const Cost& inter, int nodes, int per_node,
                              uint64_t bytes);
double binomial_broadcast(const Cost& cost, int ranks, uint64_t bytes);
double binomial_reduce(const Cost& cost, int ranks, uint64_t bytes);
double recursive_doubling_allreduce(const Cost& cost, int ranks, uint64_t bytes);
/// Push to and pull from `servers` sharded servers (exact when `servers`
/// divides `bytes`; otherwise servers with a shorter shard start their pull
/// a byte's time earlier and this is an upper bound); `worker` and `server`
/// are the costs of a worker's and a server's access link (a message
/// crosses both: latency adds up, the slower side limits).
double ps_push_pull(double route_latency_s, double worker_bandwidth_Bps,
                    double server_bandwidth_Bps, int workers, int servers, uint64_t bytes);

} // namespace gcsim::net::alpha_beta
