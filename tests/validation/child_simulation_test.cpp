// gcsim validate runs each simulation in a child process: what the child
// computed comes back, and what it threw is thrown again in the parent,
// its message kept. No command-line input makes a simulation throw there,
// so these paths are tested here, on the function itself.
#include "sim/training/iteration_model.hpp"
#include "sim/validate/child_simulation.hpp"

#include <csignal>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

using gcsim::validate::run_in_child;

TEST_CASE("a child simulation's numbers come back as it computed them") {
  const std::vector<double> values = run_in_child([] {
    return std::vector<double>{1.5, -2.0, 3e-9};
  });
  CHECK(values == std::vector<double>{1.5, -2.0, 3e-9});
  CHECK(run_in_child([] { return std::vector<double>{}; }).empty());
}

TEST_CASE("a child simulation's exception is thrown again in the parent, its message kept") {
  std::string said;
  try {
    run_in_child(
        []() -> std::vector<double> { throw std::invalid_argument("link 3 has no route"); });
  } catch (const std::runtime_error& error) {
    said = error.what();
  }
  CHECK(said == "the simulation failed: link 3 has no route");
}

TEST_CASE("a child simulation's iteration too long is thrown again as one, its length kept") {
  double seconds = 0;
  try {
    run_in_child([]() -> std::vector<double> { throw gcsim::training::IterationTooLong(2e9); });
  } catch (const gcsim::training::IterationTooLong& error) {
    seconds = error.seconds();
  }
  CHECK(seconds == 2e9);
}

TEST_CASE("a child simulation that dies says so") {
  std::string said;
  try {
    run_in_child([]() -> std::vector<double> {
      std::raise(SIGABRT); // as SimGrid aborts on some platform mistakes
      return {};
    });
  } catch (const std::runtime_error& error) {
    said = error.what();
  }
  CHECK(said == "the simulation process failed");
}
