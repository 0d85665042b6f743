#include "sim/output/timeline.hpp"

#include "sim/output/result.hpp"

#include <set>

#include <nlohmann/json.hpp>

namespace gcsim::output {

void write_timeline(const std::filesystem::path& file,
                    const std::vector<training::TimelineEvent>& events,
                    const std::vector<std::string>& run_names) {
  nlohmann::json trace_events = nlohmann::json::array();
  std::set<std::pair<int, int>> tracks;
  for (size_t p = 0; p < run_names.size(); ++p)
    trace_events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", p}, {"args", {{"name", run_names[p]}}}});
  for (const training::TimelineEvent& event : events) {
    if (tracks.insert({event.plan, event.worker}).second)
      trace_events.push_back({{"name", "thread_name"},
                              {"ph", "M"},
                              {"pid", event.plan},
                              {"tid", event.worker},
                              {"args", {{"name", "worker " + std::to_string(event.worker)}}}});
    // Trace-event times are microseconds.
    trace_events.push_back({{"name", event.name},
                            {"cat", event.category},
                            {"ph", "X"},
                            {"pid", event.plan},
                            {"tid", event.worker},
                            {"ts", event.start_s * 1e6},
                            {"dur", (event.end_s - event.start_s) * 1e6}});
  }
  write_json_file(file, {{"traceEvents", trace_events}, {"displayTimeUnit", "ms"}}, -1);
}

} // namespace gcsim::output
