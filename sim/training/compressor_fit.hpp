#pragma once
// What a compressor needs of a scenario before it runs: checked by gcsim run
// before the first gradient is made, and by gcsim sweep for every point
// before the first point starts, so that neither fails hours in.

#include "sim/scenario/scenario.hpp"
#include "sim/training/iteration_model.hpp"

namespace gcsim::compress {
class Compressor;
} // namespace gcsim::compress

namespace gcsim::training {

/// Whether the scenario's compressor runs once per bucket, overlapping the
/// backward pass, or once on the whole model (training.compression_scope).
bool runs_per_bucket(const Scenario& scenario, const compress::Compressor& compressor);

/// Refuses, as an InputError at the scenario's field, a compressor that
/// cannot run on the scenario: more parameters at once than its 4-byte
/// indices reach, or a sketch larger than `memory_share` of the machine's
/// memory holds. `dense_plan` is the scenario's (its buckets).
void check_compressor_fits(const Scenario& scenario, const compress::Compressor& compressor,
                           const IterationPlan& dense_plan, double memory_share);

} // namespace gcsim::training
