// How an allreduce adds the workers' values of an element. A float32 sum is
// close to exact whatever the order; a 16-bit one (fp16, bf16) rounds every
// partial sum, and the order decides what the roundings lose: a ring adds P
// values one after the other (P - 1 roundings deep), a tree adds partial
// sums (about log2 P deep).
#pragma once

#include <vector>

namespace gcsim::compress {

// A sum of terms added left to right, each addition rounded: a term is a
// worker's value (`rank`) or a sum itself (`terms`).
struct Sum {
  int rank = -1;          // >= 0: the value of this worker, and no terms
  std::vector<Sum> terms; // otherwise: two or more, added in this order

  static Sum of(int rank);
  // `terms` added one after the other; the term itself where it is alone.
  static Sum added(std::vector<Sum> terms);
  // Ranks added one after the other, the first two first.
  static Sum chain(const std::vector<int>& ranks);
  // Nesting: 0 for a worker's value, 1 for a sum of values...
  int depth() const;
};

// The sums an allreduce reduces a buffer by: its consecutive parts, as equal
// as whole elements make them (part i of n holds elements [d i / n,
// d (i + 1) / n)), each added by its own sum (NCCL's double binary tree: a
// half by each tree).
struct SummationOrder {
  std::vector<Sum> parts;

  // Workers 0, 1, ..., P - 1 added one after the other: a ring's chain (a
  // ring starts each chunk at another rank, the same depth).
  static SummationOrder in_rank_order(int P);
  // Throws std::invalid_argument unless every part adds each of the ranks
  // 0..P-1 exactly once.
  void check(int P) const;
};

} // namespace gcsim::compress
