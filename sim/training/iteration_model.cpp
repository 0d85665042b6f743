#include "sim/training/iteration_model.hpp"

#include "compressors/rng.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/network/collectives.hpp"
#include "sim/network/summation_orders.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <stdexcept>
#include <utility>

#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace gcsim::training {
namespace {

// An allreduce of `bytes` over `group` by `algorithm` (not the parameter
// servers' push/pull, which involves more than the group's workers):
// the dense buckets' and a compressor's steps that leave the algorithm to
// the run. `ranks_per_node`: consecutive ranks on one machine, which the
// trees and the hierarchical rings follow.
// `sum`: what the ring's sums cost (the other algorithms' are free).
void allreduce(AllreduceAlgorithm algorithm, net::Group& group, int rank, uint64_t bytes,
               int ranks_per_node, const net::SumCost& sum = {}) {
  switch (algorithm) {
  case AllreduceAlgorithm::ring:
    net::ring_allreduce(group, rank, bytes, sum);
    return;
  case AllreduceAlgorithm::recursive_doubling:
    net::recursive_doubling_allreduce(group, rank, bytes);
    return;
  case AllreduceAlgorithm::double_binary_tree:
    net::double_binary_tree_allreduce(group, rank, bytes, ranks_per_node);
    return;
  case AllreduceAlgorithm::hierarchical:
    net::hierarchical_allreduce(group, rank, bytes, ranks_per_node);
    return;
  case AllreduceAlgorithm::parameter_server:
    break;
  }
  throw std::logic_error("allreduce: push/pull is not an allreduce over the group");
}

// A run of one part's compression kernels on a worker's device, and what
// follows it: the part's steps may start (its first kernels), the steps go
// on (kernels between two steps), the part is done (its last kernels), or
// the device has no more work.
struct KernelJob {
  enum class Then { start_steps, resume_steps, finish_part, stop };
  int iteration = 0;
  size_t part = 0;
  size_t first = 0, last = 0; // [first, last) of the part's kernels on this worker
  Then then = Then::stop;
};

// What a worker's trainer, its communication actor and (compressed runs)
// its device actor share.
struct WorkerChannel {
  std::deque<int> ready; // buckets (parts) whose steps may start, in order
  sg4::SemaphorePtr ready_count = sg4::Semaphore::create(0);
  sg4::SemaphorePtr done_count = sg4::Semaphore::create(0);
  // Compressed runs: the kernels issued to the device, run in issue order as
  // on one CUDA stream, and the signal that a part's kernels between two of
  // its steps are done.
  std::deque<KernelJob> kernel_jobs;
  sg4::SemaphorePtr kernel_job_count = sg4::Semaphore::create(0);
  sg4::SemaphorePtr kernels_between_steps_done = sg4::Semaphore::create(0);
  std::vector<double> iteration_end;         // simulated clock per iteration
  std::vector<double> compute_per_iteration; // simulated seconds the compute took
  std::vector<uint64_t> sent_per_iteration;
  std::vector<std::map<std::string, double>> kernels_per_iteration;
  std::vector<std::map<std::string, double>> bytes_by_step_per_iteration;
  // Compressed runs: when the backward pass ended, and the kernels that ended
  // after that, per iteration; what of them is exposed is decided once every
  // worker's backward pass is known to have ended.
  struct KernelSpan {
    const std::string* name;
    double start, end, took;
  };
  std::vector<double> backward_end;
  std::vector<std::vector<KernelSpan>> late_kernels_per_iteration;
};

class PlanRun {
public:
  PlanRun(const IterationPlan& plan, const net::Platform& platform, int index,
          ProgressCallback progress, std::vector<TimelineEvent>* timeline)
      : plan_(plan), platform_(platform), buckets_(plan_buckets(plan)),
        progress_(std::move(progress)), timeline_(timeline) {
    std::vector<sg4::Host*> hosts = platform.workers;
    if (plan.algorithm == AllreduceAlgorithm::parameter_server)
      hosts.insert(hosts.end(), platform.servers.begin(), platform.servers.end());
    plan_index_ = index;
    tag_ = "plan" + std::to_string(index);
    group_ = std::make_unique<net::Group>(tag_, hosts);
    for (size_t w = 0; w < platform.workers.size(); ++w)
      channels_.push_back(std::make_unique<WorkerChannel>());
    step_spans_.resize(static_cast<size_t>(std::max(0, plan.iterations)));
    // A layer index closes a bucket when the backward pass reaches it.
    closing_bucket_.assign(plan.layers.size(), -1);
    for (size_t b = 0; b < buckets_.size(); ++b)
      closing_bucket_[static_cast<size_t>(buckets_[b].first_layer)] = static_cast<int>(b);
  }

  /// Starts every actor; returns the actors to join.
  std::vector<sg4::ActorPtr> start() {
    std::vector<sg4::ActorPtr> actors;
    const int workers = static_cast<int>(platform_.workers.size());
    for (int w = 0; w < workers; ++w) {
      sg4::Host* host = platform_.workers[static_cast<size_t>(w)];
      actors.push_back(
          sg4::Actor::create("trainer-" + std::to_string(w), host, [this, w] { train(w); }));
      actors.push_back(
          sg4::Actor::create("comm-" + std::to_string(w), host, [this, w] { communicate(w); }));
      if (compressed())
        actors.push_back(
            sg4::Actor::create("device-" + std::to_string(w), host, [this, w] { run_device(w); }));
    }
    // A compressed iteration's steps run among the workers (a compressor's
    // own parameter server is one of them): servers waiting for dense
    // buckets that never come would deadlock the run.
    if (plan_.algorithm == AllreduceAlgorithm::parameter_server && !compressed()) {
      server_sent_.assign(platform_.servers.size(), {});
      for (size_t s = 0; s < platform_.servers.size(); ++s) {
        int rank = workers + static_cast<int>(s);
        actors.push_back(sg4::Actor::create("server-" + std::to_string(s), platform_.servers[s],
                                            [this, rank] { serve(rank); }));
      }
    }
    return actors;
  }

  RunResult result(double plan_start) const {
    RunResult result;
    result.buckets = buckets_;
    const double compute = compute_seconds();
    double previous_end = plan_start;
    for (int i = 0; i < plan_.iterations; ++i) {
      IterationRecord record;
      double end = 0;
      double sent_sum = 0;
      double sent_max = 0;
      for (const auto& channel : channels_) {
        end = std::max(end, channel->iteration_end[static_cast<size_t>(i)]);
        auto sent = static_cast<double>(channel->sent_per_iteration[static_cast<size_t>(i)]);
        sent_sum += sent;
        sent_max = std::max(sent_max, sent);
      }
      record.iteration_s = end - previous_end;
      // Shared or varied, compute takes what the sharing and the draws made
      // of it (mean over workers); otherwise exactly the plan's seconds.
      record.compute_s = compute;
      if (compute_is_shared() || plan_.compute_variation > 0) {
        record.compute_s = 0;
        double slowest = 0;
        for (const auto& channel : channels_) {
          const double computed = channel->compute_per_iteration[static_cast<size_t>(i)];
          record.compute_s += computed / static_cast<double>(channels_.size());
          slowest = std::max(slowest, computed);
        }
        // Everyone waits for the slowest worker's gradients; with shared
        // cores alone that wait stays in communication, as it always has.
        if (plan_.compute_variation > 0)
          record.straggler_wait_s = slowest - record.compute_s;
      }
      const double share = 1.0 / static_cast<double>(channels_.size());
      for (const auto& channel : channels_) {
        for (const auto& [name, seconds] : channel->kernels_per_iteration[static_cast<size_t>(i)]) {
          record.kernel_s[name] += seconds * share;
          record.compression_s += seconds * share;
        }
        for (const auto& [label, bytes] :
             channel->bytes_by_step_per_iteration[static_cast<size_t>(i)])
          record.bytes_by_step[label] += bytes;
      }
      // Bytes summed, then divided, as bytes_sent_per_worker is: a sum of
      // bytes * (1/P) made 2N on 6 workers 2097151.9999999998.
      for (auto& [label, bytes] : record.bytes_by_step)
        bytes /= static_cast<double>(channels_.size());
      // A kernel is hidden while any worker's backward pass still runs (with
      // stragglers, the leader's kernels run while the slowest computes, and
      // that time is the straggler wait's). The worker with the most exposed
      // kernel time is the one the others wait for (CLT-k's or IWP's leader,
      // DEFT's fullest bin).
      double gradients_ready = -std::numeric_limits<double>::infinity();
      for (const auto& channel : channels_)
        if (channel->backward_end.size() > static_cast<size_t>(i))
          gradients_ready =
              std::max(gradients_ready, channel->backward_end[static_cast<size_t>(i)]);
      for (const auto& channel : channels_) {
        if (channel->late_kernels_per_iteration.size() <= static_cast<size_t>(i))
          continue;
        double exposed_s = 0;
        std::map<std::string, double> exposed_by_kernel;
        for (const auto& span : channel->late_kernels_per_iteration[static_cast<size_t>(i)]) {
          const double exposed =
              span.start >= gradients_ready ? span.took : std::max(0.0, span.end - gradients_ready);
          exposed_s += exposed;
          exposed_by_kernel[*span.name] += exposed;
        }
        if (exposed_s > record.compression_exposed_s) {
          record.compression_exposed_s = exposed_s;
          record.kernel_exposed_s = std::move(exposed_by_kernel);
        }
      }
      // What is left of the iteration; a remainder of rounding alone (one
      // worker, which sends nothing, left 5.7e-17 s) is none.
      const double left = record.iteration_s - record.compute_s - record.straggler_wait_s -
                          record.compression_exposed_s;
      record.communication_s = left > 1e-12 * record.iteration_s ? left : 0.0;
      // Each collective from its last participant's arrival to its last
      // participant's departure: its own time, without the waits for late
      // arrivals (stragglers, a leader's kernel) that a worker's blocked time
      // includes.
      for (const auto& [step, span] : step_spans_[static_cast<size_t>(i)])
        record.communication_total_s += span.last_exit - span.last_entry;
      record.bytes_sent_per_worker = sent_sum / static_cast<double>(channels_.size());
      record.bytes_sent_max_worker = sent_max;
      if (!server_sent_.empty()) {
        double server_sum = 0;
        double server_max = 0;
        for (const std::vector<uint64_t>& sent : server_sent_) {
          const auto bytes = static_cast<double>(sent[static_cast<size_t>(i)]);
          server_sum += bytes;
          server_max = std::max(server_max, bytes);
        }
        record.bytes_sent_per_server = server_sum / static_cast<double>(server_sent_.size());
        record.bytes_sent_max_server = server_max;
      }
      result.iterations.push_back(record);
      previous_end = end;
    }
    return result;
  }

private:
  void record_span(int worker, const char* category, std::string name, int iteration, double start,
                   std::vector<std::pair<std::string, double>> figures = {}, bool server = false) {
    if (timeline_ != nullptr)
      timeline_->push_back({plan_index_, worker, category, std::move(name), start,
                            sg4::Engine::get_clock(), server, iteration, std::move(figures)});
  }

  // A compressed step's or kernel's span, named after the bucket it is of
  // where the iteration has several parts (per-bucket compression runs
  // PowerSGD's "allreduce P factors" once a bucket), as a dense bucket's is.
  void record_part_span(int worker, const char* category, const std::string& label, int iteration,
                        size_t part, double start,
                        std::vector<std::pair<std::string, double>> figures) {
    if (timeline_ == nullptr)
      return;
    const bool parts = plan_.compressed[static_cast<size_t>(iteration)].parts.size() > 1;
    record_span(worker, category, parts ? label + ", bucket " + std::to_string(part) : label,
                iteration, start, std::move(figures));
  }

  double forward_seconds() const {
    return std::accumulate(
        plan_.layers.begin(), plan_.layers.end(), 0.0,
        [](double sum, const LayerTimes& layer) { return sum + layer.forward_s; });
  }
  double compute_seconds() const {
    return std::accumulate(plan_.layers.begin(), plan_.layers.end(), plan_.optimizer_s,
                           [](double sum, const LayerTimes& layer) {
                             return sum + layer.forward_s + layer.backward_s;
                           });
  }

  void mark_ready(WorkerChannel& channel, int bucket) {
    channel.ready.push_back(bucket);
    channel.ready_count->release();
  }

  bool compressed() const { return !plan_.compressed.empty(); }

  // The factor of its compute that worker `worker` takes in `iteration`: a
  // lognormal of mean 1 and coefficient of variation c (sigma^2 = ln(1 +
  // c^2)), a normal drawn from the seed, the iteration and the worker, so
  // that it does not depend on the plan or on the order in which actors run.
  double compute_scale(int worker, int iteration) const {
    if (plan_.compute_variation <= 0)
      return 1.0;
    constexpr uint64_t kPurposeStraggler = 0x5354524147;
    compress::Xoshiro256 rng(compress::derive_seed(plan_.seed, static_cast<uint64_t>(iteration),
                                                   static_cast<uint64_t>(worker),
                                                   kPurposeStraggler));
    const double normal = rng.normal_pair().first;
    const double sigma2 = std::log1p(plan_.compute_variation * plan_.compute_variation);
    return std::exp(std::sqrt(sigma2) * normal - sigma2 / 2);
  }

  // Where worker `worker` computes when its compute can be slowed down by
  // other work: the machine whose cores the workers share, or its own
  // device when kernels share it with the backward pass; null when every
  // compute phase simply takes its seconds.
  sg4::Host* compute_host(int worker) const {
    if (platform_.shared_cpu == nullptr && !plan_.kernels_share_device)
      return nullptr;
    return platform_.processor_of(static_cast<size_t>(worker));
  }
  bool compute_is_shared() const { return compute_host(0) != nullptr; }

  // What a compressed step's ring sums cost worker `worker`: on the host it
  // computes on (its own where nothing shares it).
  net::SumCost sum_cost(int worker) const {
    if (plan_.allreduce_sum_s_per_byte <= 0)
      return {};
    return {platform_.processor_of(static_cast<size_t>(worker)), plan_.allreduce_sum_s_per_byte};
  }

  // `seconds` of one core's compute on worker `worker`: a sleep, or an
  // execution on its compute host, where it takes longer while other
  // executions share that host (more workers than cores, or a kernel beside
  // the backward pass).
  void compute_for(int worker, double seconds) const {
    sg4::Host* host = compute_host(worker);
    if (host == nullptr || seconds <= 0) {
      sg4::this_actor::sleep_for(seconds);
      return;
    }
    sg4::this_actor::exec_init(seconds * host->get_speed())->set_host(host)->wait();
  }

  void train(int worker) {
    WorkerChannel& channel = *channels_[static_cast<size_t>(worker)];
    for (int iteration = 0; iteration < plan_.iterations; ++iteration) {
      const double scale = compute_scale(worker, iteration);
      const double forward = forward_seconds() * scale;
      double start = sg4::Engine::get_clock();
      channel.kernels_per_iteration.emplace_back();
      channel.bytes_by_step_per_iteration.emplace_back();
      channel.late_kernels_per_iteration.emplace_back();
      compute_for(worker, forward);
      record_span(worker, "compute", "forward", iteration, start);
      double computing = sg4::Engine::get_clock() - start;
      if (compressed()) {
        const std::vector<CompressionPart>& parts =
            plan_.compressed[static_cast<size_t>(iteration)].parts;
        double backward_start = sg4::Engine::get_clock();
        // Parts come in backward order: part p is ready once the backward
        // pass has computed its ready_layer, and its first kernels are issued
        // then, whatever the earlier parts' steps are doing.
        size_t next_part = 0;
        for (int layer = static_cast<int>(plan_.layers.size()) - 1; layer >= 0; --layer) {
          compute_for(worker, plan_.layers[static_cast<size_t>(layer)].backward_s * scale);
          while (plan_.overlap && next_part < parts.size() && parts[next_part].ready_layer >= layer)
            issue_first_kernels(worker, iteration, next_part++);
        }
        record_span(worker, "compute", "backward", iteration, backward_start);
        computing += sg4::Engine::get_clock() - backward_start;
        channel.backward_end.push_back(sg4::Engine::get_clock());
        while (next_part < parts.size())
          issue_first_kernels(worker, iteration, next_part++);
        for (size_t part = 0; part < parts.size(); ++part)
          channel.done_count->acquire();
      } else {
        double backward_start = sg4::Engine::get_clock();
        for (int layer = static_cast<int>(plan_.layers.size()) - 1; layer >= 0; --layer) {
          compute_for(worker, plan_.layers[static_cast<size_t>(layer)].backward_s * scale);
          int bucket = closing_bucket_[static_cast<size_t>(layer)];
          if (bucket >= 0 && plan_.overlap)
            mark_ready(channel, bucket);
        }
        record_span(worker, "compute", "backward", iteration, backward_start);
        computing += sg4::Engine::get_clock() - backward_start;
        if (!plan_.overlap)
          for (size_t bucket = 0; bucket < buckets_.size(); ++bucket)
            mark_ready(channel, static_cast<int>(bucket));
        for (size_t bucket = 0; bucket < buckets_.size(); ++bucket)
          channel.done_count->acquire();
      }
      double optimizer_start = sg4::Engine::get_clock();
      compute_for(worker, plan_.optimizer_s);
      record_span(worker, "compute", "optimizer", iteration, optimizer_start);
      channel.compute_per_iteration.push_back(computing + sg4::Engine::get_clock() -
                                              optimizer_start);
      channel.iteration_end.push_back(sg4::Engine::get_clock());
      if (worker == 0 && progress_)
        progress_(iteration, sg4::Engine::get_clock());
    }
  }

  // Records that a worker took part in collective `step` of `iteration`
  // from `begin` until now.
  void note_step(int iteration, size_t part, size_t step, double begin) {
    StepSpan& span = step_spans_[static_cast<size_t>(iteration)][{part, step}];
    span.last_entry = std::max(span.last_entry, begin);
    span.last_exit = std::max(span.last_exit, sg4::Engine::get_clock());
  }

  void issue(WorkerChannel& channel, const KernelJob& job) {
    channel.kernel_jobs.push_back(job);
    channel.kernel_job_count->release();
  }

  // The end of a part's kernels on `worker` that come before its first step
  // (all of them, for a part without steps).
  size_t first_kernels_end(const CompressionPart& part, int worker) const {
    const std::vector<KernelPlan>& kernels = part.kernels[static_cast<size_t>(worker)];
    size_t end = 0;
    while (end < kernels.size() && kernels[end].before_step == 0)
      ++end;
    return end;
  }

  // Issues the kernels of part `part` that precede its first step; the
  // device hands the part to the communication actor once they are done.
  void issue_first_kernels(int worker, int iteration, size_t part) {
    const CompressionPart& plan = plan_.compressed[static_cast<size_t>(iteration)].parts[part];
    issue(*channels_[static_cast<size_t>(worker)],
          {iteration, part, 0, first_kernels_end(plan, worker), KernelJob::Then::start_steps});
  }

  // A compressed run's device actor: the kernels issued to this worker's
  // device, one job after the other in issue order, so that a later part's
  // first kernels wait for the device, not for the earlier parts' steps.
  void run_device(int worker) {
    WorkerChannel& channel = *channels_[static_cast<size_t>(worker)];
    for (;;) {
      channel.kernel_job_count->acquire();
      const KernelJob job = channel.kernel_jobs.front();
      channel.kernel_jobs.pop_front();
      if (job.then == KernelJob::Then::stop)
        return;
      const CompressionPart& part =
          plan_.compressed[static_cast<size_t>(job.iteration)].parts[job.part];
      run_kernels(worker, channel, part.kernels[static_cast<size_t>(worker)], job.first, job.last,
                  job.iteration, job.part);
      switch (job.then) {
      case KernelJob::Then::start_steps:
        channel.ready.push_back(static_cast<int>(job.part));
        channel.ready_count->release();
        break;
      case KernelJob::Then::resume_steps:
        channel.kernels_between_steps_done->release();
        break;
      case KernelJob::Then::finish_part:
        channel.done_count->release();
        break;
      case KernelJob::Then::stop:
        break;
      }
    }
  }

  // Kernels [first, last) of one part on this worker's device.
  void run_kernels(int worker, WorkerChannel& channel, const std::vector<KernelPlan>& kernels,
                   size_t first, size_t last, int iteration, size_t part) {
    auto& kernel_seconds = channel.kernels_per_iteration[static_cast<size_t>(iteration)];
    for (size_t i = first; i < last; ++i) {
      const KernelPlan& kernel = kernels[i];
      double start = sg4::Engine::get_clock();
      compute_for(worker, kernel.seconds);
      // Sharing its host, a kernel may take longer than its price.
      const double took = compute_is_shared() ? sg4::Engine::get_clock() - start : kernel.seconds;
      kernel_seconds[kernel.name] += took;
      // Only a kernel that ends after this worker's backward pass can be on
      // the critical path; result() decides how much of it is.
      if (channel.backward_end.size() > static_cast<size_t>(iteration))
        channel.late_kernels_per_iteration[static_cast<size_t>(iteration)].push_back(
            {&kernel.name, start, sg4::Engine::get_clock(), took});
      if (timeline_ != nullptr) {
        std::vector<std::pair<std::string, double>> sizes;
        for (const auto& [label, value] :
             {std::pair{"n", kernel.n}, std::pair{"k", kernel.k}, std::pair{"rows", kernel.rows},
              std::pair{"cols", kernel.cols}})
          if (value > 0)
            sizes.emplace_back(label, value);
        record_part_span(worker, "kernel", kernel.name, iteration, part, start, std::move(sizes));
      }
    }
  }

  // One part's steps on this worker, its first kernels done: the kernels
  // between two steps run on the device before the later step, the ones
  // after the last step are issued and the next part's steps may go on
  // meanwhile. Adds the bytes it sent to `sent`.
  void run_part(int worker, WorkerChannel& channel, const CompressionPart& part, size_t part_index,
                int iteration, uint64_t& sent) {
    const std::vector<KernelPlan>& kernels = part.kernels[static_cast<size_t>(worker)];
    auto& step_bytes = channel.bytes_by_step_per_iteration[static_cast<size_t>(iteration)];
    size_t next_kernel = first_kernels_end(part, worker);
    for (size_t s = 0; s < part.steps.size(); ++s) {
      size_t end = next_kernel;
      while (end < kernels.size() && kernels[end].before_step <= s)
        ++end;
      if (end > next_kernel) {
        issue(channel, {iteration, part_index, next_kernel, end, KernelJob::Then::resume_steps});
        channel.kernels_between_steps_done->acquire();
        next_kernel = end;
      }
      const StepPlan& step = part.steps[s];
      auto member = std::lower_bound(step.participants.begin(), step.participants.end(), worker);
      if (member == step.participants.end() || *member != worker)
        continue;
      double start = sg4::Engine::get_clock();
      uint64_t bytes = run_step(step, part_index, s,
                                static_cast<int>(member - step.participants.begin()), worker);
      note_step(iteration, part_index, s, start);
      sent += bytes;
      step_bytes[step.label] += static_cast<double>(bytes);
      record_part_span(worker, "communication", step.label, iteration, part_index, start,
                       {{"bytes_sent", static_cast<double>(bytes)}});
    }
    if (next_kernel < kernels.size())
      issue(channel,
            {iteration, part_index, next_kernel, kernels.size(), KernelJob::Then::finish_part});
    else
      channel.done_count->release();
  }

  // A compressed run's communication actor: each iteration's parts' steps in
  // order (every worker's in the same order), each once the device has run
  // the part's first kernels.
  void communicate_compressed(int worker) {
    WorkerChannel& channel = *channels_[static_cast<size_t>(worker)];
    for (int iteration = 0; iteration < plan_.iterations; ++iteration) {
      const std::vector<CompressionPart>& parts =
          plan_.compressed[static_cast<size_t>(iteration)].parts;
      uint64_t sent = 0;
      for (size_t p = 0; p < parts.size(); ++p) {
        channel.ready_count->acquire();
        const int part = channel.ready.front();
        channel.ready.pop_front();
        run_part(worker, channel, parts[static_cast<size_t>(part)], static_cast<size_t>(part),
                 iteration, sent);
      }
      channel.sent_per_iteration.push_back(sent);
    }
    // After every part's last kernels, which the device runs first.
    issue(channel, {0, 0, 0, 0, KernelJob::Then::stop});
  }

  // The participants' group of a step, made once by the first of them to
  // get there. Mailboxes are named by step index and global ranks: steps of
  // later iterations reuse them in order, which is safe because every
  // worker runs its steps in the same order.
  net::Group& step_group(const StepPlan& step, size_t part, size_t index) {
    std::unique_ptr<net::Group>& group = step_groups_[&step];
    if (!group) {
      std::vector<sg4::Host*> hosts;
      for (int rank : step.participants)
        hosts.push_back(platform_.workers[static_cast<size_t>(rank)]);
      // Part 0 keeps the names it had before parts existed.
      const std::string name =
          tag_ + (part == 0 ? "" : "p" + std::to_string(part)) + "s" + std::to_string(index);
      group = std::make_unique<net::Group>(name, std::move(hosts), step.participants);
    }
    return *group;
  }

  // The ranks per machine a step's trees and rings follow: over every
  // worker the machines', as the dense buckets'; over a subset, flat.
  int ranks_per_node_of(const StepPlan& step) const {
    return step.participants.size() == platform_.workers.size() ? plan_.ranks_per_node : 1;
  }

  // One step as the messages of its algorithm; returns the bytes this
  // worker sent.
  uint64_t run_step(const StepPlan& step, size_t part, size_t index, int local_rank, int worker) {
    net::Group& group = step_group(step, part, index);
    auto local_of = [&](int rank) {
      return static_cast<int>(
          std::lower_bound(step.participants.begin(), step.participants.end(), rank) -
          step.participants.begin());
    };
    const uint64_t my_bytes = step.bytes.empty() ? 0 : step.bytes[static_cast<size_t>(local_rank)];
    switch (step.kind) {
    case StepPlan::Kind::allreduce_ring:
      net::ring_allreduce(group, local_rank, my_bytes, sum_cost(worker));
      break;
    case StepPlan::Kind::allreduce_recursive_doubling:
      net::recursive_doubling_allreduce(group, local_rank, my_bytes);
      break;
    case StepPlan::Kind::allreduce_tree:
      net::double_binary_tree_allreduce(group, local_rank, my_bytes, ranks_per_node_of(step));
      break;
    case StepPlan::Kind::allreduce: {
      // The run's algorithm, as the dense buckets run it (or a ring).
      const int ranks_per_node = ranks_per_node_of(step);
      allreduce(compressor_allreduce(plan_.algorithm, ranks_per_node), group, local_rank, my_bytes,
                ranks_per_node, sum_cost(worker));
      break;
    }
    case StepPlan::Kind::allgather:
      net::ring_allgather(group, local_rank, my_bytes);
      break;
    case StepPlan::Kind::allgatherv:
      net::ring_allgatherv(group, local_rank, step.bytes);
      break;
    case StepPlan::Kind::broadcast:
      if (plan_.broadcast == BroadcastAlgorithm::ring)
        net::pipelined_ring_broadcast(group, local_rank, local_of(step.root), my_bytes,
                                      net::kNcclChunkBytes);
      else
        net::binomial_broadcast(group, local_rank, local_of(step.root), my_bytes);
      break;
    case StepPlan::Kind::reduce:
      net::binomial_reduce(group, local_rank, local_of(step.root), my_bytes);
      break;
    case StepPlan::Kind::point_to_point: {
      std::vector<sg4::CommPtr> pending;
      std::vector<int*> received;
      received.reserve(step.messages.size());
      for (const StepPlan::Message& message : step.messages) {
        if (message.src == worker) {
          group.count_sent(local_rank, message.bytes);
          pending.push_back(group.mailbox(local_rank, local_of(message.dst))
                                ->put_async(&message_token_, message.bytes));
        }
        if (message.dst == worker) {
          received.push_back(nullptr);
          pending.push_back(
              group.mailbox(local_of(message.src), local_rank)->get_async<int>(&received.back()));
        }
      }
      sg4::Comm::wait_all(pending);
      break;
    }
    }
    return group.bytes_sent(local_rank);
  }

  void communicate(int worker) {
    if (compressed()) {
      communicate_compressed(worker);
      return;
    }
    WorkerChannel& channel = *channels_[static_cast<size_t>(worker)];
    const int workers = static_cast<int>(platform_.workers.size());
    const bool push_pull = plan_.algorithm == AllreduceAlgorithm::parameter_server;
    for (int iteration = 0; iteration < plan_.iterations; ++iteration) {
      uint64_t sent_before = group_->bytes_sent(worker);
      for (size_t b = 0; b < buckets_.size(); ++b) {
        channel.ready_count->acquire();
        int bucket = channel.ready.front();
        channel.ready.pop_front();
        double begin = sg4::Engine::get_clock();
        const uint64_t bucket_sent_before = group_->bytes_sent(worker);
        uint64_t bytes = buckets_[static_cast<size_t>(bucket)].bytes;
        if (push_pull)
          net::ps_worker_push_pull(*group_, worker, workers, bytes);
        else
          allreduce(plan_.algorithm, *group_, worker, bytes, plan_.ranks_per_node);
        note_step(iteration, static_cast<size_t>(bucket), 0, begin);
        record_span(
            worker, "communication",
            (push_pull ? "push/pull bucket " : "allreduce bucket ") + std::to_string(bucket),
            iteration, begin,
            {{"bucket_bytes", static_cast<double>(bytes)},
             {"bytes_sent", static_cast<double>(group_->bytes_sent(worker) - bucket_sent_before)}});
        channel.done_count->release();
      }
      channel.sent_per_iteration.push_back(group_->bytes_sent(worker) - sent_before);
      // The trainer opened this iteration's maps before any bucket was ready.
      channel.bytes_by_step_per_iteration[static_cast<size_t>(
          iteration)][push_pull ? "push/pull gradient buckets" : "allreduce gradient buckets"] =
          static_cast<double>(group_->bytes_sent(worker) - sent_before);
    }
  }

  void serve(int rank) {
    const int workers = static_cast<int>(platform_.workers.size());
    std::vector<uint64_t>& sent = server_sent_[static_cast<size_t>(rank - workers)];
    for (int iteration = 0; iteration < plan_.iterations; ++iteration) {
      const uint64_t sent_before = group_->bytes_sent(rank);
      for (size_t b = 0; b < buckets_.size(); ++b) {
        double pushes_in = 0;
        const uint64_t bucket_sent_before = group_->bytes_sent(rank);
        net::ps_server_push_pull(*group_, rank, workers, buckets_[b].bytes, &pushes_in);
        // What the server sends: its shard of the bucket to every worker,
        // once all have pushed (from its call, the span would be its wait).
        record_span(
            rank - workers, "communication", "pull bucket " + std::to_string(b), iteration,
            pushes_in,
            {{"bucket_bytes", static_cast<double>(buckets_[b].bytes)},
             {"bytes_sent", static_cast<double>(group_->bytes_sent(rank) - bucket_sent_before)}},
            /*server=*/true);
      }
      sent.push_back(group_->bytes_sent(rank) - sent_before);
    }
  }

  const IterationPlan& plan_;
  const net::Platform& platform_;
  std::vector<Bucket> buckets_;
  const ProgressCallback progress_;
  std::vector<TimelineEvent>* const timeline_; // null: no timeline asked for
  std::vector<int> closing_bucket_;
  std::unique_ptr<net::Group> group_;
  std::vector<std::unique_ptr<WorkerChannel>> channels_;
  // Per server that served, the bytes it sent in each iteration.
  std::vector<std::vector<uint64_t>> server_sent_;
  // Per iteration, each collective's latest arrival and departure over its
  // participants, by (part or bucket, step).
  struct StepSpan {
    double last_entry = -std::numeric_limits<double>::infinity();
    double last_exit = -std::numeric_limits<double>::infinity();
  };
  std::vector<std::map<std::pair<size_t, size_t>, StepSpan>> step_spans_;
  int plan_index_ = 0;
  std::map<const StepPlan*, std::unique_ptr<net::Group>> step_groups_;
  std::string tag_;
  int message_token_ = 0;
};

} // namespace

std::vector<Bucket> make_buckets(const std::vector<uint64_t>& layer_bytes, uint64_t bucket_bytes,
                                 uint64_t first_bucket_bytes) {
  std::vector<Bucket> buckets;
  Bucket current;
  bool open = false;
  for (int layer = static_cast<int>(layer_bytes.size()) - 1; layer >= 0; --layer) {
    // A bucket spans the layers whose gradients it holds: it is ready when
    // the backward pass has reached the first of them, not a parameter-free
    // layer before it (a first pooling's backward held the last bucket back).
    if (layer_bytes[static_cast<size_t>(layer)] == 0)
      continue;
    if (!open) {
      current = Bucket{layer, layer, 0};
      open = true;
    }
    current.first_layer = layer;
    current.bytes += layer_bytes[static_cast<size_t>(layer)];
    const uint64_t limit =
        buckets.empty() && first_bucket_bytes > 0 ? first_bucket_bytes : bucket_bytes;
    if (current.bytes >= limit) {
      buckets.push_back(current);
      open = false;
    }
  }
  if (open)
    buckets.push_back(current);
  return buckets;
}

AllreduceAlgorithm compressor_allreduce(AllreduceAlgorithm algorithm, int ranks_per_node) {
  if (algorithm == AllreduceAlgorithm::parameter_server ||
      (algorithm == AllreduceAlgorithm::hierarchical && ranks_per_node == 1))
    return AllreduceAlgorithm::ring;
  return algorithm;
}

double compressor_sum_s_per_byte(const std::string& name, const net::PlatformSpec& platform) {
  return name == "fp16" ? platform.float16_sum_s_per_byte() : 0;
}

compress::SummationOrder compressor_summation(AllreduceAlgorithm algorithm, int workers,
                                              int ranks_per_node) {
  switch (compressor_allreduce(algorithm, ranks_per_node)) {
  case AllreduceAlgorithm::recursive_doubling:
    return net::recursive_doubling_summation(workers);
  case AllreduceAlgorithm::double_binary_tree:
    return net::double_binary_tree_summation(workers, ranks_per_node);
  case AllreduceAlgorithm::hierarchical:
    return net::hierarchical_summation(workers, ranks_per_node);
  case AllreduceAlgorithm::ring:
  case AllreduceAlgorithm::parameter_server:
    break;
  }
  return compress::SummationOrder::in_rank_order(workers);
}

std::vector<Bucket> plan_buckets(const IterationPlan& plan) {
  return make_buckets(plan.layer_bytes, plan.bucket_bytes, plan.first_bucket_bytes);
}

std::string too_long_message(const std::string& what, double seconds, const std::string& check) {
  char took[64];
  std::snprintf(took, sizeof took, "%.3g s", seconds);
  return what + " takes " + took + " of simulated time, more than 1e9 s (about 30 years): " + check;
}

IterationTooLong::IterationTooLong(double seconds)
    : std::invalid_argument(too_long_message("an iteration", seconds)), seconds_(seconds) {}

InputError too_long_input_error(const IterationTooLong& error, const net::PlatformSpec& platform,
                                const std::string& file, const std::string& path) {
  if (platform.topology != net::Topology::simgrid_xml)
    return InputError(file, path, error.what());
  return InputError(
      file, path + "/xml",
      too_long_message("an iteration", error.seconds(),
                       "check the link bandwidths and latencies in " + platform.xml_file));
}

namespace {

bool runs_push_pull(const IterationPlan& plan) {
  return plan.compressed.empty() && plan.algorithm == AllreduceAlgorithm::parameter_server;
}

// The pairs of workers (from, to) the plans send on besides the whole
// group's collectives: point-to-point messages, and the steps over part of
// the workers, whose collectives pair the members whole_group_pairs pairs in
// a group of their size.
std::vector<std::pair<int, int>> pairs_sent_on(const std::vector<IterationPlan>& plans,
                                               size_t workers) {
  std::set<std::pair<int, int>> pairs;
  std::set<std::vector<int>> groups;
  for (const IterationPlan& plan : plans)
    for (const CompressedIteration& iteration : plan.compressed)
      for (const CompressionPart& part : iteration.parts)
        for (const StepPlan& step : part.steps) {
          // Both ways: SimGrid's cross-traffic looks up the route back.
          for (const StepPlan::Message& message : step.messages) {
            pairs.emplace(message.src, message.dst);
            pairs.emplace(message.dst, message.src);
          }
          const std::vector<int>& members = step.participants;
          if (step.kind == StepPlan::Kind::point_to_point || members.size() >= workers ||
              !groups.insert(members).second)
            continue;
          for (const auto& [a, b] : net::whole_group_pairs(static_cast<int>(members.size())))
            pairs.emplace(members[static_cast<size_t>(a)], members[static_cast<size_t>(b)]);
        }
  return {pairs.begin(), pairs.end()};
}

// The most actors a worker's host runs at once: its trainer and its
// communicator, a compressed run's device, and while a tree allreduce runs
// (the dense buckets', or a compressor's step) its four streams.
int actors_per_worker(const std::vector<IterationPlan>& plans) {
  bool compressed = false;
  bool tree = false;
  for (const IterationPlan& plan : plans) {
    tree = tree || plan.algorithm == AllreduceAlgorithm::double_binary_tree;
    for (const CompressedIteration& iteration : plan.compressed)
      for (const CompressionPart& part : iteration.parts) {
        compressed = true;
        tree = tree || std::any_of(part.steps.begin(), part.steps.end(), [](const StepPlan& step) {
                 return step.kind == StepPlan::Kind::allreduce_tree;
               });
      }
  }
  return 2 + (compressed ? 1 : 0) + (tree ? 4 : 0);
}

} // namespace

net::SharingSolver choose_solver(const net::PlatformSpec& platform,
                                 const std::vector<IterationPlan>& plans) {
  if (platform.network.solver != net::SharingSolver::automatic)
    return platform.network.solver;
  if (platform.servers > platform.worker_count() &&
      std::any_of(plans.begin(), plans.end(), runs_push_pull))
    return net::SharingSolver::full;
  return net::SharingSolver::lazy;
}

std::vector<RunResult> simulate(const net::PlatformSpec& platform_spec,
                                const std::vector<IterationPlan>& plans,
                                const ProgressCallback& progress,
                                std::vector<TimelineEvent>* timeline) {
  // SimGrid aborts on a message between hosts without a route; the file's
  // own check, past 64 workers, knows only the whole group's pairs.
  if (platform_spec.topology == net::Topology::simgrid_xml)
    net::check_xml_platform(
        platform_spec, pairs_sent_on(plans, static_cast<size_t>(platform_spec.worker_count())));
  net::PlatformSpec solved = platform_spec;
  solved.network.solver = choose_solver(platform_spec, plans);
  net::Simulation simulation(solved, actors_per_worker(plans));
  const net::Platform& platform = simulation.platform();

  std::vector<RunResult> results(plans.size());
  size_t finished = 0;
  // A driver actor runs the plans one after the other.
  sg4::Actor::create("driver", platform.workers.front(), [&] {
    for (size_t p = 0; p < plans.size(); ++p) {
      PlanRun run(plans[p], platform, static_cast<int>(p), progress, timeline);
      double start = sg4::Engine::get_clock();
      for (const sg4::ActorPtr& actor : run.start())
        actor->join();
      results[p] = run.result(start);
      for (const sg4::Host* host : platform.workers)
        results[p].worker_hosts.push_back(host->get_name());
      ++finished;
    }
  });
  // On a deadlock SimGrid's run returns with actors still blocked, and the
  // plan they were in has no results. The input checks should make one
  // impossible: it is a bug, not bad input.
  simulation.run();
  if (finished != plans.size())
    throw std::runtime_error("the simulation deadlocked in plan " + std::to_string(finished + 1) +
                             " of " + std::to_string(plans.size()) +
                             ": some actors wait for messages that are never sent");
  for (size_t p = 0; p < plans.size(); ++p)
    if (results[p].iterations.size() != static_cast<size_t>(plans[p].iterations))
      throw std::runtime_error("plan " + std::to_string(p) + " recorded " +
                               std::to_string(results[p].iterations.size()) + " iterations of " +
                               std::to_string(plans[p].iterations));
  for (const RunResult& result : results)
    for (const IterationRecord& record : result.iterations)
      if (!(record.iteration_s <= kLongestSeconds))
        throw IterationTooLong(record.iteration_s);
  return results;
}

} // namespace gcsim::training
