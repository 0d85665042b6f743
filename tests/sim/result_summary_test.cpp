// result.json's summary: the mean of the iterations after the warm-up, and
// the speed-up the ratio of the mean times (not the mean of each iteration's
// ratio). Iterations that differ make both visible; the CLI tests' runs,
// whose dense iterations are alike, could not tell.

#include "sim/cost/device_profile.hpp"
#include "sim/output/result.hpp"
#include "sim/scenario/overrides.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/training/iteration_model.hpp"

#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

namespace {

gcsim::training::RunResult run_of(const std::vector<double>& times) {
  gcsim::training::RunResult run;
  for (double seconds : times) {
    gcsim::training::IterationRecord record;
    record.iteration_s = seconds;
    record.compute_s = seconds / 2;
    record.communication_s = seconds / 2;
    record.bytes_sent_per_worker = 100;
    record.bytes_sent_max_worker = 100;
    run.iterations.push_back(record);
  }
  return run;
}

} // namespace

TEST_CASE("the summary leaves the warm-up out, and the speed-up is a ratio of mean times") {
  const std::string root = GCSIM_SOURCE_DIR;
  const gcsim::Scenario scenario =
      gcsim::load_scenario(root + "/workloads/scenarios/quickstart.json",
                           {gcsim::parse_override("training.iterations=3"),
                            gcsim::parse_override("training.warmup_iterations=1")},
                           std::nullopt);
  const gcsim::cost::DeviceProfile profile =
      gcsim::cost::DeviceProfile::load(root + "/platforms/devices/v100.json");
  // A slow first iteration (the warm-up), then 1 s and 3 s; dense 2 s each.
  const gcsim::training::RunResult compressed = run_of({10, 1, 3});
  const gcsim::training::RunResult dense = run_of({2, 2, 2});
  gcsim::output::CompressionExtras extras;
  extras.dense_baseline = &dense;
  const nlohmann::json result = gcsim::output::make_result(scenario, compressed, profile, extras);
  const nlohmann::json& summary = result.at("summary");
  CHECK(summary.at("iteration_time_s").get<double>() ==
        doctest::Approx(2.0).epsilon(1e-12).scale(0));
  CHECK(summary.at("compute_s").get<double>() == doctest::Approx(1.0).epsilon(1e-12).scale(0));
  // 2 s over 2 s; the mean of 2/1 and 2/3 would be 1.33.
  CHECK(summary.at("speedup_vs_dense").get<double>() ==
        doctest::Approx(1.0).epsilon(1e-12).scale(0));
  CHECK(result.at("iterations").at(0).value("warmup", false));
  CHECK_FALSE(result.at("iterations").at(1).value("warmup", false));
}
