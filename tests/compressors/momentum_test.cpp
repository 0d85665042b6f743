// Local momentum (DGC's and Sketched-SGD's): what is sent is the paper's
// u = m*u + g, and an infinite gradient stays infinite.
#include "compressors/registry.hpp"
#include "test_util.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

namespace gc = gcsim::compress;

namespace {

// One worker's two iterations of compressor `name` with `params` on synthetic gradients.
struct TwoIterations {
  gc::test::SyntheticWorkers first, second;
  gc::IterationResult sent0, sent1;
};

TwoIterations two_iterations(const std::string& name, const nlohmann::json& params,
                             const std::vector<std::size_t>& layers, std::uint64_t seed) {
  auto compressor = gc::make_compressor(name, params);
  std::vector<gc::ErrorFeedback> memory(1);
  TwoIterations run{gc::test::SyntheticWorkers(layers, 1, seed, 0),
                    gc::test::SyntheticWorkers(layers, 1, seed, 1),
                    {},
                    {}};
  run.sent0 =
      compressor->run_iteration(run.first.views(), nullptr, gc::IterationContext{0, 1, 5}, memory);
  run.sent1 =
      compressor->run_iteration(run.second.views(), nullptr, gc::IterationContext{1, 1, 5}, memory);
  return run;
}

} // namespace

TEST_CASE("dgc and sketched_sgd without error feedback send u = m*u + g") {
  // One worker, so the update is the worker's own selection. Where an index
  // goes unsent at iteration 0 and is sent at iteration 1, the value sent
  // must be float(float(0.9 * g0) + g1), bit for bit: not g1 (no momentum),
  // nor a momentum applied twice. Where it was sent at iteration 0 too, its
  // momentum was cleared then (momentum factor masking): g1 exactly.
  for (const auto& [name, params] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"dgc",
            {{"density", 0.05}, {"momentum", 0.9}, {"error_feedback", false}, {"resample", false}}},
           {"sketched_sgd", {{"density", 0.05}, {"momentum", 0.9}, {"error_feedback", false}}}}) {
    CAPTURE(name);
    const auto [first, second, sent0, sent1] = two_iterations(name, params, {4000}, 5);
    REQUIRE(sent0.update.size() == 4000);
    REQUIRE(sent1.update.size() == 4000);
    int carried_over = 0;
    int exact = 0;
    int masked = 0;
    int masked_exact = 0;
    for (std::size_t j = 0; j < 4000; ++j) {
      if (sent1.update[j] == 0.0f)
        continue;
      const float g1 = second.grads[0][j];
      if (sent0.update[j] != 0.0f) {
        ++masked;
        masked_exact += sent1.update[j] == g1 ? 1 : 0;
        continue;
      }
      const float carried = 0.9f * first.grads[0][j];
      ++carried_over;
      exact += sent1.update[j] == carried + g1 ? 1 : 0;
    }
    CHECK(carried_over > 50);
    CHECK(exact == carried_over);
    CHECK(masked > 5);
    CHECK(masked_exact == masked);
  }
}

TEST_CASE("dgc's momentum keeps an infinite gradient infinite") {
  // inf is a value a mixed-precision step can produce; only NaN is refused.
  const std::size_t P = 2;
  const std::vector<std::size_t> layers{3000};
  auto dgc = gc::make_compressor("dgc", {{"density", 0.01}, {"momentum", 0.9}});
  std::vector<gc::ErrorFeedback> memory(P);
  gc::test::SyntheticWorkers workers(layers, P, 9, 0);
  workers.grads[1][1234] = std::numeric_limits<float>::infinity();
  const gc::IterationResult result =
      dgc->run_iteration(workers.views(), nullptr, gc::IterationContext{0, P, 5}, memory);
  REQUIRE(result.update.size() == 3000);
  CHECK(std::isinf(result.update[1234]));
  CHECK(result.update[1234] > 0);
}

TEST_CASE("dgc keeps momentum on the layers it sends whole") {
  // Layers below min_layer_size are allreduced whole every iteration; the
  // reference applies momentum to their averaged gradient and never masks
  // it. One worker: the small layer's update at iteration 1 must be
  // float(0.9 g0) + g1, not g1 (momentum cleared because it was sent).
  const auto [first, second, sent0, sent1] = two_iterations(
      "dgc", {{"density", 0.05}, {"momentum", 0.9}, {"min_layer_size", 10}, {"resample", false}},
      {4, 400}, 7);
  REQUIRE(sent1.update.size() == 404);
  for (std::size_t j = 0; j < 4; ++j) {
    CHECK(sent0.update[j] == first.grads[0][j]);
    CHECK(sent1.update[j] == 0.9f * first.grads[0][j] + second.grads[0][j]);
  }
}
