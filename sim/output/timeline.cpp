#include "sim/output/timeline.hpp"

#include "sim/output/result.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace gcsim::output {

std::string timeline_text(const std::vector<training::TimelineEvent>& events,
                          const std::vector<std::string>& run_names,
                          const std::vector<training::RunResult>& runs, int warmup_iterations) {
  assert(runs.size() == run_names.size() && "a name for each run");
  nlohmann::json trace_events = nlohmann::json::array(); // the metadata, then the spans
  // Spans are recorded as they end; the file lists them by run and start
  // (an enclosing span before the ones it holds), as trace viewers and
  // scripts reading the file expect.
  struct Span {
    int pid;
    double ts_us, dur_us;
    nlohmann::json event;
  };
  std::vector<Span> spans;
  auto add_span = [&spans](int pid, const std::string& name, const std::string& category, int tid,
                           double ts_us, double dur_us) {
    spans.push_back({pid, ts_us, dur_us,
                     nlohmann::json{{"name", name},
                                    {"cat", category},
                                    {"ph", "X"},
                                    {"pid", pid},
                                    {"tid", tid},
                                    {"ts", ts_us},
                                    {"dur", dur_us}}});
  };
  std::set<std::pair<int, int>> tracks;
  // Where one iteration ends and the next begins is seen nowhere else: the
  // workers' spans of neighbouring iterations overlap (buckets, stragglers).
  // Its own thread id, above every worker's (Perfetto reads ids as 32-bit
  // unsigned), sorted first.
  constexpr int kIterationTrack = 1 << 30;
  // Ids from 1: Perfetto treats pid and tid 0 as the kernel's swapper
  // (google/perfetto#394).
  const auto pid_of = [](size_t run) { return static_cast<int>(run) + 1; };
  for (size_t p = 0; p < run_names.size(); ++p) {
    const int pid = pid_of(p);
    trace_events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", run_names[p]}}}});
    trace_events.push_back({{"name", "thread_name"},
                            {"ph", "M"},
                            {"pid", pid},
                            {"tid", kIterationTrack},
                            {"args", {{"name", "iterations"}}}});
    trace_events.push_back({{"name", "thread_sort_index"},
                            {"ph", "M"},
                            {"pid", pid},
                            {"tid", kIterationTrack},
                            {"args", {{"sort_index", -1}}}});
    double start = 0;
    const std::vector<training::IterationRecord>& iterations = runs[p].iterations;
    for (size_t i = 0; i < iterations.size(); ++i) {
      const bool warmup = static_cast<int>(i) < warmup_iterations;
      add_span(pid, "iteration " + std::to_string(i) + (warmup ? " (warm-up)" : ""), "iteration",
               kIterationTrack, start * 1e6, iterations[i].iteration_s * 1e6);
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
    // A server's tracks after every worker's (a worker count is at most 2^16).
    constexpr int kServerTracks = 1 << 29;
    const int track = (event.server ? kServerTracks : 0) +
                      event.worker * static_cast<int>(kStreams.size()) + stream + 1;
    const int pid = pid_of(static_cast<size_t>(event.plan));
    if (tracks.insert({pid, track}).second) {
      trace_events.push_back(
          {{"name", "thread_name"},
           {"ph", "M"},
           {"pid", pid},
           {"tid", track},
           {"args",
            {{"name", (event.server ? "server " : "worker ") + std::to_string(event.worker) + " " +
                          kStreams[stream]}}}});
      trace_events.push_back({{"name", "thread_sort_index"},
                              {"ph", "M"},
                              {"pid", pid},
                              {"tid", track},
                              {"args", {{"sort_index", track}}}});
    }
    // Trace-event times are microseconds.
    add_span(pid, event.name, event.category, track, (event.start_s - origin[event.plan]) * 1e6,
             (event.end_s - event.start_s) * 1e6);
    nlohmann::json& args = spans.back().event["args"];
    args["iteration"] = event.iteration;
    // Counts of bytes and elements, written as the integers they are.
    for (const auto& [label, value] : event.figures)
      if (value == std::floor(value) && std::fabs(value) < 0x1p53)
        args[label] = static_cast<int64_t>(value);
      else
        args[label] = value;
  }
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    if (a.pid != b.pid)
      return a.pid < b.pid;
    if (a.ts_us != b.ts_us)
      return a.ts_us < b.ts_us;
    return a.dur_us > b.dur_us;
  });
  for (Span& span : spans)
    trace_events.push_back(std::move(span.event));
  return json_text({{"traceEvents", trace_events}, {"displayTimeUnit", "ms"}}, -1);
}

} // namespace gcsim::output
