// LPT bin-packing and DEFT's layer partitioning and per-partition k.
#pragma once

#include "compressors/tensor.hpp"

#include <cstddef>
#include <vector>

namespace gcsim::compress {

struct BinPacking {
  std::vector<std::vector<std::size_t>> bins; // item ids per bin, in placement order
  std::vector<double> loads;                  // total cost per bin
  double makespan() const;
};

// Longest Processing Time first (Graham 1969): items by decreasing cost (ties:
// lower id first) each go to the currently least-loaded bin (ties: lower bin).
// Makespan <= (4/3 - 1/(3m)) * optimum. Throws std::invalid_argument if bins == 0.
BinPacking lpt_pack(const std::vector<double>& costs, std::size_t bins);

// A contiguous slice of one layer; DEFT's unit of selection.
struct Partition {
  std::size_t offset = 0; // in the flattened model
  std::size_t size = 0;
  std::size_t layer = 0;
};

// DEFT step 1: layers larger than d/P are cut into P contiguous chunks (the first
// size mod P one element longer); other layers are one partition each. Empty
// chunks (a layer above d/P with fewer than P elements) are dropped.
std::vector<Partition> deft_partitions(const LayerLayout& layout, std::size_t workers);

// DEFT step 2: k per partition from the partition norms (the DEFT paper): visit by
// descending norm (ties: lower id), k_i = floor(rem_k * norm_i / rem_norm),
// clamped to [1, n_i]; an excess from the floor of 1 is taken back from the
// partitions in the same order (down to 1 each), and any k left over is handed
// out in the same order up to each partition's size. Sums to k whenever
// #partitions <= k <= d; with fewer k than partitions each partition gets 1.
std::vector<std::size_t> deft_allocate_k(const std::vector<double>& norms,
                                         const std::vector<std::size_t>& sizes, std::size_t k);

} // namespace gcsim::compress
