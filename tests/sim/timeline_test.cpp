// The Chrome trace of a run (gcsim run --timeline), from events given by
// hand: each run a process named as the run, from 0 on its own clock, a track
// of iterations (the warm-up ones marked) sorted first, a track per worker
// and kind of work sorted by its id, times in microseconds, spans listed by
// run and start, an enclosing span before the ones it holds.

#include "sim/output/timeline.hpp"

#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using gcsim::training::IterationRecord;
using gcsim::training::RunResult;
using gcsim::training::TimelineEvent;

TEST_CASE("a timeline: runs named and from 0, warm-up marked, microseconds, sorted spans") {
  // Two runs one after the other on one clock (the compressed one from 10 s),
  // the events recorded as they ended, not as they began.
  RunResult dense;
  dense.iterations.resize(2);
  dense.iterations[0].iteration_s = 0.5;
  dense.iterations[1].iteration_s = 0.25;
  RunResult topk = dense;
  topk.iterations[1].iteration_s = 0.125;
  const std::vector<TimelineEvent> events{
      {0, 1, "communication", "allreduce", 0.25, 0.5, false, 0, {{"bytes_sent", 6442450944.0}}},
      {0, 0, "compute", "backward", 0, 0.25, false, 0, {}},
      {1, 0, "kernel", "select", 10.25, 10.5, false, 1, {{"n", 4096}, {"k", 40.5}}},
      {1, 0, "compute", "backward", 10, 10.25, false, 0, {}},
      {1, 0, "compute", "iteration compute", 10, 10.5, false, 0, {}}};
  const nlohmann::json trace = nlohmann::json::parse(
      gcsim::output::timeline_text(events, {"dense", "topk"}, {dense, topk}, 1));
  CHECK(trace["displayTimeUnit"] == "ms");

  std::vector<std::string> processes;
  std::vector<nlohmann::json> spans;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    // Perfetto reads pid or tid 0 as the kernel's swapper.
    CHECK(event["pid"] != 0);
    CHECK(event.value("tid", 1) != 0);
    if (event["name"] == "process_name")
      processes.push_back(event["args"]["name"].get<std::string>());
    // Each track sorted by its own id; the iterations' track first.
    if (event["name"] == "thread_sort_index") {
      const int tid = event["tid"].get<int>();
      CHECK(event["args"]["sort_index"] == (tid == 1 << 30 ? -1 : tid));
    }
    if (event["ph"] == "X")
      spans.push_back(event);
  }
  CHECK(processes == std::vector<std::string>{"dense", "topk"});

  // (pid, name, ts, dur) in the order listed: by run, start, longer first.
  struct Expected {
    int pid;
    const char* name;
    double ts_us;
    double dur_us;
  };
  const std::vector<Expected> expected{{1, "iteration 0 (warm-up)", 0, 5e5},
                                       {1, "backward", 0, 2.5e5},
                                       {1, "allreduce", 2.5e5, 2.5e5},
                                       {1, "iteration 1", 5e5, 2.5e5},
                                       {2, "iteration 0 (warm-up)", 0, 5e5},
                                       {2, "iteration compute", 0, 5e5},
                                       {2, "backward", 0, 2.5e5},
                                       {2, "select", 2.5e5, 2.5e5},
                                       {2, "iteration 1", 5e5, 1.25e5}};
  REQUIRE(spans.size() == expected.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    INFO("span " << i << ": " << spans[i].dump());
    CHECK(spans[i]["pid"] == expected[i].pid);
    CHECK(spans[i]["name"] == expected[i].name);
    CHECK(spans[i]["ts"].get<double>() ==
          doctest::Approx(expected[i].ts_us).epsilon(1e-9).scale(1));
    CHECK(spans[i]["dur"].get<double>() ==
          doctest::Approx(expected[i].dur_us).epsilon(1e-9).scale(1));
  }
  // Worker w's kind k is track 3 w + k + 1 (compute, kernel, communication;
  // ids from 1, as the processes': Perfetto's 0 is the kernel's swapper).
  CHECK(spans[2]["tid"] == 3 * 1 + 2 + 1);
  CHECK(spans[7]["tid"] == 2);
  // A worker's span has its iteration and figures as args, counts as
  // integers (6 GiB past 32 bits); the iterations' track has none.
  CHECK(spans[2]["args"] == nlohmann::json{{"iteration", 0}, {"bytes_sent", 6442450944}});
  CHECK(spans[2]["args"]["bytes_sent"].is_number_integer());
  CHECK(spans[7]["args"] == nlohmann::json{{"iteration", 1}, {"n", 4096}, {"k", 40.5}});
  CHECK(spans[1]["args"] == nlohmann::json{{"iteration", 0}});
  CHECK_FALSE(spans[0].contains("args"));
}
