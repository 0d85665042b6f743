#include "compressors/compressor.hpp"

#include "compressors/counts.hpp"
#include "compressors/detail/sparse.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace gcsim::compress {

bool CommStep::involves(int rank) const {
  if (std::find(participants.begin(), participants.end(), rank) != participants.end()) {
    return true;
  }
  return std::any_of(transfers.begin(), transfers.end(),
                     [rank](const Transfer& tr) { return tr.src == rank || tr.dst == rank; });
}

std::vector<std::size_t> IterationResult::steps_of(int rank) const {
  std::vector<std::size_t> mine;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    if (steps[s].involves(rank)) {
      mine.push_back(s);
    }
  }
  return mine;
}

std::uint64_t IterationResult::bytes_sent_by(int rank) const {
  std::uint64_t total = 0;
  for (const CommStep& step : steps) {
    for (const Transfer& tr : step.transfers) {
      total += tr.src == rank ? tr.bytes : 0;
    }
    if (!step.transfers.empty()) {
      continue;
    }
    const auto it = std::find(step.participants.begin(), step.participants.end(), rank);
    if (it == step.participants.end()) {
      continue;
    }
    const auto i = static_cast<std::size_t>(it - step.participants.begin());
    const bool rooted = step.kind == CommKind::broadcast;
    if (rooted && rank != step.root) {
      continue;
    }
    total += step.bytes[i];
  }
  return total;
}

double IterationResult::density() const {
  if (update.empty()) {
    return 0.0;
  }
  return static_cast<double>(support.size()) / static_cast<double>(update.size());
}

std::vector<int> IterationWork::all_ranks() const {
  std::vector<int> ranks(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) {
    ranks[static_cast<std::size_t>(r)] = r;
  }
  return ranks;
}

CommStep& IterationWork::add_step(CommKind kind, std::string label, std::vector<int> participants,
                                  std::vector<std::uint64_t> bytes, int root) {
  if (participants.size() != bytes.size()) {
    throw std::logic_error("compressor step '" + label +
                           "': participants and bytes differ in size");
  }
  CommStep step;
  step.kind = kind;
  step.label = std::move(label);
  step.root = root;
  step.participants = std::move(participants);
  step.bytes = std::move(bytes);
  result.steps.push_back(std::move(step));
  return result.steps.back();
}

CommStep& IterationWork::add_collective(CommKind kind, std::string label, std::uint64_t bytes,
                                        int root) {
  return add_step(kind, std::move(label), all_ranks(),
                  std::vector<std::uint64_t>(static_cast<std::size_t>(P), bytes), root);
}

CommStep& IterationWork::add_transfers(CommKind kind, std::string label,
                                       std::vector<Transfer> transfers, int root) {
  std::vector<std::uint64_t> bytes(static_cast<std::size_t>(P), 0);
  for (const Transfer& tr : transfers) {
    bytes[static_cast<std::size_t>(tr.src)] += tr.bytes;
  }
  CommStep& step = add_step(kind, std::move(label), all_ranks(), std::move(bytes), root);
  step.transfers = std::move(transfers);
  return step;
}

void IterationWork::add_kernel(int worker, KernelKind kind, std::uint64_t n, std::uint64_t k,
                               std::uint32_t rows, std::uint32_t cols, std::string label) {
  KernelRun run;
  run.kind = kind;
  run.n = n;
  run.k = k;
  run.rows = rows;
  run.cols = cols;
  run.before_step = result.steps.size();
  run.label = std::move(label);
  result.kernels[static_cast<std::size_t>(worker)].push_back(std::move(run));
}

void IterationWork::add_kernel_all(KernelKind kind, std::uint64_t n, std::uint64_t k,
                                   std::uint32_t rows, std::uint32_t cols,
                                   const std::string& label) {
  for (int w = 0; w < P; ++w) {
    add_kernel(w, kind, n, k, rows, cols, label);
  }
}

IterationResult Compressor::run_iteration(const std::vector<GradientView>& grads,
                                          const WeightsView* weights, const IterationContext& ctx,
                                          std::vector<ErrorFeedback>& memories) {
  if (grads.empty()) {
    throw std::invalid_argument(name() + ": no worker gradients");
  }
  if (ctx.workers != grads.size()) {
    throw std::invalid_argument(name() + ": context says P = " + std::to_string(ctx.workers) +
                                " but " + std::to_string(grads.size()) + " gradients were passed");
  }
  begin_iteration(weights, ctx, memories);
  for (const GradientView& gradient : grads) {
    add_gradient(gradient);
  }
  return finish_iteration();
}

void Compressor::begin_iteration(const WeightsView* weights, const IterationContext& ctx,
                                 std::vector<ErrorFeedback>& memories) {
  if (ctx.workers == 0) {
    throw std::invalid_argument(name() + ": no worker gradients");
  }
  if (memories.size() != ctx.workers) {
    throw std::invalid_argument(name() + ": " + std::to_string(memories.size()) +
                                " error-feedback memories for " + std::to_string(ctx.workers) +
                                " workers");
  }
  check_workers(static_cast<int>(ctx.workers));
  if (summation_)
    summation_->check(static_cast<int>(ctx.workers));
  pending_ = std::make_unique<Pending>();
  pending_->memories = &memories;
  IterationWork& work = pending_->work;
  work.weights = weights;
  work.ctx = ctx;
  work.P = static_cast<int>(ctx.workers);
  work.result.kernels.resize(ctx.workers);
  work.summation = summation_.get();
}

void Compressor::sum_as(SummationOrder order) {
  summation_ = std::make_unique<SummationOrder>(std::move(order));
}

void Compressor::add_gradient(const GradientView& g) {
  if (!pending_) {
    throw std::logic_error(name() + ": add_gradient outside begin_iteration/finish_iteration");
  }
  IterationWork& work = pending_->work;
  const std::size_t w = pending_->added;
  if (w >= work.ctx.workers) {
    throw std::invalid_argument(name() + ": more gradients than the " +
                                std::to_string(work.ctx.workers) + " workers");
  }
  if (g.data == nullptr || g.layout == nullptr) {
    throw std::invalid_argument(name() + ": gradient of worker " + std::to_string(w) +
                                " has no data or layout");
  }
  if (w == 0) {
    // Supports and selections are 32-bit indices (4 bytes on the wire); past
    // them DGC, DEFT, IWP, random-k and dense wrapped silently.
    if (g.layout->total() > std::numeric_limits<Index>::max())
      throw std::invalid_argument(name() + ": a gradient of " + std::to_string(g.layout->total()) +
                                  " elements does not fit a 32-bit index");
    pending_->layout = *g.layout;
    work.d = pending_->layout.total();
    work.result.update.assign(work.d, 0.0f);
    const WeightsView* weights = work.weights;
    if (weights != nullptr &&
        (weights->data == nullptr || weights->layout == nullptr || weights->size() != work.d)) {
      throw std::invalid_argument(name() + ": weights do not match the gradient layout");
    }
  } else if (!(*g.layout == pending_->layout)) {
    throw std::invalid_argument(name() + ": gradient of worker " + std::to_string(w) +
                                " has another layout than worker 0's");
  }
  check_no_nan(g.data, work.d);
  ErrorFeedback& memory = (*pending_->memories)[w];
  const bool keep = error_feedback();
  memory.ensure_size(work.d);
  memory.accumulate(g.data, keep);
  work.acc.push_back(memory.data());
  if (keep && compensates(work.ctx.iteration)) {
    // Error compensation g + r is a dense add on the device.
    work.result.kernels[w].push_back(KernelRun{KernelKind::dense_add, work.d, 0, 0, 0, 0,
                                               "error feedback: gradient + residual"});
  }
  absorb_gradient(work, static_cast<int>(w), g.data);
  ++pending_->added;
}

IterationResult Compressor::finish_iteration() {
  if (!pending_) {
    throw std::logic_error(name() + ": finish_iteration without begin_iteration");
  }
  // Whatever happens next, this iteration is over.
  std::unique_ptr<Pending> pending = std::move(pending_);
  IterationWork& work = pending->work;
  if (pending->added != work.ctx.workers) {
    throw std::invalid_argument(name() + ": " + std::to_string(pending->added) + " gradients for " +
                                std::to_string(work.ctx.workers) + " workers");
  }
  work.layout = &pending->layout;
  iterate(work);
  if (!error_feedback()) {
    for (auto& memory : *pending->memories) {
      memory.clear();
    }
  }
  return std::move(work.result);
}

const char* to_string(CommKind kind) {
  switch (kind) {
  case CommKind::allreduce_ring:
    return "allreduce_ring";
  case CommKind::allreduce_recursive_doubling:
    return "allreduce_recursive_doubling";
  case CommKind::allgather:
    return "allgather";
  case CommKind::allgatherv:
    return "allgatherv";
  case CommKind::broadcast:
    return "broadcast";
  case CommKind::reduce:
    return "reduce";
  case CommKind::gtopk_merge_round:
    return "gtopk_merge_round";
  case CommKind::ps_push:
    return "ps_push";
  case CommKind::ps_pull:
    return "ps_pull";
  case CommKind::allreduce_tree:
    return "allreduce_tree";
  case CommKind::allreduce:
    return "allreduce";
  }
  return "unknown";
}

const char* to_string(KernelKind kind) {
  switch (kind) {
  case KernelKind::topk_select:
    return "topk_select";
  case KernelKind::threshold_select:
    return "threshold_select";
  case KernelKind::l2_norm:
    return "l2_norm";
  case KernelKind::sample_threshold:
    return "sample_threshold";
  case KernelKind::sketch_insert:
    return "sketch_insert";
  case KernelKind::sketch_query:
    return "sketch_query";
  case KernelKind::gather:
    return "gather";
  case KernelKind::scatter_add:
    return "scatter_add";
  case KernelKind::sparse_pack:
    return "sparse_pack";
  case KernelKind::sparse_unpack:
    return "sparse_unpack";
  case KernelKind::dense_add:
    return "dense_add";
  case KernelKind::dense_scale:
    return "dense_scale";
  case KernelKind::fp16_cast:
    return "fp16_cast";
  case KernelKind::low_rank_product:
    return "low_rank_product";
  }
  return "unknown";
}

std::size_t k_for_density(std::size_t d, double density) {
  return std::clamp<std::size_t>(floor_count(density * static_cast<double>(d)), 1, d);
}

namespace detail {

std::vector<Index> sorted_union(const std::vector<std::vector<Index>>& sets) {
  std::vector<Index> all;
  std::size_t total = 0;
  for (const auto& s : sets) {
    total += s.size();
  }
  all.reserve(total);
  for (const auto& s : sets) {
    all.insert(all.end(), s.begin(), s.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

void apply_common_indices(IterationWork& work, const std::vector<Index>& common) {
  const float inv_p = 1.0f / static_cast<float>(work.P);
  std::vector<float> sums(common.size(), 0.0f);
  for (float* acc : work.acc) {
    for (std::size_t i = 0; i < common.size(); ++i) {
      sums[i] += acc[common[i]];
      acc[common[i]] = 0.0f;
    }
  }
  for (std::size_t i = 0; i < common.size(); ++i) {
    work.result.update[common[i]] = sums[i] * inv_p;
  }
  work.result.support = common;
}

void apply_own_sets(IterationWork& work, const std::vector<std::vector<Index>>& sets) {
  work.result.support = sorted_union(sets);
  const std::vector<Index>& all = work.result.support;
  // Summed in double in worker order, then divided by P like the reference reducers.
  std::vector<double> sums(all.size(), 0.0);
  for (std::size_t w = 0; w < sets.size(); ++w) {
    float* acc = work.acc[w];
    auto pos = all.begin();
    for (const Index j : sets[w]) {
      pos = std::lower_bound(pos, all.end(), j);
      sums[static_cast<std::size_t>(pos - all.begin())] += static_cast<double>(acc[j]);
      acc[j] = 0.0f;
    }
  }
  const double inv_p = 1.0 / static_cast<double>(work.P);
  for (std::size_t i = 0; i < all.size(); ++i) {
    work.result.update[all[i]] = static_cast<float>(sums[i] * inv_p);
  }
}

void apply_estimated(IterationWork& work, const std::vector<Index>& indices,
                     const std::vector<float>& sums) {
  const float inv_p = 1.0f / static_cast<float>(work.P);
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const float u = sums[i] * inv_p;
    work.result.update[indices[i]] = u;
    // An infinite estimate is sent: subtracting it would leave inf - inf =
    // NaN behind, which the next iteration's selection refuses as input.
    const bool finite = std::isfinite(u);
    for (float* acc : work.acc) {
      acc[indices[i]] = finite ? acc[indices[i]] - u : 0.0f;
    }
  }
  work.result.support = indices;
}

} // namespace detail
} // namespace gcsim::compress
