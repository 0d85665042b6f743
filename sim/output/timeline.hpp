#pragma once
// Chrome trace-event JSON (opens in Perfetto and chrome://tracing): one
// process per simulated run (dense baseline, compressed), each from 0, a
// track of its iterations, then one track per worker and kind of work, a
// span per compute phase, kernel and communication step, listed by run and
// start time; a worker's span has its iteration and figures as args.

#include "sim/training/iteration_model.hpp"

#include <string>
#include <vector>

namespace gcsim::output {

/// The timeline file's text: `run_names[p]` names plan p's process in the
/// viewer, and `runs[p]`'s iterations are its first track (iteration i from
/// the end of the one before, as result.json's iteration_time_s).
std::string timeline_text(const std::vector<training::TimelineEvent>& events,
                          const std::vector<std::string>& run_names,
                          const std::vector<training::RunResult>& runs, int warmup_iterations);

} // namespace gcsim::output
