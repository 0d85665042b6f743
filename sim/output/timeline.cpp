#include "sim/output/timeline.hpp"

#include "sim/output/result.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace gcsim::output {

void write_timeline(const std::filesystem::path& file,
                    const std::vector<training::TimelineEvent>& events,
                    const std::vector<std::string>& run_names,
                    const std::vector<training::RunResult>& runs, int warmup_iterations) {
  assert(runs.size() == run_names.size() && "a name for each run");
  nlohmann::json trace_events = nlohmann::json::array();
  std::set<std::pair<int, int>> tracks;
  // Where one iteration ends and the next begins is seen nowhere else: the
  // workers' spans of neighbouring iterations overlap (buckets, stragglers).
  // Its own thread id, above every worker's (Perfetto reads ids as 32-bit
  // unsigned), sorted first.
  constexpr int kIterationTrack = 1 << 30;
  for (size_t p = 0; p < run_names.size(); ++p) {
    trace_events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", p}, {"args", {{"name", run_names[p]}}}});
    trace_events.push_back({{"name", "thread_name"},
                            {"ph", "M"},
                            {"pid", p},
                            {"tid", kIterationTrack},
                            {"args", {{"name", "iterations"}}}});
    trace_events.push_back({{"name", "thread_sort_index"},
                            {"ph", "M"},
                            {"pid", p},
                            {"tid", kIterationTrack},
                            {"args", {{"sort_index", -1}}}});
    double start = 0;
    const std::vector<training::IterationRecord>& iterations = runs[p].iterations;
    for (size_t i = 0; i < iterations.size(); ++i) {
      const bool warmup = static_cast<int>(i) < warmup_iterations;
      trace_events.push_back(
          {{"name", "iteration " + std::to_string(i) + (warmup ? " (warm-up)" : "")},
           {"cat", "iteration"},
           {"ph", "X"},
           {"pid", p},
           {"tid", kIterationTrack},
           {"ts", start * 1e6},
           {"dur", iterations[i].iteration_s * 1e6}});
      start += iterations[i].iteration_s;
    }
  }
  // A track per worker and kind of work: a bucket's allreduce starts inside
  // the backward pass and ends after it, and complete events on one track
  // must nest (Perfetto cut or dropped the misnested ones).
  static const std::array<const char*, 3> kStreams{"compute", "kernel", "communication"};
  // The runs are simulated one after the other on one clock; each starts at
  // 0 in the viewer, so that the compressed run's iterations lie under the
  // dense baseline's they are compared with.
  std::map<int, double> origin;
  for (const training::TimelineEvent& event : events) {
    auto [at, added] = origin.emplace(event.plan, event.start_s);
    at->second = std::min(at->second, event.start_s);
  }
  for (const training::TimelineEvent& event : events) {
    const auto stream = static_cast<int>(
        std::find(kStreams.begin(), kStreams.end(), event.category) - kStreams.begin());
    assert(stream < static_cast<int>(kStreams.size()) && "a known category");
    const int track = event.worker * static_cast<int>(kStreams.size()) + stream;
    if (tracks.insert({event.plan, track}).second) {
      trace_events.push_back(
          {{"name", "thread_name"},
           {"ph", "M"},
           {"pid", event.plan},
           {"tid", track},
           {"args",
            {{"name", "worker " + std::to_string(event.worker) + " " + kStreams[stream]}}}});
      trace_events.push_back({{"name", "thread_sort_index"},
                              {"ph", "M"},
                              {"pid", event.plan},
                              {"tid", track},
                              {"args", {{"sort_index", track}}}});
    }
    // Trace-event times are microseconds.
    trace_events.push_back({{"name", event.name},
                            {"cat", event.category},
                            {"ph", "X"},
                            {"pid", event.plan},
                            {"tid", track},
                            {"ts", (event.start_s - origin[event.plan]) * 1e6},
                            {"dur", (event.end_s - event.start_s) * 1e6}});
  }
  write_json_file(file, {{"traceEvents", trace_events}, {"displayTimeUnit", "ms"}}, -1);
}

} // namespace gcsim::output
