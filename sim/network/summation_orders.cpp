#include "sim/network/summation_orders.hpp"

#include "sim/network/collectives.hpp"

#include <cassert>
#include <numeric>
#include <utility>
#include <vector>

namespace gcsim::net {
namespace {

using compress::Sum;

// The partial sum `rank` sends up `tree`: its value, then its children's.
Sum subtree_sum(const std::vector<TreeLinks>& tree, int rank) {
  std::vector<Sum> terms{Sum::of(rank)};
  for (int child : tree[static_cast<size_t>(rank)].children)
    terms.push_back(subtree_sum(tree, child));
  return Sum::added(std::move(terms));
}

// The partial sum virtual rank `v` holds once it has exchanged with every
// partner below `reach` (a power of two).
Sum doubling_sum(const DoublingRanks& ranks, int v, int reach) {
  const int rank = ranks.real_rank(v);
  std::vector<Sum> terms{Sum::of(rank)};
  if (rank < 2 * ranks.extra)
    terms.push_back(Sum::of(rank - 1)); // folded in before the exchanges
  for (int mask = 1; mask < reach; mask <<= 1)
    terms.push_back(doubling_sum(ranks, v + mask, mask));
  return Sum::added(std::move(terms));
}

} // namespace

compress::SummationOrder double_binary_tree_summation(int size, int ranks_per_node) {
  assert(size > 0 && ranks_per_node > 0 && size % ranks_per_node == 0 && "whole machines");
  compress::SummationOrder order;
  for (int t = 0; t < 2; ++t) {
    std::vector<TreeLinks> tree;
    int root = -1;
    for (int rank = 0; rank < size; ++rank) {
      tree.push_back(machine_tree_links(size / ranks_per_node, ranks_per_node, rank, t));
      if (tree.back().parent < 0)
        root = rank;
    }
    assert(root >= 0 && "a tree has a root");
    order.parts.push_back(subtree_sum(tree, root));
  }
  return order;
}

compress::SummationOrder recursive_doubling_summation(int size) {
  assert(size > 0 && "a group");
  const DoublingRanks ranks(size);
  return {{doubling_sum(ranks, 0, ranks.power)}};
}

compress::SummationOrder hierarchical_summation(int size, int ranks_per_node) {
  assert(size > 0 && ranks_per_node > 0 && size % ranks_per_node == 0 && "whole machines");
  std::vector<Sum> machines;
  for (int first = 0; first < size; first += ranks_per_node) {
    std::vector<int> ranks(static_cast<size_t>(ranks_per_node));
    std::iota(ranks.begin(), ranks.end(), first);
    machines.push_back(Sum::chain(ranks));
  }
  return {{Sum::added(std::move(machines))}};
}

} // namespace gcsim::net
