#include "sim/validate/simulate.hpp"

#include "compressors/registry.hpp"
#include "sim/cost/device_profile.hpp"
#include "sim/input/input_error.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/network/alpha_beta.hpp"
#include "sim/network/collectives.hpp"
#include "sim/training/compression.hpp"
#include "sim/training/gradient_feed.hpp"
#include "sim/training/iteration_model.hpp"
#include "sim/validate/child_simulation.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>

#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace gcsim::validate {
namespace {

// NCCL joins whole machines' first GPUs in its trees and chains the rest;
// a point over part of a machine is a flat tree.
int ranks_per_node(const net::PlatformSpec& spec, int ranks) {
  const int per_node = spec.has_gpu_machines() ? spec.gpus_per_node : 1;
  return ranks % per_node == 0 ? per_node : 1;
}

// `float16_sum`: what a float16 ring allreduce's sums cost this rank.
void run_point(net::Group& group, int rank, const CollectivePoint& point, int ranks_per_node,
               const net::SumCost& float16_sum) {
  switch (point.collective) {
  case Collective::allreduce:
    if (point.algorithm == Algorithm::tree)
      net::double_binary_tree_allreduce(group, rank, point.bytes, ranks_per_node);
    else
      net::ring_allreduce(group, rank, point.bytes,
                          point.dtype == DataType::float16 ? float16_sum : net::SumCost{});
    return;
  case Collective::allgather:
    // Each rank's block, rounded up as the fit and the allreduce's chunks
    // are: a 7-byte allgather on 8 ranks sent empty messages.
    net::ring_allgather(group, rank, net::alpha_beta::largest_chunk(point.bytes, point.ranks));
    return;
  case Collective::broadcast:
    if (point.algorithm == Algorithm::ring)
      net::pipelined_ring_broadcast(group, rank, 0, point.bytes, point.chunk_bytes);
    else
      net::eager_binomial_broadcast(group, rank, 0, point.bytes);
    return;
  }
}

std::vector<double> collectives_in_engine(const net::PlatformSpec& spec,
                                          const std::vector<CollectivePoint>& points) {
  // One actor per rank, and a tree allreduce's four streams beside it.
  const bool tree = std::any_of(points.begin(), points.end(), [](const CollectivePoint& point) {
    return point.collective == Collective::allreduce && point.algorithm == Algorithm::tree;
  });
  net::Simulation simulation(spec, tree ? 5 : 1);
  const net::Platform& platform = simulation.platform();
  const int workers = static_cast<int>(platform.workers.size());

  std::vector<std::unique_ptr<net::Group>> groups;
  for (size_t p = 0; p < points.size(); ++p) {
    if (points[p].ranks > workers)
      throw std::invalid_argument("a point needs more ranks than the platform has workers");
    std::vector<sg4::Host*> hosts(platform.workers.begin(),
                                  platform.workers.begin() + points[p].ranks);
    groups.push_back(std::make_unique<net::Group>("point" + std::to_string(p), hosts));
  }
  std::vector<double> seconds(points.size(), 0.0);
  size_t timed = 0;
  // One actor per worker runs every point in turn; barriers keep points apart.
  sg4::BarrierPtr barrier = sg4::Barrier::create(static_cast<unsigned>(workers));
  for (int w = 0; w < workers; ++w) {
    // One sum per rank at once, on the cores the ranks share where they do.
    const net::SumCost float16_sum{platform.processor_of(static_cast<size_t>(w)),
                                   spec.float16_sum_s_per_byte()};
    sg4::Actor::create("rank-" + std::to_string(w), platform.workers[static_cast<size_t>(w)],
                       [&, w, float16_sum] {
                         for (size_t p = 0; p < points.size(); ++p) {
                           barrier->wait();
                           double start = sg4::Engine::get_clock();
                           if (w < points[p].ranks)
                             run_point(*groups[p], w, points[p],
                                       ranks_per_node(spec, points[p].ranks), float16_sum);
                           barrier->wait();
                           if (w == 0) {
                             seconds[p] = sg4::Engine::get_clock() - start;
                             ++timed;
                           }
                         }
                       });
  }
  simulation.run();
  // A deadlock ends SimGrid's run early; untimed points would read 0 s.
  if (timed != points.size())
    throw std::runtime_error("the simulation deadlocked at collective point " +
                             std::to_string(timed + 1) + " of " + std::to_string(points.size()));
  return seconds;
}

/// The real compressor on the trace's gradients, one schedule entry per
/// measured iteration (error feedback carried across them).
std::vector<training::CompressedIteration> compressed_schedule(const TrainingRun& run, size_t index,
                                                               const TrainingInputs& inputs,
                                                               const cost::DeviceProfile& profile) {
  const std::string at = "/training/" + std::to_string(index);
  std::unique_ptr<training::GradientFeed> feed;
  try {
    feed = training::make_trace_feed(inputs.trace, run.ranks, inputs.seed, "gaussian_deviation");
  } catch (const InputError& error) {
    throw InputError(inputs.trace_source, "", error.what());
  }
  const compress::LayerLayout& layout = feed->layout();
  bool same_layers = layout.size() == run.layer_bytes.size();
  for (size_t l = 0; same_layers && l < layout.size(); ++l)
    same_layers = layout[l].size * sizeof(float) == run.layer_bytes[l];
  if (!same_layers)
    throw InputError(
        inputs.measured_file, at + "/workload/layers",
        "the compressors run on the gradients of " + inputs.trace.string() + ", whose layers (" +
            std::to_string(layout.size()) + ", " + std::to_string(layout.total() * sizeof(float)) +
            " bytes) differ from the run's (" + std::to_string(run.layer_bytes.size()) + ", " +
            std::to_string(run.gradient_bytes()) + " bytes)");
  // PowerSGD compresses each tensor by its shape: where the run gives
  // shapes, they are the trace's.
  for (size_t l = 0; l < run.layer_shapes.size(); ++l) {
    const nlohmann::json given = run.layer_shapes[l];
    const nlohmann::json traced =
        layout[l].shape ? nlohmann::json(*layout[l].shape) : nlohmann::json();
    if (given != traced)
      throw InputError(
          inputs.measured_file, at + "/workload/layers/" + std::to_string(l) + "/shape",
          given.dump() + " is not the shape of " + layout[l].name + " in " + inputs.trace.string() +
              ", " + traced.dump() + ", on whose gradients the compressors run");
  }
  try {
    std::unique_ptr<compress::Compressor> compressor =
        compress::make_compressor(run.compressor, simulated_compressor_params(run));
    training::CompressedRun compressed =
        training::run_compressor(*compressor, *feed, run.ranks,
                                 static_cast<int>(run.iterations.size()), inputs.seed, profile);
    return std::move(compressed.schedule);
  } catch (const compress::ParameterError& error) {
    throw InputError(inputs.measured_file, at + "/compressor", error.what());
  }
}

/// Scales every kernel of `schedule` so that a worker's kernels take
/// `seconds` per iteration on the mean over the iterations from `first` on
/// (those compared): a compressor timed on the run's own device replaces the
/// profile's price, the kernels keeping their relative costs (which worker
/// leads, which step each comes before).
bool scale_kernels(std::vector<training::CompressedIteration>& schedule, size_t first, int ranks,
                   double seconds) {
  double priced = 0;
  for (size_t i = first; i < schedule.size(); ++i)
    for (const training::CompressionPart& part : schedule[i].parts)
      for (const std::vector<training::KernelPlan>& kernels : part.kernels)
        for (const training::KernelPlan& kernel : kernels)
          priced += kernel.seconds;
  priced /= static_cast<double>(schedule.size() - first) * ranks;
  // A compressor without kernels has nothing to scale.
  if (!(priced > 0))
    return false;
  const double factor = seconds / priced;
  for (training::CompressedIteration& iteration : schedule)
    for (training::CompressionPart& part : iteration.parts)
      for (std::vector<training::KernelPlan>& kernels : part.kernels)
        for (training::KernelPlan& kernel : kernels)
          kernel.seconds *= factor;
  return true;
}

/// The measured time a compressed run's kernels are scaled to, per worker and
/// iteration after the warm-up, and where it comes from: on shared cores
/// `compute_alone.compression_s`, otherwise the in-run compression mean, a
/// time on the rank's own device as its compute is (0 there is a phase the
/// run did not record). Empty: the device profile prices the kernels.
struct MeasuredCompression {
  std::optional<double> seconds;
  const char* source = nullptr;
};

MeasuredCompression measured_compression(const TrainingRun& run, const IterationTimes& mean,
                                         bool shared) {
  if (shared) {
    if (run.compute_alone->compression_s)
      return {run.compute_alone->compression_s, "scaled to compute_alone.compression_s"};
    return {};
  }
  if (mean.compression_s > 0)
    return {mean.compression_s, "scaled to the in-run compression_s mean"};
  return {};
}

/// Refuses measured times that would make an iteration compute past
/// kLongestSeconds (`seconds` on each rank, `ranks_per_core` of them sharing
/// a core): the run's times' doing, not the platform's, so named as such
/// before anything is simulated.
void refuse_endless_compute(double seconds, double ranks_per_core, const std::string& file,
                            const std::string& path) {
  const double computing = seconds * std::max(1.0, ranks_per_core);
  if (computing <= kLongestSeconds)
    return;
  throw InputError(file, path,
                   training::too_long_message("with these times, an iteration's compute", computing,
                                              "check the run's measured times"));
}

} // namespace

std::vector<double> simulate_collectives(const net::PlatformSpec& platform,
                                         const std::vector<CollectivePoint>& points) {
  if (points.empty())
    return {};
  return run_in_child([&] { return collectives_in_engine(platform, points); });
}

nlohmann::json simulated_compressor_params(const TrainingRun& run) {
  if (!selects_by_density(run.compressor)) {
    // DDP's hooks: gcsim's compressor of that name does what the hook does,
    // with the parameters the run gives.
    nlohmann::json params =
        run.compressor_params.is_object() ? run.compressor_params : nlohmann::json::object();
    params.erase("name");
    return params;
  }
  nlohmann::json params = {{"density", run.compressor_params.value("density", 1.0)}};
  // worker.py's top-k allgathers k (value, index) pairs of 4 + 4 bytes.
  if (run.compressor == "topk")
    params["variant"] = "allgather_pairs";
  // worker.py's DEFT pads every worker's selection to the largest and sends
  // indices as int32: 4 bytes each.
  if (run.compressor == "deft") {
    params["pad_indices"] = true;
    params["index_bytes"] = 4;
  }
  return params;
}

std::vector<SimulatedIteration> simulate_training(const net::PlatformSpec& platform,
                                                  const std::vector<TrainingRun>& runs,
                                                  const TrainingInputs& inputs) {
  if (std::all_of(runs.begin(), runs.end(),
                  [](const TrainingRun& run) { return !run.scenario.empty(); }))
    return std::vector<SimulatedIteration>(runs.size());
  std::vector<SimulatedIteration> simulated(runs.size());
  std::vector<training::IterationPlan> plans;
  std::vector<size_t> warmups;
  std::vector<size_t> planned; // the runs in `plans`, by index into `runs`
  std::optional<cost::DeviceProfile> profile;
  for (size_t r = 0; r < runs.size(); ++r) {
    const TrainingRun& run = runs[r];
    if (!run.scenario.empty())
      continue;
    planned.push_back(r);
    const IterationTimes mean = run.steady_mean();
    training::IterationPlan plan;
    plan.layer_bytes = run.layer_bytes;
    plan.layers.resize(run.layer_bytes.size());
    // The script times forward and backward as a whole; where inside them the
    // time falls does not matter when communication starts after backward.
    // Where the ranks share the machine's cores the simulation shares them
    // too, so it takes the compute's cost on a core of its own; the in-run
    // times already hold the sharing.
    const bool shared = platform.shared_cores > 0;
    const std::string at = "/training/" + std::to_string(r);
    if (shared && !run.compute_alone)
      throw InputError(inputs.measured_file, at + "/compute_alone",
                       "missing, and the platform shares its cores (shared_cores): the run's "
                       "in-run times hold that sharing, which the simulation would add again");
    const double backward_s = shared ? run.compute_alone->backward_s : mean.backward_s;
    plan.layers.back().forward_s = shared ? run.compute_alone->forward_s : mean.forward_s;
    plan.optimizer_s = shared ? run.compute_alone->optimizer_s : mean.optimizer_s;
    const MeasuredCompression compression = measured_compression(run, mean, shared);
    refuse_endless_compute(plan.layers.back().forward_s + backward_s + plan.optimizer_s +
                               compression.seconds.value_or(0),
                           shared ? static_cast<double>(run.ranks) / platform.shared_cores : 1,
                           inputs.measured_file, at + (shared ? "/compute_alone" : "/iterations"));
    SimulatedIteration& described = simulated[r];
    described.compute_inputs = shared ? "compute_alone, on the platform's shared cores"
                                      : "the in-run forward, backward and optimizer means";
    if (run.layer_backward_s.empty()) {
      plan.layers.back().backward_s = backward_s;
      plan.bucket_bytes = run.gradient_bytes(); // one flat allreduce
    } else {
      // Each layer (a DDP bucket, as import_torch_profile.py writes them)
      // reduced on its own once the backward pass is through it, the
      // pass's time shared among the layers as measured.
      const double measured =
          std::accumulate(run.layer_backward_s.begin(), run.layer_backward_s.end(), 0.0);
      for (size_t i = 0; i < plan.layers.size(); ++i)
        plan.layers[i].backward_s = backward_s * run.layer_backward_s[i] / measured;
      plan.bucket_bytes = 1;
    }
    plan.overlap = run.overlap;
    plan.algorithm = AllreduceAlgorithm::ring; // gloo's allreduce
    plan.iterations = static_cast<int>(run.iterations.size());
    warmups.push_back(static_cast<size_t>(run.warmup_iterations));
    if (run.compressor != "dense") {
      if (!profile) {
        try {
          profile = cost::DeviceProfile::load(inputs.device);
        } catch (const InputError& error) {
          throw InputError(inputs.device_source, "", error.what());
        }
      }
      plan.compressed = compressed_schedule(run, r, inputs, *profile);
      // DDP's fp16 hook sums float16 in gloo's ring.
      plan.allreduce_sum_s_per_byte = training::compressor_sum_s_per_byte(run.compressor, platform);
      const bool scaled = compression.seconds &&
                          scale_kernels(plan.compressed, static_cast<size_t>(run.warmup_iterations),
                                        run.ranks, *compression.seconds);
      described.compression_inputs = scaled ? compression.source : "priced by the device profile";
    }
    plans.push_back(std::move(plan));
  }
  std::vector<double> flat = run_in_child([&] {
    std::vector<double> values;
    const std::vector<training::RunResult> results = training::simulate(platform, plans);
    for (size_t r = 0; r < results.size(); ++r) {
      const std::vector<training::IterationRecord>& records = results[r].iterations;
      SimulatedIteration mean;
      const size_t first = std::min(warmups[r], records.size() - 1);
      const double count = static_cast<double>(records.size() - first);
      for (size_t i = first; i < records.size(); ++i) {
        const training::IterationRecord& record = records[i];
        mean.iteration_s += record.iteration_s / count;
        mean.compute_s += record.compute_s / count;
        mean.compression_s += record.compression_s / count;
        // As the measured side takes it: what the iteration adds beyond
        // compute and the kernels' mean time (a leader's selection the others
        // wait for counts here, as it does in the measured phases).
        mean.communication_s +=
            std::max(0.0, record.iteration_s - record.compute_s - record.compression_s) / count;
        mean.bytes_sent_per_worker += record.bytes_sent_per_worker / count;
      }
      values.insert(values.end(), {mean.iteration_s, mean.compute_s, mean.compression_s,
                                   mean.communication_s, mean.bytes_sent_per_worker});
    }
    return values;
  });
  constexpr size_t kFields = 5;
  for (size_t p = 0; p < planned.size() && (p + 1) * kFields <= flat.size(); ++p) {
    const double* f = &flat[p * kFields];
    SimulatedIteration& run = simulated[planned[p]];
    run.iteration_s = f[0];
    run.compute_s = f[1];
    run.compression_s = f[2];
    run.communication_s = f[3];
    run.bytes_sent_per_worker = f[4];
  }
  return simulated;
}

} // namespace gcsim::validate
