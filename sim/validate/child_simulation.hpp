#pragma once
// A simulation of `gcsim validate` run in a child process: SimGrid allows
// one engine per process, and each point or training run of a comparison
// needs its own.

#include <functional>
#include <vector>

namespace gcsim::validate {

/// Runs `work` in a child process and returns the numbers it computed.
/// Throws training::IterationTooLong when the child's simulation did, and
/// std::runtime_error "the simulation failed: <its message>" for any other
/// exception it threw, or "the simulation process failed" when the child
/// ended otherwise (a signal, SimGrid's abort).
std::vector<double> run_in_child(const std::function<std::vector<double>()>& work);

} // namespace gcsim::validate
