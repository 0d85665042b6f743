#include "sim/training/compression.hpp"

#include "compressors/fidelity.hpp"
#include "sim/cost/device_profile.hpp"

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

} // namespace

CompressedIteration schedule_of(const compress::IterationResult& result, int workers,
                                const cost::DeviceProfile& profile) {
  CompressedIteration iteration;
  for (const compress::CommStep& step : result.steps) {
    StepPlan plan;
    plan.kind = step_kind(step.kind);
    plan.label = step.label.empty() ? compress::to_string(step.kind) : step.label;
    plan.root = step.root;
    plan.participants = step.participants;
    plan.bytes = step.bytes;
    for (const compress::Transfer& transfer : step.transfers)
      plan.messages.push_back({transfer.src, transfer.dst, transfer.bytes});
    iteration.steps.push_back(std::move(plan));
  }
  iteration.kernels.resize(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    for (const compress::KernelRun& run : result.kernels[static_cast<size_t>(w)]) {
      cost::KernelShape shape{static_cast<double>(run.n), static_cast<double>(run.k),
                              static_cast<double>(run.rows), static_cast<double>(run.cols)};
      std::string name = compress::to_string(run.kind);
      iteration.kernels[static_cast<size_t>(w)].push_back(
          {name, profile.kernel_seconds(name, shape), run.before_step, shape.n, shape.k, shape.rows,
           shape.cols});
    }
  }
  return iteration;
}

CompressedRun run_compressor(compress::Compressor& compressor, GradientFeed& feed, int workers,
                             int iterations, uint64_t seed, const cost::DeviceProfile& profile) {
  const compress::LayerLayout& layout = feed.layout();
  // One gradient buffer streamed through all workers: memory holds the P
  // residuals (and local momenta), never P gradients besides.
  std::vector<float> gradient;
  std::vector<double> raw_sum; // sum of the raw gradients, for fidelity
  std::vector<compress::ErrorFeedback> memories(static_cast<size_t>(workers));
  std::vector<float> weights;
  CompressedRun run;
  for (int t = 0; t < iterations; ++t) {
    raw_sum.assign(layout.total(), 0.0);
    const compress::GradientSupplier gradient_of = [&](size_t w) {
      feed.gradient(t, static_cast<int>(w), gradient);
      if (gradient.size() != raw_sum.size())
        throw std::logic_error("gradient feed returned " + std::to_string(gradient.size()) +
                               " values for a layout of " + std::to_string(raw_sum.size()));
      for (size_t j = 0; j < gradient.size(); ++j)
        raw_sum[j] += static_cast<double>(gradient[j]);
      return compress::GradientView{gradient.data(), &layout};
    };
    // Only compressors that weigh gradients by the weights pay for reading them.
    const bool has_weights = compressor.needs_weights() && feed.weights(t, weights);
    compress::WeightsView weight_view{weights.data(), &layout};
    compress::IterationContext context{static_cast<uint64_t>(t), static_cast<size_t>(workers),
                                       seed};
    compress::IterationResult result = compressor.run_iteration(
        gradient_of, has_weights ? &weight_view : nullptr, context, memories);
    compress::Fidelity fidelity =
        compress::measure_fidelity(raw_sum, static_cast<size_t>(workers), result.update);
    CompressionQuality quality;
    quality.density_after_aggregation = result.density();
    quality.cosine = fidelity.cosine;
    quality.rel_l2 = fidelity.relative_l2_error;
    quality.energy_share = fidelity.energy_share;
    double sent = 0;
    for (int w = 0; w < workers; ++w)
      sent += static_cast<double>(result.bytes_sent_by(w));
    quality.bytes_sent_mean = sent / workers;
    quality.info = result.info;
    run.quality.push_back(std::move(quality));
    run.schedule.push_back(schedule_of(result, workers, profile));
  }
  return run;
}

} // namespace gcsim::training
