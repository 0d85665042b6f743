#include "sim/training/iteration_model.hpp"

#include "sim/network/collectives.hpp"

#include <algorithm>
#include <cassert>
#include <deque>
#include <memory>
#include <numeric>
#include <stdexcept>

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

namespace sg4 = simgrid::s4u;

namespace gcsim::training {
namespace {

bool engine_created = false;

// What a worker's trainer and its communication actor share.
struct WorkerChannel {
  std::deque<int> ready;               // buckets whose gradients are complete
  sg4::SemaphorePtr ready_count = sg4::Semaphore::create(0);
  sg4::SemaphorePtr done_count = sg4::Semaphore::create(0);
  double busy_s = 0;                   // collective time in the current iteration
  std::vector<double> iteration_end;   // simulated clock per iteration
  std::vector<double> iteration_start;
  std::vector<double> busy_per_iteration;
  std::vector<uint64_t> sent_per_iteration;
};

class PlanRun {
public:
  PlanRun(const IterationPlan& plan, const net::Platform& platform, int index)
      : plan_(plan), platform_(platform), buckets_(make_buckets(plan.layer_bytes, plan.bucket_bytes)) {
    std::vector<sg4::Host*> hosts = platform.workers;
    if (plan.algorithm == AllreduceAlgorithm::parameter_server)
      hosts.insert(hosts.end(), platform.servers.begin(), platform.servers.end());
    group_ = std::make_unique<net::Group>("plan" + std::to_string(index), hosts);
    for (size_t w = 0; w < platform.workers.size(); ++w)
      channels_.push_back(std::make_unique<WorkerChannel>());
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
      actors.push_back(sg4::Actor::create("trainer-" + std::to_string(w), host, [this, w] { train(w); }));
      actors.push_back(sg4::Actor::create("comm-" + std::to_string(w), host, [this, w] { communicate(w); }));
    }
    if (plan_.algorithm == AllreduceAlgorithm::parameter_server) {
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
      double start = 1e300;
      double sent_sum = 0;
      double sent_max = 0;
      for (const auto& channel : channels_) {
        end = std::max(end, channel->iteration_end[static_cast<size_t>(i)]);
        start = std::min(start, channel->iteration_start[static_cast<size_t>(i)]);
        auto sent = static_cast<double>(channel->sent_per_iteration[static_cast<size_t>(i)]);
        sent_sum += sent;
        sent_max = std::max(sent_max, sent);
      }
      record.start_s = start - plan_start;
      record.iteration_s = end - previous_end;
      record.compute_s = compute;
      record.communication_s = std::max(0.0, record.iteration_s - compute);
      record.communication_total_s = channels_.front()->busy_per_iteration[static_cast<size_t>(i)];
      record.bytes_sent_per_worker = sent_sum / static_cast<double>(channels_.size());
      record.bytes_sent_max_worker = sent_max;
      result.iterations.push_back(record);
      previous_end = end;
    }
    return result;
  }

  ProgressCallback progress;

private:
  double forward_seconds() const {
    return std::accumulate(plan_.layers.begin(), plan_.layers.end(), 0.0,
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

  void train(int worker) {
    WorkerChannel& channel = *channels_[static_cast<size_t>(worker)];
    const double forward = forward_seconds();
    for (int iteration = 0; iteration < plan_.iterations; ++iteration) {
      channel.iteration_start.push_back(sg4::Engine::get_clock());
      sg4::this_actor::sleep_for(forward);
      for (int layer = static_cast<int>(plan_.layers.size()) - 1; layer >= 0; --layer) {
        sg4::this_actor::sleep_for(plan_.layers[static_cast<size_t>(layer)].backward_s);
        int bucket = closing_bucket_[static_cast<size_t>(layer)];
        if (bucket >= 0 && plan_.overlap)
          mark_ready(channel, bucket);
      }
      if (!plan_.overlap)
        for (size_t bucket = 0; bucket < buckets_.size(); ++bucket)
          mark_ready(channel, static_cast<int>(bucket));
      for (size_t bucket = 0; bucket < buckets_.size(); ++bucket)
        channel.done_count->acquire();
      sg4::this_actor::sleep_for(plan_.optimizer_s);
      channel.iteration_end.push_back(sg4::Engine::get_clock());
      if (worker == 0 && progress)
        progress(iteration, sg4::Engine::get_clock());
    }
  }

  void communicate(int worker) {
    WorkerChannel& channel = *channels_[static_cast<size_t>(worker)];
    const int workers = static_cast<int>(platform_.workers.size());
    for (int iteration = 0; iteration < plan_.iterations; ++iteration) {
      uint64_t sent_before = group_->bytes_sent(worker);
      double busy = 0;
      for (size_t b = 0; b < buckets_.size(); ++b) {
        channel.ready_count->acquire();
        int bucket = channel.ready.front();
        channel.ready.pop_front();
        double begin = sg4::Engine::get_clock();
        uint64_t bytes = buckets_[static_cast<size_t>(bucket)].bytes;
        switch (plan_.algorithm) {
        case AllreduceAlgorithm::ring:
          net::ring_allreduce(*group_, worker, bytes);
          break;
        case AllreduceAlgorithm::recursive_doubling:
          net::recursive_doubling_allreduce(*group_, worker, bytes);
          break;
        case AllreduceAlgorithm::parameter_server:
          net::ps_worker_push_pull(*group_, worker, workers, bytes);
          break;
        }
        busy += sg4::Engine::get_clock() - begin;
        channel.done_count->release();
      }
      channel.busy_per_iteration.push_back(busy);
      channel.sent_per_iteration.push_back(group_->bytes_sent(worker) - sent_before);
    }
  }

  void serve(int rank) {
    const int workers = static_cast<int>(platform_.workers.size());
    for (int iteration = 0; iteration < plan_.iterations; ++iteration)
      for (const Bucket& bucket : buckets_)
        net::ps_server_push_pull(*group_, rank, workers, bucket.bytes);
  }

  const IterationPlan& plan_;
  const net::Platform& platform_;
  std::vector<Bucket> buckets_;
  std::vector<int> closing_bucket_;
  std::unique_ptr<net::Group> group_;
  std::vector<std::unique_ptr<WorkerChannel>> channels_;
};

} // namespace

std::vector<Bucket> make_buckets(const std::vector<uint64_t>& layer_bytes, uint64_t bucket_bytes) {
  std::vector<Bucket> buckets;
  Bucket current;
  bool open = false;
  for (int layer = static_cast<int>(layer_bytes.size()) - 1; layer >= 0; --layer) {
    if (!open) {
      current = Bucket{layer, layer, 0};
      open = true;
    }
    current.first_layer = layer;
    current.bytes += layer_bytes[static_cast<size_t>(layer)];
    if (current.bytes >= bucket_bytes) {
      buckets.push_back(current);
      open = false;
    }
  }
  if (open)
    buckets.push_back(current);
  return buckets;
}

std::vector<RunResult> simulate(const net::PlatformSpec& platform_spec,
                                const std::vector<IterationPlan>& plans,
                                const ProgressCallback& progress) {
  if (engine_created)
    throw std::logic_error("simulate() runs once per process: SimGrid has one engine");
  engine_created = true;
  int argc = 1;
  char name[] = "gcsim";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  // SimGrid's own chatter would drown the summary; gcsim reports its errors.
  xbt_log_control_set("root.thres:critical");
  net::configure_network_model(platform_spec.network);
  net::Platform platform = net::build_platform(engine, platform_spec);
  if (platform.workers.empty())
    throw std::invalid_argument("the platform has no workers");

  std::vector<RunResult> results(plans.size());
  // A driver actor runs the plans one after the other.
  sg4::Actor::create("driver", platform.workers.front(), [&] {
    for (size_t p = 0; p < plans.size(); ++p) {
      PlanRun run(plans[p], platform, static_cast<int>(p));
      run.progress = progress;
      double start = sg4::Engine::get_clock();
      for (const sg4::ActorPtr& actor : run.start())
        actor->join();
      results[p] = run.result(start);
    }
  });
  engine.run();
  return results;
}

} // namespace gcsim::training
