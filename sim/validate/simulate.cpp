#include "sim/validate/simulate.hpp"

#include "sim/network/collectives.hpp"
#include "sim/training/iteration_model.hpp"

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace gcsim::validate {
namespace {

/// Runs `work` in a child process and returns the numbers it computed.
std::vector<double> run_in_child(const std::function<std::vector<double>()>& work) {
  int fds[2];
  if (pipe(fds) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr); // the child must not flush the parent's buffers again
  pid_t child = fork();
  if (child < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    close(fds[0]);
    int status = 0;
    try {
      std::vector<double> values = work();
      const auto* data = reinterpret_cast<const char*>(values.data());
      size_t left = values.size() * sizeof(double);
      while (left > 0) {
        ssize_t written = write(fds[1], data, left);
        if (written <= 0) {
          status = 3;
          break;
        }
        data += written;
        left -= static_cast<size_t>(written);
      }
    } catch (const std::exception& error) {
      std::fprintf(stderr, "gcsim validate: simulation failed: %s\n", error.what());
      status = 4;
    }
    close(fds[1]);
    _exit(status); // no atexit handlers or static destructors of the parent's state
  }
  close(fds[1]);
  std::vector<double> values;
  double buffer[256];
  std::string bytes;
  for (;;) {
    ssize_t got = read(fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break;
    bytes.append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(got));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || bytes.size() % sizeof(double) != 0)
    throw std::runtime_error("the simulation process failed");
  values.resize(bytes.size() / sizeof(double));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

void run_point(net::Group& group, int rank, const CollectivePoint& point) {
  switch (point.collective) {
  case Collective::allreduce:
    net::ring_allreduce(group, rank, point.bytes);
    return;
  case Collective::allgather:
    net::ring_allgather(group, rank, point.bytes / static_cast<uint64_t>(point.ranks));
    return;
  case Collective::broadcast:
    net::eager_binomial_broadcast(group, rank, 0, point.bytes);
    return;
  }
}

std::vector<double> collectives_in_engine(const net::PlatformSpec& spec,
                                          const std::vector<CollectivePoint>& points) {
  net::Simulation simulation(spec);
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
  // One actor per worker runs every point in turn; barriers keep points apart.
  sg4::BarrierPtr barrier = sg4::Barrier::create(static_cast<unsigned>(workers));
  for (int w = 0; w < workers; ++w) {
    sg4::Actor::create("rank-" + std::to_string(w), platform.workers[static_cast<size_t>(w)],
                       [&, w] {
                         for (size_t p = 0; p < points.size(); ++p) {
                           barrier->wait();
                           double start = sg4::Engine::get_clock();
                           if (w < points[p].ranks)
                             run_point(*groups[p], w, points[p]);
                           barrier->wait();
                           if (w == 0)
                             seconds[p] = sg4::Engine::get_clock() - start;
                         }
                       });
  }
  simulation.run();
  return seconds;
}

} // namespace

std::vector<double> simulate_collectives(const net::PlatformSpec& platform,
                                         const std::vector<CollectivePoint>& points) {
  if (points.empty())
    return {};
  return run_in_child([&] { return collectives_in_engine(platform, points); });
}

std::vector<SimulatedIteration> simulate_dense_training(const net::PlatformSpec& platform,
                                                        const std::vector<TrainingRun>& runs) {
  if (runs.empty())
    return {};
  std::vector<training::IterationPlan> plans;
  for (const TrainingRun& run : runs) {
    if (run.compressor != "dense")
      throw std::invalid_argument("simulate_dense_training: \"" + run.name + "\" is not dense");
    const IterationTimes mean = run.steady_mean();
    training::IterationPlan plan;
    plan.layer_bytes = run.layer_bytes;
    plan.layers.resize(run.layer_bytes.size());
    // The script times forward and backward as a whole; where inside them the
    // time falls does not matter when communication starts after backward.
    plan.layers.back().forward_s = mean.forward_s;
    plan.layers.back().backward_s = mean.backward_s;
    plan.optimizer_s = mean.optimizer_s;
    plan.bucket_bytes = run.gradient_bytes(); // one flat allreduce
    plan.overlap = run.overlap;
    plan.algorithm = AllreduceAlgorithm::ring; // gloo's allreduce
    plan.iterations = 3;                       // steady state is reached at once
    plans.push_back(plan);
  }
  std::vector<double> flat = run_in_child([&] {
    std::vector<double> values;
    for (const training::RunResult& result : training::simulate(platform, plans)) {
      SimulatedIteration mean;
      const double count = static_cast<double>(result.iterations.size());
      for (const training::IterationRecord& record : result.iterations) {
        mean.iteration_s += record.iteration_s / count;
        mean.compute_s += record.compute_s / count;
        mean.communication_s += record.communication_s / count;
      }
      values.insert(values.end(), {mean.iteration_s, mean.compute_s, mean.communication_s});
    }
    return values;
  });
  std::vector<SimulatedIteration> simulated;
  for (size_t i = 0; i + 2 < flat.size(); i += 3)
    simulated.push_back({flat[i], flat[i + 1], flat[i + 2]});
  return simulated;
}

} // namespace gcsim::validate
