#include "sim/validate/child_simulation.hpp"

#include "sim/input/atomic_write.hpp"
#include "sim/network/forked.hpp"
#include "sim/training/iteration_model.hpp"

#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>

namespace gcsim::validate {
namespace {

// The child's exit status for training::IterationTooLong: the pipe then
// holds the iteration's length, and the parent throws it again.
constexpr int kIterationTooLong = 5;
// The child's exit status for any other exception: the pipe then holds its
// message, and the parent throws it again.
constexpr int kSimulationFailed = 4;

} // namespace

std::vector<double> run_in_child(const std::function<std::vector<double>()>& work) {
  const net::ForkedResult child = net::run_forked(
      [&](int fd) {
        try {
          std::vector<double> values;
          int status = 0;
          try {
            values = work();
          } catch (const training::IterationTooLong& error) {
            values = {error.seconds()};
            status = kIterationTooLong;
          }
          return write_all(fd, values.data(), values.size() * sizeof(double)) ? status : 3;
        } catch (const std::exception& error) {
          const std::string message = error.what();
          write_all(fd, message.data(), message.size());
          return kSimulationFailed;
        }
      },
      net::ChildPipe::argument, std::numeric_limits<size_t>::max());
  const std::string& bytes = child.output;
  if (child.exited(kSimulationFailed))
    throw std::runtime_error("the simulation failed: " + bytes);
  const bool too_long = child.exited(kIterationTooLong);
  if ((!child.exited(0) && !too_long) || bytes.size() % sizeof(double) != 0)
    throw std::runtime_error("the simulation process failed");
  std::vector<double> values(bytes.size() / sizeof(double));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  if (too_long) {
    if (values.size() != 1)
      throw std::runtime_error("the simulation process failed");
    throw training::IterationTooLong(values.front());
  }
  return values;
}

} // namespace gcsim::validate
