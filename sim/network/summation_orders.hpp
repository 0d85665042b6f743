#pragma once
// The order in which each allreduce of collectives.hpp adds the ranks'
// values, for the compressors whose sums round (fp16, bf16): the same
// structure as the messages the algorithm sends.

#include "compressors/summation_order.hpp"

namespace gcsim::net {

/// NCCL's double binary tree (machine_tree_links): each tree adds half the
/// buffer up to its root, a rank adding its children's partial sums to its
/// own in the order of its links (NCCL's reduce takes the rank's input
/// first), every addition rounded: about log2 P deep.
compress::SummationOrder double_binary_tree_summation(int size, int ranks_per_node);
/// Recursive doubling: the folded ranks' values first, then each exchange
/// adds the partner's partial sum (both partners compute the same sum).
compress::SummationOrder recursive_doubling_summation(int size);
/// The hierarchical allreduce: each machine's ranks added one after the
/// other (its ring), then the machines' sums one after the other.
compress::SummationOrder hierarchical_summation(int size, int ranks_per_node);

} // namespace gcsim::net
