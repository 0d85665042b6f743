// schedule_of: a compressor's iteration as the iteration model's part. Each
// worker keeps its own kernels, in its order, each before the step the
// compressor said, priced by the device profile at its own sizes.

#include "compressors/compressor.hpp"
#include "sim/cost/device_profile.hpp"
#include "sim/training/compression.hpp"

#include <string>

#include <doctest/doctest.h>

using namespace gcsim;

TEST_CASE("schedule_of keeps each worker's kernels and where they run") {
  const cost::DeviceProfile profile =
      cost::DeviceProfile::load(std::string(GCSIM_SOURCE_DIR) + "/platforms/devices/v100.json");
  // A leader's iteration: worker 0 selects, broadcasts its indices, then
  // every worker gathers at them; worker 1 only gathers, after the broadcast.
  compress::IterationResult result;
  compress::CommStep broadcast;
  broadcast.kind = compress::CommKind::broadcast;
  broadcast.label = "broadcast indices";
  broadcast.root = 0;
  broadcast.participants = {0, 1};
  broadcast.bytes = {4000, 0};
  result.steps.push_back(broadcast);
  compress::KernelRun select;
  select.kind = compress::KernelKind::topk_select;
  select.n = 100000;
  select.k = 1000;
  select.before_step = 0;
  compress::KernelRun gather;
  gather.kind = compress::KernelKind::gather;
  gather.n = 1000;
  gather.before_step = 1; // after the broadcast
  result.kernels = {{select, gather}, {gather}};

  const training::CompressionPart part = training::schedule_of(result, 2, profile);
  REQUIRE(part.kernels.size() == 2);
  REQUIRE(part.kernels[0].size() == 2);
  REQUIRE(part.kernels[1].size() == 1);
  CHECK(part.kernels[0][0].name == "topk_select");
  CHECK(part.kernels[0][0].before_step == 0);
  CHECK(part.kernels[0][0].n == 100000);
  CHECK(part.kernels[0][0].k == 1000);
  CHECK(part.kernels[0][0].seconds ==
        profile.kernel_seconds("topk_select", cost::KernelShape{100000, 1000, 0, 0}));
  CHECK(part.kernels[0][1].name == "gather");
  CHECK(part.kernels[0][1].before_step == 1);
  // Worker 1's own kernel, not the leader's selection.
  CHECK(part.kernels[1][0].name == "gather");
  CHECK(part.kernels[1][0].before_step == 1);
  CHECK(part.kernels[1][0].n == 1000);
  CHECK(part.kernels[1][0].seconds ==
        profile.kernel_seconds("gather", cost::KernelShape{1000, 0, 0, 0}));
  REQUIRE(part.steps.size() == 1);
  CHECK(part.steps[0].kind == training::StepPlan::Kind::broadcast);
  CHECK(part.steps[0].root == 0);
  CHECK(part.steps[0].label == "broadcast indices");
}

TEST_CASE("every compressor kernel is the cost model's kernel of the same name") {
  // compressors/README.md promises to_string(kind) names the cost model's
  // kernel; schedule_of maps the two lists by a switch.
  const cost::DeviceProfile profile =
      cost::DeviceProfile::load(std::string(GCSIM_SOURCE_DIR) + "/platforms/devices/v100.json");
  compress::IterationResult result;
  result.kernels.resize(1);
  for (int kind = 0; kind <= static_cast<int>(compress::KernelKind::fp16_cast); ++kind) {
    compress::KernelRun run;
    run.kind = static_cast<compress::KernelKind>(kind);
    run.n = 4096;
    run.k = 64;
    run.rows = 5;
    run.cols = 1024;
    result.kernels[0].push_back(run);
  }
  const training::CompressionPart part = training::schedule_of(result, 1, profile);
  REQUIRE(part.kernels[0].size() == result.kernels[0].size());
  for (size_t i = 0; i < part.kernels[0].size(); ++i) {
    const char* name = compress::to_string(result.kernels[0][i].kind);
    CAPTURE(name);
    CHECK(part.kernels[0][i].name == name);
    CHECK(part.kernels[0][i].seconds ==
          profile.kernel_seconds(name, cost::KernelShape{4096, 64, 5, 1024}));
  }
}
