// A simulation on a platform of its own: SimGrid allows one engine per
// process, so each runs in a forked child and hands its figures back.
#pragma once

#include "sim/input/atomic_write.hpp"
#include "sim/network/forked.hpp"
#include "sim/network/platform.hpp"

#include <cstring>
#include <functional>
#include <vector>

#include <doctest/doctest.h>

namespace gcsim::testing {

/// Builds `spec` in a child process, runs `simulate` there and returns the
/// figures it returned.
inline std::vector<double>
simulate_in_child(const net::PlatformSpec& spec,
                  const std::function<std::vector<double>(net::Simulation&)>& simulate) {
  const net::ForkedResult child = net::run_forked(
      [&](int fd) {
        net::Simulation simulation(spec);
        const std::vector<double> figures = simulate(simulation);
        return write_all(fd, figures.data(), figures.size() * sizeof(double)) ? 0 : 1;
      },
      net::ChildPipe::argument, 1 << 20);
  REQUIRE_MESSAGE(child.exited(0), "the child simulation failed: " << child.output);
  std::vector<double> figures(child.output.size() / sizeof(double));
  std::memcpy(figures.data(), child.output.data(), figures.size() * sizeof(double));
  return figures;
}

} // namespace gcsim::testing
