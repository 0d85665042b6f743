// gtopk: global top-k by a tree of pairwise merges (Shi et al., ICDCS 2019).
#include "compressors/detail/base.hpp"
#include "compressors/detail/sparse.hpp"

#include <algorithm>

namespace gcsim::compress::detail {
namespace {

// A sparse set being merged up the tree. Each entry remembers which workers'
// values it sums, so that exactly those workers drop it from their residual
// (an index dropped in a merge goes back to the residuals of its subtree).
struct MergeSet {
  std::vector<Index> idx; // ascending
  std::vector<float> val;
  std::vector<std::uint64_t> owners; // (P + 63) / 64 bitset words per entry: its workers
};

class GTopK final : public CompressorBase {
public:
  GTopK(std::string name, nlohmann::json params)
      : CompressorBase(std::move(name), std::move(params)), density_(number("density")) {}

private:
  void iterate(IterationWork& work) override {
    const std::size_t k = k_for_density(work.d, density_);
    const auto P = static_cast<std::size_t>(work.P);
    const std::size_t words = (P + 63) / 64;
    std::vector<MergeSet> sets(P);
    for (std::size_t w = 0; w < P; ++w) {
      MergeSet& s = sets[w];
      topk_indices(work.acc[w], work.d, k, s.idx);
      s.val.resize(k);
      s.owners.assign(k * words, 0);
      for (std::size_t i = 0; i < k; ++i) {
        s.val[i] = work.acc[w][s.idx[i]];
        s.owners[i * words + w / 64] |= std::uint64_t{1} << (w % 64);
      }
      work.add_kernel(static_cast<int>(w), KernelKind::topk_select, work.d, k, 0, 0, "local top-k");
      work.add_kernel(static_cast<int>(w), KernelKind::sparse_pack, k, 0, 0, 0, "pack pairs");
    }
    // Round j (stride 2^j): rank r with r mod 2^(j+1) == 0 receives the set of r + 2^j.
    std::vector<float> scratch_val;
    std::vector<Index> keep;
    for (std::size_t stride = 1; stride < P; stride *= 2) {
      std::vector<int> participants;
      std::vector<std::uint64_t> bytes;
      std::vector<Transfer> transfers;
      for (std::size_t r = 0; r + stride < P; r += 2 * stride) {
        const std::size_t src = r + stride;
        const std::uint64_t b = sets[src].idx.size() * 8;
        transfers.push_back(Transfer{static_cast<int>(src), static_cast<int>(r), b});
        participants.push_back(static_cast<int>(r));
        bytes.push_back(0);
        participants.push_back(static_cast<int>(src));
        bytes.push_back(b);
      }
      CommStep& step = work.add_step(CommKind::gtopk_merge_round,
                                     "gtopk merge, stride " + std::to_string(stride),
                                     std::move(participants), std::move(bytes));
      step.transfers = std::move(transfers);
      for (std::size_t r = 0; r + stride < P; r += 2 * stride) {
        const std::size_t src = r + stride;
        const std::size_t received = sets[src].idx.size();
        std::size_t union_size = 0;
        sets[r] = merge(sets[r], sets[src], k, words, scratch_val, keep, union_size);
        sets[src] = MergeSet{};
        work.add_kernel(static_cast<int>(r), KernelKind::sparse_unpack, received, 0, 0, 0,
                        "add the partner's pairs");
        // A union of at most k pairs is kept whole: no selection runs.
        if (union_size > k) {
          work.add_kernel(static_cast<int>(r), KernelKind::topk_select, union_size, k, 0, 0,
                          "top-k of the merged set");
        }
      }
    }
    const MergeSet& global = sets[0];
    work.add_collective(CommKind::broadcast, "root broadcasts the global top-k pairs",
                        global.idx.size() * 8, 0);
    work.add_kernel_all(KernelKind::sparse_unpack, global.idx.size(), 0, 0, 0, "apply the update");
    const float inv_p = 1.0f / static_cast<float>(work.P);
    for (std::size_t i = 0; i < global.idx.size(); ++i) {
      const Index j = global.idx[i];
      work.result.update[j] = global.val[i] * inv_p;
      for (std::size_t w = 0; w < P; ++w) {
        if ((global.owners[i * words + w / 64] >> (w % 64)) & 1U) {
          work.acc[w][j] = 0.0f;
        }
      }
    }
    work.result.support = global.idx;
    work.result.info["k"] = k;
  }

  // Sum of two sets at matching indices, then its top-k by |value| (ties:
  // lower index); union_size is the sum's size before the top-k.
  static MergeSet merge(const MergeSet& a, const MergeSet& b, std::size_t k, std::size_t words,
                        std::vector<float>& scratch_val, std::vector<Index>& keep,
                        std::size_t& union_size) {
    MergeSet u;
    std::size_t i = 0;
    std::size_t j = 0;
    const auto push = [&](Index idx, float val, const std::uint64_t* o1, const std::uint64_t* o2) {
      u.idx.push_back(idx);
      u.val.push_back(val);
      for (std::size_t w = 0; w < words; ++w) {
        u.owners.push_back((o1 != nullptr ? o1[w] : 0) | (o2 != nullptr ? o2[w] : 0));
      }
    };
    while (i < a.idx.size() || j < b.idx.size()) {
      if (j == b.idx.size() || (i < a.idx.size() && a.idx[i] < b.idx[j])) {
        push(a.idx[i], a.val[i], &a.owners[i * words], nullptr);
        ++i;
      } else if (i == a.idx.size() || b.idx[j] < a.idx[i]) {
        push(b.idx[j], b.val[j], nullptr, &b.owners[j * words]);
        ++j;
      } else {
        push(a.idx[i], a.val[i] + b.val[j], &a.owners[i * words], &b.owners[j * words]);
        ++i;
        ++j;
      }
    }
    union_size = u.idx.size();
    if (union_size <= k) {
      return u;
    }
    // Positions are in index order, so "lower position wins" is "lower index wins".
    scratch_val = u.val;
    topk_indices(scratch_val.data(), scratch_val.size(), k, keep);
    MergeSet out;
    out.idx.reserve(k);
    out.val.reserve(k);
    out.owners.reserve(k * words);
    for (const Index p : keep) {
      out.idx.push_back(u.idx[p]);
      out.val.push_back(u.val[p]);
      out.owners.insert(out.owners.end(), u.owners.begin() + static_cast<std::ptrdiff_t>(p * words),
                        u.owners.begin() + static_cast<std::ptrdiff_t>((p + 1) * words));
    }
    return out;
  }

  double density_;
};

} // namespace

CompressorInfo gtopk_info() {
  return {"gtopk",
          "global top-k: local top-k, then log2 P tree rounds in which the partner at stride "
          "2^j sends its k pairs and the receiver keeps the top-k of the summed union; the "
          "root broadcasts the final k pairs. Residual: a worker's value leaves its residual "
          "only if it is part of the final sum",
          "Shi et al., ICDCS 2019 (gTop-k S-SGD)",
          {density_param(0.001), error_feedback_param()}};
}

std::unique_ptr<Compressor> make_gtopk(const nlohmann::json& resolved) {
  return std::make_unique<GTopK>("gtopk", resolved);
}

} // namespace gcsim::compress::detail
