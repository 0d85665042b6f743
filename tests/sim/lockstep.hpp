// Timing collectives one after another in one simulation (SimGrid allows one
// engine per process).
#pragma once

#include "sim/network/platform.hpp"

#include <cstddef>
#include <functional>
#include <vector>

#include <simgrid/s4u.hpp>

namespace gcsim::testing {

/// Runs `cases` cases in order: an actor on each host calls `run(c, host
/// index)` for case c, all hosts meeting at a barrier before and after each
/// case. Returns each case's simulated seconds, barrier to barrier.
inline std::vector<double> time_in_lockstep(net::Simulation& simulation,
                                            const std::vector<simgrid::s4u::Host*>& hosts,
                                            size_t cases,
                                            const std::function<void(size_t, int)>& run) {
  namespace sg4 = simgrid::s4u;
  std::vector<double> seconds(cases, -1.0);
  sg4::BarrierPtr barrier = sg4::Barrier::create(static_cast<unsigned>(hosts.size()));
  for (size_t h = 0; h < hosts.size(); ++h)
    sg4::Actor::create("rank", hosts[h], [&, h] {
      for (size_t c = 0; c < cases; ++c) {
        barrier->wait();
        double start = sg4::Engine::get_clock();
        run(c, static_cast<int>(h));
        barrier->wait();
        if (h == 0)
          seconds[c] = sg4::Engine::get_clock() - start;
      }
    });
  simulation.run();
  return seconds;
}

} // namespace gcsim::testing
