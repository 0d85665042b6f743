#include "sim/training/compression.hpp"

#include "compressors/fidelity.hpp"
#include "compressors/scratch_file.hpp"
#include "sim/cost/device_profile.hpp"

#include <algorithm>
#include <cassert>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>

namespace gcsim::training {
namespace {

StepPlan::Kind step_kind(compress::CommKind kind) {
  switch (kind) {
  case compress::CommKind::allreduce_ring:
    return StepPlan::Kind::allreduce_ring;
  case compress::CommKind::allreduce_recursive_doubling:
    return StepPlan::Kind::allreduce_recursive_doubling;
  case compress::CommKind::allreduce_tree:
    return StepPlan::Kind::allreduce_tree;
  case compress::CommKind::allreduce:
    return StepPlan::Kind::allreduce;
  case compress::CommKind::allgather:
    return StepPlan::Kind::allgather;
  case compress::CommKind::allgatherv:
    return StepPlan::Kind::allgatherv;
  case compress::CommKind::broadcast:
    return StepPlan::Kind::broadcast;
  case compress::CommKind::reduce:
    return StepPlan::Kind::reduce;
  case compress::CommKind::gtopk_merge_round:
  case compress::CommKind::ps_push:
  case compress::CommKind::ps_pull:
    return StepPlan::Kind::point_to_point;
  }
  throw std::logic_error("unhandled communication kind");
}

// The cost model's kernel for a compressor's, by the name a profile prices
// it under: a switch, so that a kernel one library adds and the other lacks
// fails to compile (-Wswitch), not mid-run.
std::string_view cost_kernel(compress::KernelKind kind) {
  using cost::Kernel;
  switch (kind) {
  case compress::KernelKind::topk_select:
    return cost::kernel_name(Kernel::topk_select);
  case compress::KernelKind::threshold_select:
    return cost::kernel_name(Kernel::threshold_select);
  case compress::KernelKind::l2_norm:
    return cost::kernel_name(Kernel::l2_norm);
  case compress::KernelKind::sample_threshold:
    return cost::kernel_name(Kernel::sample_threshold);
  case compress::KernelKind::sketch_insert:
    return cost::kernel_name(Kernel::sketch_insert);
  case compress::KernelKind::sketch_query:
    return cost::kernel_name(Kernel::sketch_query);
  case compress::KernelKind::gather:
    return cost::kernel_name(Kernel::gather);
  case compress::KernelKind::scatter_add:
    return cost::kernel_name(Kernel::scatter_add);
  case compress::KernelKind::sparse_pack:
    return cost::kernel_name(Kernel::sparse_pack);
  case compress::KernelKind::sparse_unpack:
    return cost::kernel_name(Kernel::sparse_unpack);
  case compress::KernelKind::dense_add:
    return cost::kernel_name(Kernel::dense_add);
  case compress::KernelKind::dense_scale:
    return cost::kernel_name(Kernel::dense_scale);
  case compress::KernelKind::fp16_cast:
    return cost::kernel_name(Kernel::fp16_cast);
  case compress::KernelKind::low_rank_product:
    return cost::kLowRankProduct;
  }
  throw std::logic_error("unhandled kernel kind");
}

} // namespace

CompressionPart schedule_of(const compress::IterationResult& result, int workers,
                            const cost::DeviceProfile& profile) {
  CompressionPart part;
  for (const compress::CommStep& step : result.steps) {
    StepPlan plan;
    plan.kind = step_kind(step.kind);
    plan.label = step.label.empty() ? compress::to_string(step.kind) : step.label;
    plan.root = step.root;
    plan.participants = step.participants;
    plan.bytes = step.bytes;
    for (const compress::Transfer& transfer : step.transfers)
      plan.messages.push_back({transfer.src, transfer.dst, transfer.bytes});
    part.steps.push_back(std::move(plan));
  }
  part.kernels.resize(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    for (const compress::KernelRun& run : result.kernels[static_cast<size_t>(w)]) {
      cost::KernelShape shape{static_cast<double>(run.n), static_cast<double>(run.k),
                              static_cast<double>(run.rows), static_cast<double>(run.cols)};
      const std::string_view kernel = cost_kernel(run.kind);
      part.kernels[static_cast<size_t>(w)].push_back(
          {std::string(kernel), profile.kernel_seconds(kernel, shape), run.before_step, shape.n,
           shape.k, shape.rows, shape.cols});
    }
  }
  return part;
}

namespace {

// One compressor and the contiguous slice of the model it works on.
struct Slice {
  compress::Compressor* compressor = nullptr;
  int first_layer = 0;
  size_t offset = 0; // of the first layer in the whole gradient
  compress::LayerLayout layout;
  std::vector<compress::ErrorFeedback> memories;
};

// The layers [first, last] of `whole`, re-based to offset 0; they must be
// packed one after the other, as every feed lays them out.
compress::LayerLayout slice_layout(const compress::LayerLayout& whole, int first, int last) {
  std::vector<compress::Layer> layers;
  const size_t base = whole[static_cast<size_t>(first)].offset;
  size_t next = base;
  for (int l = first; l <= last; ++l) {
    compress::Layer layer = whole[static_cast<size_t>(l)];
    if (layer.offset != next)
      throw std::logic_error("layer '" + layer.name + "' is not packed after the previous one");
    next += layer.size;
    layer.offset -= base;
    layers.push_back(std::move(layer));
  }
  return compress::LayerLayout(std::move(layers));
}

// Every iteration: one pass through the workers' gradients feeds every
// slice's compressor (so each gradient is made once), then each compressor
// finishes its iteration and becomes one part of the schedule.
CompressedRun run_slices(std::vector<Slice>& slices, GradientFeed& feed, int workers,
                         int iterations, uint64_t seed, const cost::DeviceProfile& profile,
                         const std::string& residual_dir) {
  const compress::LayerLayout& layout = feed.layout();
  const auto P = static_cast<size_t>(workers);
  bool any_needs_weights = false;
  for (Slice& slice : slices) {
    slice.memories.resize(P);
    any_needs_weights = any_needs_weights || slice.compressor->needs_weights();
  }
  // Out of core: worker w's whole residual is row w of one mapped file (the
  // slices' parts one after the other), so each pass over the workers
  // walks the file in order.
  std::unique_ptr<compress::ScratchMapping> residuals;
  if (!residual_dir.empty()) {
    const size_t d = layout.total();
    residuals = std::make_unique<compress::ScratchMapping>(residual_dir, P * d);
    for (Slice& slice : slices)
      for (size_t w = 0; w < P; ++w)
        slice.memories[w].use_storage(residuals->data() + w * d + slice.offset,
                                      slice.layout.total());
  }
  std::vector<float> gradients[2]; // streamed through by all workers, see below
  std::vector<double> raw_sum;     // sum of the raw gradients, for fidelity
  std::vector<float> weights;
  std::vector<float> update(layout.total());
  CompressedRun run;
  for (int t = 0; t < iterations; ++t) {
    // Only compressors that weigh gradients by the weights pay for reading them.
    const bool has_weights = any_needs_weights && feed.weights(t, weights);
    // Each compressor keeps a pointer to its view until finish_iteration, so
    // the views are made before any is handed out.
    // Without weights there is no buffer to point into (an offset from
    // the empty vector's null data() is undefined behaviour).
    std::vector<compress::WeightsView> weight_views;
    if (has_weights)
      for (const Slice& slice : slices)
        weight_views.push_back({weights.data() + slice.offset, &slice.layout});
    for (size_t b = 0; b < slices.size(); ++b) {
      // Bucket b > 0 draws its random numbers from its own stream.
      const uint64_t slice_seed = b == 0 ? seed : seed ^ (0x9E3779B97F4A7C15ULL * b);
      slices[b].compressor->begin_iteration(has_weights ? &weight_views[b] : nullptr,
                                            {static_cast<uint64_t>(t), P, slice_seed},
                                            slices[b].memories);
    }
    raw_sum.assign(layout.total(), 0.0);
    // Two buffers: while the compressors take worker w's gradient, another
    // thread has the feed make worker w + 1's (the feed is only ever called
    // from one thread at a time, and always in worker order, so the values
    // do not depend on the timing).
    auto produce = [&feed, t](size_t w, std::vector<float>& out) {
      feed.gradient(t, static_cast<int>(w), out);
    };
    std::future<void> next =
        std::async(std::launch::async, produce, size_t{0}, std::ref(gradients[0]));
    for (size_t w = 0; w < P; ++w) {
      next.get();
      std::vector<float>& gradient = gradients[w % 2];
      if (w + 1 < P)
        next = std::async(std::launch::async, produce, w + 1, std::ref(gradients[(w + 1) % 2]));
      if (gradient.size() != raw_sum.size())
        throw std::logic_error("gradient feed returned " + std::to_string(gradient.size()) +
                               " values for a layout of " + std::to_string(raw_sum.size()));
      for (size_t j = 0; j < gradient.size(); ++j)
        raw_sum[j] += static_cast<double>(gradient[j]);
      for (Slice& slice : slices)
        slice.compressor->add_gradient({gradient.data() + slice.offset, &slice.layout});
    }
    CompressionQuality quality;
    CompressedIteration iteration;
    size_t support = 0;
    double sent = 0;
    nlohmann::json bucket_info = nlohmann::json::array();
    for (Slice& slice : slices) {
      compress::IterationResult result = slice.compressor->finish_iteration();
      std::copy(result.update.begin(), result.update.end(),
                update.begin() + static_cast<std::ptrdiff_t>(slice.offset));
      support += result.support.size();
      for (int w = 0; w < workers; ++w)
        sent += static_cast<double>(result.bytes_sent_by(w));
      bucket_info.push_back(std::move(result.info));
      CompressionPart part = schedule_of(result, workers, profile);
      part.ready_layer = slice.first_layer;
      iteration.parts.push_back(std::move(part));
    }
    compress::Fidelity fidelity = compress::measure_fidelity(raw_sum, P, update);
    quality.density_after_aggregation =
        static_cast<double>(support) / static_cast<double>(layout.total());
    quality.cosine = fidelity.cosine;
    quality.rel_l2 = fidelity.relative_l2_error;
    quality.energy_share = fidelity.energy_share;
    quality.bytes_sent_mean = sent / workers;
    quality.info = slices.size() == 1 ? std::move(bucket_info.front())
                                      : nlohmann::json{{"buckets", std::move(bucket_info)}};
    run.quality.push_back(std::move(quality));
    run.schedule.push_back(std::move(iteration));
  }
  for (Slice& slice : slices) // the memories must not outlive their storage
    slice.memories.clear();
  return run;
}

} // namespace

CompressedRun run_compressor(compress::Compressor& compressor, GradientFeed& feed, int workers,
                             int iterations, uint64_t seed, const cost::DeviceProfile& profile,
                             const std::string& residual_dir) {
  std::vector<Slice> slices(1);
  slices.front().compressor = &compressor;
  slices.front().layout = feed.layout();
  return run_slices(slices, feed, workers, iterations, seed, profile, residual_dir);
}

CompressedRun run_compressor_per_bucket(const CompressorFactory& make, GradientFeed& feed,
                                        const std::vector<Bucket>& buckets,
                                        const std::vector<uint64_t>& layer_bytes, int workers,
                                        int iterations, uint64_t seed,
                                        const cost::DeviceProfile& profile,
                                        const std::string& residual_dir) {
  // The plan's layers (modules, parameter-free ones included) and the feed's
  // (parameter tensors) tile the same packed gradient; a bucket is the range
  // of its layers' elements, and the feed's tensors inside it.
  const compress::LayerLayout& layout = feed.layout();
  std::vector<size_t> plan_offset{0};
  for (uint64_t bytes : layer_bytes)
    plan_offset.push_back(plan_offset.back() + bytes / sizeof(float));
  if (plan_offset.back() != layout.total())
    throw std::logic_error("the gradient feed's layers do not cover the plan's");
  std::vector<std::unique_ptr<compress::Compressor>> owned;
  std::vector<Slice> slices;
  for (const Bucket& bucket : buckets) {
    const size_t begin = plan_offset[static_cast<size_t>(bucket.first_layer)];
    const size_t end = plan_offset[static_cast<size_t>(bucket.last_layer) + 1];
    assert(begin < end && "make_buckets makes a bucket only of layers with parameters");
    int first = -1;
    int last = -1;
    for (size_t l = 0; l < layout.size(); ++l) {
      if (layout[l].offset >= begin && layout[l].offset + layout[l].size <= end) {
        if (first < 0)
          first = static_cast<int>(l);
        last = static_cast<int>(l);
      }
    }
    if (first < 0 || layout[static_cast<size_t>(first)].offset != begin ||
        layout[static_cast<size_t>(last)].offset + layout[static_cast<size_t>(last)].size != end)
      throw std::logic_error("a bucket's edge falls inside one of the feed's tensors");
    owned.push_back(make());
    Slice slice;
    slice.compressor = owned.back().get();
    slice.first_layer = bucket.first_layer;
    slice.offset = begin;
    slice.layout = slice_layout(layout, first, last);
    slices.push_back(std::move(slice));
  }
  return run_slices(slices, feed, workers, iterations, seed, profile, residual_dir);
}

} // namespace gcsim::training
