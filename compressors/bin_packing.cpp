#include "compressors/bin_packing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace gcsim::compress {

double BinPacking::makespan() const {
  return loads.empty() ? 0.0 : *std::max_element(loads.begin(), loads.end());
}

BinPacking lpt_pack(const std::vector<double>& costs, std::size_t bins) {
  if (bins == 0) {
    throw std::invalid_argument("lpt_pack: at least one bin is needed");
  }
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&costs](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  BinPacking packing;
  packing.bins.resize(bins);
  packing.loads.assign(bins, 0.0);
  for (const std::size_t item : order) {
    // min_element returns the first minimum: ties go to the lower bin.
    const auto target = static_cast<std::size_t>(
        std::min_element(packing.loads.begin(), packing.loads.end()) - packing.loads.begin());
    packing.bins[target].push_back(item);
    packing.loads[target] += costs[item];
  }
  return packing;
}

std::vector<Partition> deft_partitions(const LayerLayout& layout, std::size_t workers) {
  if (workers == 0) {
    throw std::invalid_argument("deft_partitions: at least one worker is needed");
  }
  const double threshold = static_cast<double>(layout.total()) / static_cast<double>(workers);
  std::vector<Partition> parts;
  for (std::size_t l = 0; l < layout.size(); ++l) {
    const Layer& layer = layout[l];
    if (static_cast<double>(layer.size) <= threshold) {
      parts.push_back(Partition{layer.offset, layer.size, l});
      continue;
    }
    const std::size_t base = layer.size / workers;
    std::size_t extra = layer.size % workers;
    std::size_t offset = layer.offset;
    for (std::size_t c = 0; c < workers; ++c) {
      std::size_t size = base;
      if (extra > 0) {
        ++size;
        --extra;
      }
      if (size == 0) {
        continue;
      }
      parts.push_back(Partition{offset, size, l});
      offset += size;
    }
  }
  return parts;
}

std::vector<std::size_t> deft_allocate_k(const std::vector<double>& norms,
                                         const std::vector<std::size_t>& sizes, std::size_t k) {
  if (norms.size() != sizes.size()) {
    throw std::invalid_argument("deft_allocate_k: norms and sizes differ in length");
  }
  std::vector<std::size_t> order(norms.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&norms](std::size_t a, std::size_t b) { return norms[a] > norms[b]; });
  std::vector<std::size_t> ks(norms.size(), 0);
  // An infinite norm (an infinite gradient, or squares past the float range)
  // outweighs every finite one: the infinite ones share k, the others get the
  // floor. As plain weights, inf / inf would be NaN and its cast to an
  // integer undefined.
  const bool infinite =
      std::any_of(norms.begin(), norms.end(), [](double norm) { return std::isinf(norm); });
  const auto weight = [&](std::size_t p) {
    return infinite ? (std::isinf(norms[p]) ? 1.0 : 0.0) : norms[p];
  };
  // Signed: rem_k goes negative when the max(1, .) floor hands out more than k.
  long long rem_k = static_cast<long long>(k);
  double rem_norm = 0.0;
  for (std::size_t p = 0; p < norms.size(); ++p)
    rem_norm += weight(p);
  for (const std::size_t p : order) {
    long long tmp = 0;
    if (rem_norm > 0.0) {
      tmp = static_cast<long long>(static_cast<double>(rem_k) * (weight(p) / rem_norm));
    }
    const auto n = static_cast<long long>(sizes[p]);
    const long long kp = tmp > n ? n : std::max(1LL, tmp);
    ks[p] = static_cast<std::size_t>(kp);
    rem_k -= kp;
    rem_norm -= weight(p);
  }
  // The max(1, .) floor can overshoot k even when k >= #partitions (e.g. when
  // zero-norm partitions come last). The reference code sends the excess; we take
  // it back from the largest-norm partitions so that the total is exactly k
  // whenever that is possible (a documented deviation, see README).
  for (const std::size_t p : order) {
    if (rem_k >= 0) {
      break;
    }
    const auto spare = static_cast<long long>(ks[p]) - 1;
    const long long take = std::min(spare, -rem_k);
    ks[p] -= static_cast<std::size_t>(take);
    rem_k += take;
  }
  // What the shares' truncation left undealt goes to the partitions in norm
  // order, as far as each has room: the reference's final pass (kljp/deft,
  // DeftReducer's `if remain_k > 0`), so the total is k whenever the
  // partitions hold that many.
  for (const std::size_t p : order) {
    if (rem_k <= 0) {
      break;
    }
    const auto room = static_cast<long long>(sizes[p] - ks[p]);
    const long long give = std::min(room, rem_k);
    ks[p] += static_cast<std::size_t>(give);
    rem_k -= give;
  }
  return ks;
}

} // namespace gcsim::compress
