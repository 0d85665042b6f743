#include "sim/training/compressor_fit.hpp"

#include "compressors/compressor.hpp"
#include "sim/input/input_error.hpp"
#include "sim/training/gradient_feed.hpp"
#include "sim/training/state_spill.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace gcsim::training {

bool runs_per_bucket(const Scenario& scenario, const compress::Compressor& compressor) {
  // Scenario::make_compressor refused "bucket" for one that cannot.
  const std::string& scope = scenario.training.compression_scope;
  return scope == "bucket" || (scope == "auto" && compressor.can_run_per_bucket());
}

void check_compressor_fits(const Scenario& scenario, const compress::Compressor& compressor,
                           const IterationPlan& dense_plan, double memory_share) {
  const auto d = static_cast<size_t>(scenario.workload.parameters());
  // A layer spec without "tensors" gives no shapes (a trace's manifest and a
  // spec's tensors do): PowerSGD failed only as its first iteration ran, in
  // a sweep after the points before it.
  if (!scenario.trace_folder) {
    try {
      compressor.check_layout(make_synthetic_feed(scenario.workload, 1, scenario.seed)->layout());
    } catch (const std::invalid_argument& error) {
      // The cause may be the workload's file as well as the compressor.
      throw InputError(scenario.source_of("/compressor"), "/compressor",
                       std::string(error.what()) + " (the workload: " + scenario.workload.source +
                           ")");
    }
  }
  // Indices go on the wire as 4 bytes, as the papers send them; a larger
  // gradient wrapped them silently in some compressors and stopped others
  // with an internal error.
  const bool per_bucket = runs_per_bucket(scenario, compressor);
  uint64_t largest = d;
  if (per_bucket) {
    largest = 0;
    for (const Bucket& bucket : plan_buckets(dense_plan))
      largest = std::max<uint64_t>(largest, bucket.bytes / 4);
  }
  if (largest > std::numeric_limits<compress::Index>::max())
    throw InputError(
        scenario.source_of("/workload"), "/workload",
        compressor.name() + " compresses " +
            (per_bucket ? std::to_string(largest) + " parameters at once in its largest bucket"
                        : "the whole model at once, " + std::to_string(largest) + " parameters") +
            ", more than a 32-bit index reaches (4294967295)" +
            (per_bucket ? ": a smaller training.bucket_size splits a bucket of several layers"
                        : ""));
  // A table that cannot fit would swap the machine to a halt: refuse it
  // before it is allocated (a typo such as columns = 1e9).
  if (const size_t scratch = compressor.scratch_floats(d);
      scratch > 0 && !state_fits(static_cast<double>(scratch), d, memory_limits(memory_share))) {
    char size[64];
    std::snprintf(size, sizeof size, "%.3g GiB", static_cast<double>(scratch) * 4.0 / (1 << 30));
    char part[96] = "";
    if (memory_share < 1) // beside other runs (gcsim sweep --jobs): 1 alone gives all of it
      std::snprintf(part, sizeof part, "its share (--memory-share %.6g) of ", memory_share);
    throw InputError(scenario.source_of("/compressor"), "/compressor",
                     compressor.name() + " needs " + std::to_string(scratch) + " floats at once (" +
                         size + ", its sketch's rows x columns), more than " + part +
                         "this machine's memory allows; choose fewer columns or rows");
  }
}

} // namespace gcsim::training
