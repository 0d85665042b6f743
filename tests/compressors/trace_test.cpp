// Properties the papers claim, checked on real captured gradients (or, when the
// build has no trace, on synthetic data; the test names say which).
#include "compressors/registry.hpp"
#include "trace_util.hpp"

#include <algorithm>
#include <numeric>

#include <doctest/doctest.h>

namespace gc = gcsim::compress;

namespace {

double density_after_aggregation(const std::string& name, const nlohmann::json& params,
                                 std::size_t P, std::size_t iterations) {
  const auto& data = gc::test::trace_data();
  auto compressor = gc::make_compressor(name, params);
  std::vector<gc::ErrorFeedback> memories(P);
  double sum = 0.0;
  for (std::size_t t = 0; t < iterations; ++t) {
    const std::size_t i = t % data.grads.size();
    const gc::WeightsView wv{data.weights[i].data(), &data.layout};
    const auto r =
        compressor->run_iteration(data.views(i, P), &wv, gc::IterationContext{t, P, 3}, memories);
    sum += r.density();
  }
  return sum / static_cast<double>(iterations);
}

} // namespace

TEST_CASE("DEFT: density after aggregation is exactly the target for every P; local top-k's "
          "grows with P " GCSIM_TRACE_LABEL) {
  const auto& data = gc::test::trace_data();
  MESSAGE("gradients from: " << data.source);
  const double density = 0.01;
  const std::size_t d = data.layout.total();
  const double target = static_cast<double>(gc::k_for_density(d, density)) / static_cast<double>(d);
  std::vector<double> topk_density;
  for (std::size_t P = 1; P <= data.workers(); P *= 2) {
    CAPTURE(P);
    // With the leader's k_i (sent with the assignment) the union is exactly k.
    CHECK(density_after_aggregation("deft", {{"density", density}, {"k_source", "leader"}}, P, 4) ==
          doctest::Approx(target).epsilon(1e-12).scale(0));
    // With each owner's own k_i (the reference code) the total varies a little
    // around k but does not grow with P.
    const double local = density_after_aggregation("deft", {{"density", density}}, P, 4);
    CHECK(local <= target * 1.25);
    CHECK(local >= target * 0.75);
    topk_density.push_back(density_after_aggregation("topk", {{"density", density}}, P, 4));
  }
  CHECK(topk_density.front() == doctest::Approx(target).scale(0));
  for (std::size_t i = 1; i < topk_density.size(); ++i) {
    CHECK(topk_density[i] > topk_density[i - 1]);
  }
  CHECK(topk_density.back() > 2.0 * target);
}

TEST_CASE("IWP: the kept fraction tracks the target density within 10% after "
          "warm-up " GCSIM_TRACE_LABEL) {
  const auto& data = gc::test::trace_data();
  const std::size_t P = std::min<std::size_t>(8, data.workers());
  for (const double density : {0.01, 0.05}) {
    CAPTURE(density);
    auto iwp = gc::make_compressor("iwp", {{"density", density}, {"warmup_iterations", 5}});
    std::vector<gc::ErrorFeedback> memories(P);
    std::vector<double> kept;
    for (std::uint64_t t = 0; t < 45; ++t) {
      const std::size_t i = t % data.grads.size();
      const gc::WeightsView wv{data.weights[i].data(), &data.layout};
      const auto r =
          iwp->run_iteration(data.views(i, P), &wv, gc::IterationContext{t, P, 5}, memories);
      if (t >= 15) { // warm-up plus the level's settling
        kept.push_back(r.density());
      }
    }
    const double mean =
        std::accumulate(kept.begin(), kept.end(), 0.0) / static_cast<double>(kept.size());
    CHECK(mean == doctest::Approx(density).epsilon(0.10).scale(0));
  }
}
