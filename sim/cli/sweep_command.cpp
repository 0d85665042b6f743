// `gcsim sweep SWEEP.json`: a base scenario plus a grid of overrides. Every
// point is a plain `gcsim run` child process (one SimGrid engine per
// process), run in parallel on the local cores; the results are gathered
// into DIR/sweep.csv. Format: workloads/scenarios/README.md, "Sweeps".

#include "compressors/compressor.hpp"
#include "sim/cli/command.hpp"
#include "sim/cost/device_profile.hpp"
#include "sim/input/atomic_write.hpp"
#include "sim/input/input_error.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/input/paths.hpp"
#include "sim/output/result.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/sweep/folder_lock.hpp"
#include "sim/sweep/process.hpp"
#include "sim/sweep/sweep_spec.hpp"
#include "sim/sweep/table.hpp"
#include "sim/training/compressor_fit.hpp"
#include "sim/training/plan.hpp"
#include "sim/training/schedule_file.hpp"
#include "sim/training/state_spill.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string.h> // sigabbrev_np (GNU)

#include <CLI/CLI.hpp>

namespace gcsim::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Paths inside the working directory are printed relative to it, so that
// commands stay readable and committed results carry no home directories.
std::string display_path(const fs::path& path) {
  const fs::path absolute = fs::absolute(path).lexically_normal();
  const fs::path relative = absolute.lexically_relative(fs::current_path());
  if (relative.empty() || *relative.begin() == "..")
    return absolute.string();
  return relative.string();
}

// This gcsim as the points' commands show it (relative where it can be).
std::string display_executable(const fs::path& executable) {
  std::string shown = display_path(executable);
  return shown.find('/') == std::string::npos ? "./" + shown : shown;
}

std::string shell_quoted(const std::string& word) {
  const bool plain =
      !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_@%+=:,./-") == std::string::npos;
  if (plain)
    return word;
  std::string quoted = "'";
  for (char c : word)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& word : argv)
    line += (line.empty() ? "" : " ") + shell_quoted(word);
  return line;
}

// Null unless `file` holds a result of `gcsim run` (an object with a
// summary): a point counts as done only with one.
nlohmann::json result_or_null(const fs::path& file) {
  std::error_code error;
  if (!fs::is_regular_file(file, error))
    return nullptr;
  std::ifstream stream(file);
  nlohmann::json result = nlohmann::json::parse(stream, nullptr, false);
  if (result.is_discarded() || !result.is_object() || !result.contains("summary") ||
      !result["summary"].is_object())
    return nullptr;
  return result;
}

// Empty when `result` was computed from `scenario` (a point's scenario as it
// resolves now), else where the two first differ: a result left by an
// earlier grid value, base scenario or gcsim must not count as done.
std::string scenario_difference(const nlohmann::json& result, const nlohmann::json& scenario) {
  if (!result.contains("scenario"))
    return "it names no scenario";
  const nlohmann::json patch = nlohmann::json::diff(result["scenario"], scenario);
  if (patch.empty())
    return "";
  const std::string where = patch.front().value("path", "");
  return "its scenario differs at " + (where.empty() ? std::string("the top") : where);
}

// Whether a point's result.json counts as done and, when something else is
// there, why it runs again. A name that cannot even be looked at (a link
// loop, a folder gcsim may not search) is refused before any point runs.
struct PointState {
  bool finished = false;
  std::string why_again; // empty unless something that is not its result is there
};

// "" when `result` replays what the point asks (`replayed`, the schedule's
// recorded path, "" for none), else why not: a full run and a replay of one
// scenario record the same scenario.
std::string replay_difference(const nlohmann::json& result, const std::string& replayed) {
  const nlohmann::json::json_pointer kind("/model/gradients/kind");
  const nlohmann::json::json_pointer schedule("/model/gradients/schedule");
  const bool is_replay = result.contains(kind) && result[kind] == "replay";
  if (replayed.empty())
    return is_replay ? "it is a replay, and the sweep is not" : "";
  if (!is_replay)
    return "it is not a replay, and the sweep replays " + replayed;
  if (!result.contains(schedule) || result[schedule] != replayed)
    return "it replays another schedule than " + replayed;
  return "";
}

// "" when the files `result` ran on (its model.input_digests) are the
// ones the point names now, else which one changed: a workload spec or a
// device profile edited since is not in the scenario. A result of a build
// before the digests cannot tell, and counts.
std::string input_difference(const nlohmann::json& result, const nlohmann::json& digests) {
  const nlohmann::json::json_pointer recorded_at("/model/input_digests");
  if (!result.contains(recorded_at))
    return "";
  const nlohmann::json& recorded = result[recorded_at];
  for (const auto& [role, digest] : digests.items()) {
    const nlohmann::json was =
        recorded.is_object() ? recorded.value(role, nlohmann::json()) : nlohmann::json();
    if (was != digest)
      return "its " + role + " file has changed since it ran (" +
             (was.is_string() ? was.get<std::string>() : std::string("none")) + ", now " +
             digest.get<std::string>() + ")";
  }
  return "";
}

PointState point_state(const fs::path& result_file, const nlohmann::json& scenario,
                       const nlohmann::json& digests, const std::string& replayed) {
  std::error_code error;
  const fs::file_status status = fs::status(result_file, error);
  if (error && status.type() != fs::file_type::not_found)
    throw InputError(result_file.string(), "",
                     "cannot be read (" + error.message() +
                         "): remove it or fix its folder before the sweep resumes");
  // Left by something else than this point's run (a folder, a file of
  // another kind, a result of another scenario): run again, and say why.
  PointState state;
  const nlohmann::json result = result_or_null(result_file);
  if (!result.is_null()) {
    // A full run's result and a replay's differ in their compressor's
    // fields too; which of the two it is says more.
    state.why_again = replay_difference(result, replayed);
    if (state.why_again.empty())
      state.why_again = scenario_difference(result, scenario);
    if (state.why_again.empty())
      state.why_again = input_difference(result, digests);
  } else if (fs::exists(status)) {
    state.why_again = "it is not a result of gcsim run";
  }
  state.finished = !result.is_null() && state.why_again.empty();
  return state;
}

nlohmann::json read_result(const fs::path& file) {
  nlohmann::json result = result_or_null(file);
  if (result.is_null())
    throw std::runtime_error(file.string() + " is not a result file; delete it to recompute");
  return result;
}

class SweepCommand final : public Command {
public:
  std::string name() const override { return "sweep"; }
  std::string description() const override {
    return "Run a scenario over a grid of overrides in parallel: one result.json per point "
           "and DIR/sweep.csv";
  }
  void configure(CLI::App& app) override {
    app.add_option("sweep", sweep_file_, "Sweep JSON file")->required()->check(nonempty_path);
    app.add_option("--out", out_dir_,
                   "Folder for the points and sweep.csv "
                   "(default: results/<sweep name>/)")
        ->check(nonempty_path);
    app.add_option("--jobs,-j", jobs_, "Points run at the same time (default: the cores)")
        ->transform(integer_in(1, 4096));
    app.add_flag("--dry-run", dry_run_, "List the points and their commands; run nothing");
    app.add_option("--spill", spill_,
                   "Passed to every point's gcsim run (and its command): where per-worker "
                   "state goes (see gcsim run --help); without it points use run's default")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    scratch_option_ =
        app.add_option("--scratch-dir", scratch_dir_,
                       "Passed to every point's gcsim run (and its command): the directory for "
                       "spilled state")
            ->check(nonempty_path);
    app.add_option("--replay", replay_file_,
                   "Passed to every point's gcsim run (and its command): timing only, each point "
                   "replays this schedule.json of an earlier compressed run on its own platform "
                   "and device (a grid of the network, the device, the training loop; not of "
                   "the compressor or the workers, which the schedule fixes)")
        ->check(nonempty_path);
  }

  std::string out_of_memory_advice() const override { return kSimulationMemoryAdvice; }
  int run() override {
    const sweep::SweepSpec spec = sweep::load_sweep(sweep_file_);
    const std::vector<sweep::Point> points = sweep::expand(spec);

    const fs::path out = out_dir_.empty() ? fs::path("results") / spec.name : fs::path(out_dir_);
    // What the sweep writes into --out must not be what it reads: a sweep
    // file named points.txt there became the list of point ids.
    const std::vector<NamedFile> inputs{{"the sweep file", spec.file},
                                        {"the sweep's scenario", spec.scenario},
                                        {"--replay", replay_file_}};
    for (const char* written : {"sweep.csv", "points.txt"})
      refuse_same_file({"--out", out / written}, inputs);
    for (const NamedFile& input : inputs)
      if (!input.path.empty() && inside_folder(input.path, out / "points")) // else no point's
        for (const sweep::Point& point : points)
          if (inside_folder(input.path, out / "points" / point.id))
            throw InputError("--out", "",
                             input.path.string() + " is " + input.argument + " and lies in " +
                                 (out / "points" / point.id).string() +
                                 ", a point's folder; choose another --out");
    const fs::path executable = fs::read_symlink("/proc/self/exe");
    const std::string shown_executable = display_executable(executable);
    std::vector<sweep::Job> jobs;
    std::vector<std::string> commands;
    for (const sweep::Point& point : points) {
      std::vector<std::string> argv{shown_executable, "run", display_path(spec.scenario), "--out",
                                    display_path(out / "points" / point.id)};
      for (const std::string& setting : point.set_arguments) {
        argv.push_back("--set");
        argv.push_back(setting);
      }
      // Only when asked, so that earlier sweeps' commands stay as they were.
      if (!spill_.empty())
        argv.insert(argv.end(), {"--spill", spill_});
      if (scratch_option_->count() > 0)
        argv.insert(argv.end(), {"--scratch-dir", scratch_dir_});
      if (!replay_file_.empty())
        argv.insert(argv.end(), {"--replay", display_path(replay_file_)});
      commands.push_back(command_line(argv));
      argv[0] = executable.string();
      jobs.push_back({argv, out / "points" / point.id / "log.txt"});
    }
    // A scratch directory named, or one every compressed point will use, is
    // checked now: each point found it bad only as it started spilling.
    if (scratch_option_->count() > 0 || spill_ == "always")
      training::check_scratch_dir(scratch_option_->count() > 0 ? scratch_dir_
                                                               : training::default_scratch_dir(),
                                  scratch_option_->count() > 0);
    // A schedule that is no file at all is the sweep's error, not each point's.
    if (!replay_file_.empty())
      load_json_file(replay_file_);
    std::map<fs::path, cost::DeviceProfile> devices; // each device of the grid, loaded once
    const std::vector<CheckedPoint> checked =
        check_points(spec, points, commands, devices, replay_file_);
    refuse_same_runs(spec, points, checked);
    const std::string replayed = replay_file_.empty() ? "" : recorded_path(replay_file_);
    // A replay draws nothing from the seed but the stragglers' compute: a
    // seed axis without them repeats one point (it is right with them).
    const bool seed_axis = std::any_of(spec.axes.begin(), spec.axes.end(),
                                       [](const sweep::Axis& axis) { return axis.key == "seed"; });
    const bool stragglers =
        std::any_of(checked.begin(), checked.end(), [](const CheckedPoint& point) {
          return point.scenario.training.compute_variation > 0;
        });
    if (!replayed.empty() && seed_axis && !stragglers)
      std::printf("note: the grid's seed reaches a replay only through "
                  "training.compute_variation (stragglers), which no point sets: points that "
                  "differ in their seed alone will be the same\n");

    // Held from before the points' results are read until sweep.csv is
    // written; a dry run writes nothing, and may look at a folder in use.
    // The table is checked writable now, not after hours of points.
    const fs::path csv = out / "sweep.csv";
    MadeFolders made_folders; // the folder goes again if the grid is refused below
    std::optional<sweep::FolderLock> lock;
    if (!dry_run_) {
      check_writable(csv, &made_folders);
      lock.emplace(out);
    }

    // Every point's state before any line is printed: a refused folder
    // prints nothing.
    std::vector<PointState> states;
    for (size_t i = 0; i < points.size(); ++i)
      states.push_back(point_state(out / "points" / points[i].id / "result.json",
                                   checked[i].scenario.resolved, checked[i].input_digests,
                                   replayed));
    std::vector<size_t> pending;
    for (size_t i = 0; i < points.size(); ++i) {
      const PointState& state = states[i];
      if (!state.finished)
        pending.push_back(i);
      if (state.finished || !state.why_again.empty() || dry_run_) {
        const std::string shown = state.finished ? "done"
                                  : state.why_again.empty()
                                      ? "to run"
                                      : "to run again (its result.json: " + state.why_again + ")";
        std::printf("  %s  %s\n    %s\n", points[i].id.c_str(), shown.c_str(), commands[i].c_str());
      }
    }
    const int parallel = jobs_ > 0 ? jobs_ : sweep::available_cores();
    // Points beside each other share the memory --spill auto judges by; a
    // point's command (run alone) leaves the option out and gets all of it.
    const size_t beside = std::min(pending.size(), static_cast<size_t>(parallel));
    check_fits(spec, points, pending, checked, devices, commands, beside);
    std::printf("sweep %s: %zu points, %zu done, %zu to run", spec.name.c_str(), points.size(),
                points.size() - pending.size(), pending.size());
    if (dry_run_) {
      std::printf(" (dry run)\n");
      return 0;
    }
    if (jobs_ > 0)
      std::printf(", %d at a time (--jobs)\n", parallel);
    else
      std::printf(" on %d core%s\n", parallel, parallel == 1 ? "" : "s");
    if (beside > 1) {
      const std::string share = sweep::memory_share_argument(beside);
      for (sweep::Job& job : jobs)
        job.argv.insert(job.argv.end(), {"--memory-share", share});
      std::printf("  %zu points at a time: each runs with --memory-share %s (what --spill auto "
                  "counts on)\n",
                  beside, share.c_str());
    }

    made_folders.keep();
    // A table of an earlier grid goes, or it outlived a failed run and was
    // plotted.
    if (!pending.empty()) {
      std::error_code ignored; // a file that cannot go cannot be written either: said then
      fs::remove(csv, ignored);
    }
    // The grid's point ids, for a reader of the folder before sweep.csv is
    // written (plot.py): points/ keeps the folders of an earlier grid too.
    std::string ids;
    for (const sweep::Point& point : points)
      ids += point.id + "\n";
    write_file_atomically(out / "points.txt", ids);
    if (!run_points(spec, points, pending, jobs, commands, shown_executable, parallel))
      return 1;
    write_table(spec, points, commands, out);
    return 0;
  }

private:
  // A point's scenario (its `resolved` is what its result.json will hold)
  // and its compressor, made from it once (none where the point replays a
  // schedule).
  struct CheckedPoint {
    Scenario scenario;
    std::unique_ptr<compress::Compressor> compressor;
    nlohmann::json input_digests; // output::input_digests: what a result ran on
  };

  // What a point runs: its scenario with the compressor's parameters as it
  // resolved them, defaults included (a replay's compressor is the
  // schedule's, the same for every point).
  static nlohmann::json what_runs(const CheckedPoint& point) {
    nlohmann::json runs = point.scenario.resolved;
    if (point.compressor) {
      runs["compressor"] = point.compressor->params();
      runs["compressor"]["name"] = point.compressor->name();
    }
    return runs;
  }

  // Grid values that differ only in a compressor default written out
  // ({"name": "topk"} beside {"name": "topk", "density": 0.001}) would be
  // one run twice, and two lines of one setting in the figures. Keyed by a
  // hash of the text, compared whole where two hashes meet, so that only
  // one point's text is held at a time beside the points themselves.
  static void refuse_same_runs(const sweep::SweepSpec& spec,
                               const std::vector<sweep::Point>& points,
                               const std::vector<CheckedPoint>& checked) {
    std::multimap<size_t, size_t> seen;
    for (size_t i = 0; i < points.size(); ++i) {
      const std::string text = what_runs(checked[i]).dump();
      const size_t key = std::hash<std::string>{}(text);
      for (auto [it, end] = seen.equal_range(key); it != end; ++it)
        if (what_runs(checked[it->second]).dump() == text)
          throw InputError(spec.file.string(), "/grid",
                           "points " + points[it->second].id + " and " + points[i].id +
                               " run the same scenario (as a compressor's default written "
                               "out in one and left to it in the other): the two would be one "
                               "run twice");
      seen.emplace(key, i);
    }
  }

  // Every point's scenario and compressor are made before anything runs, so
  // a bad value in the grid stops the sweep at once instead of after hours
  // of points.
  static std::vector<CheckedPoint> check_points(const sweep::SweepSpec& spec,
                                                const std::vector<sweep::Point>& points,
                                                const std::vector<std::string>& commands,
                                                std::map<fs::path, cost::DeviceProfile>& devices,
                                                const std::string& replay_file) {
    std::vector<CheckedPoint> checked;
    std::map<fs::path, std::string> digested; // each input file read once
    for (size_t i = 0; i < points.size(); ++i) {
      const sweep::Point& point = points[i];
      std::vector<Override> overrides;
      try {
        for (const std::string& setting : point.set_arguments)
          overrides.push_back(parse_override(setting));
        Scenario scenario =
            load_scenario(spec.scenario, overrides, std::nullopt, !replay_file.empty());
        if (devices.count(scenario.device_file) == 0)
          devices.emplace(scenario.device_file, cost::DeviceProfile::load(scenario.device_file));
        // Its parameters too, or a bad one fails hours in; a replayed
        // schedule against the point's workers and model, and the scenario
        // its result will record.
        std::unique_ptr<compress::Compressor> compressor;
        if (replay_file.empty())
          compressor = scenario.make_compressor();
        else
          training::replay_schedule(scenario, replay_file, devices.at(scenario.device_file));
        // Here, where an unreadable file is the point's error.
        nlohmann::json digests = output::input_digests(scenario, &digested);
        checked.push_back({std::move(scenario), std::move(compressor), std::move(digests)});
      } catch (const InputError& error) {
        throw InputError(spec.file.string(), "",
                         "point " + point.id + " is not a valid scenario: " + error.what() +
                             "; rerun alone: " + commands[i]);
      }
    }
    return checked;
  }

  // What each point to run asks of its compressor, with the memory it will
  // run with (1/`beside` of it, its --memory-share, with `beside` points at
  // a time): a model past the compressor's 32-bit indices or a sketch too
  // large was found by the point's own gcsim run, after the points before it.
  static void check_fits(const sweep::SweepSpec& spec, const std::vector<sweep::Point>& points,
                         const std::vector<size_t>& pending,
                         const std::vector<CheckedPoint>& checked,
                         const std::map<fs::path, cost::DeviceProfile>& devices,
                         const std::vector<std::string>& commands, size_t beside) {
    const double share = beside > 1 ? 1.0 / static_cast<double>(beside) : 1.0;
    for (size_t i : pending) {
      const Scenario& scenario = checked[i].scenario;
      if (checked[i].compressor == nullptr || checked[i].compressor->name() == "dense")
        continue; // a replay holds no per-worker state
      const compress::Compressor& compressor = *checked[i].compressor;
      try {
        training::check_compressor_fits(
            scenario, compressor, training::dense_plan(scenario, devices.at(scenario.device_file)),
            share);
      } catch (const InputError& error) {
        throw InputError(spec.file.string(), "",
                         "point " + points[i].id + " cannot run: " + error.what() +
                             "; rerun alone: " + commands[i]);
      }
    }
  }

  // Runs the pending points; false when one failed for a reason other than
  // bad input (which throws, exit 2).
  static bool run_points(const sweep::SweepSpec& spec, const std::vector<sweep::Point>& points,
                         const std::vector<size_t>& pending,
                         const std::vector<sweep::Job>& all_jobs,
                         const std::vector<std::string>& commands,
                         const std::string& shown_executable, int parallel) {
    std::vector<sweep::Job> jobs;
    for (size_t index : pending)
      jobs.push_back(all_jobs[index]);
    std::vector<Clock::time_point> started(jobs.size());
    size_t finished = 0;
    std::optional<size_t> failed;
    sweep::ExitStatus failure;
    auto on_start = [&](size_t j) {
      // Written as the point starts, so a point the sweep never started (a
      // failure or a signal came first) is left without a log.
      const sweep::Job& job = jobs[j];
      write_file_atomically(job.log.parent_path() / "command.txt", commands[pending[j]] + "\n");
      // The log opens with the command as run: command.txt's, plus what only
      // a sweep adds (--memory-share); the point's output follows.
      std::vector<std::string> shown = job.argv;
      shown[0] = shown_executable;
      write_file_atomically(job.log, sweep::kLogHeader + command_line(shown) + "\n");
      started[j] = Clock::now();
      std::printf("  %s  started\n    %s\n", points[pending[j]].id.c_str(),
                  commands[pending[j]].c_str());
      std::fflush(stdout);
    };
    auto on_finish = [&](size_t j, const sweep::ExitStatus& status) {
      ++finished;
      double seconds = std::chrono::duration<double>(Clock::now() - started[j]).count();
      // A point the sweep stopped when it was itself stopped did not fail.
      std::string how = status.ok() ? "done" : "FAILED";
      if (const char* name = sigabbrev_np(status.signal); status.passed_on && name != nullptr)
        how = std::string("stopped by SIG") + name;
      std::printf("  %s  %s in %.1f s [%zu/%zu]\n", points[pending[j]].id.c_str(), how.c_str(),
                  seconds, finished, jobs.size());
      std::fflush(stdout);
      if (status.ok())
        return true;
      if (!failed) {
        failed = pending[j];
        failure = status;
      }
      return false; // start nothing more; the running points finish
    };
    sweep::run_jobs(jobs, parallel, on_start, on_finish);
    if (!failed)
      return true;

    const sweep::Job& job = all_jobs[*failed];
    const std::string& id = points[*failed].id;
    if (failure.code == 2)
      throw InputError(spec.file.string(), "",
                       "point " + id + " failed with bad input: " + sweep::last_line(job.log) +
                           "; rerun alone: " + commands[*failed]);
    std::fprintf(stderr, "gcsim sweep: point %s failed (%s): %s\n  log: %s\n  rerun alone: %s\n",
                 id.c_str(), failure.describe().c_str(), sweep::last_line(job.log).c_str(),
                 job.log.string().c_str(), commands[*failed].c_str());
    return false;
  }

  static void write_table(const sweep::SweepSpec& spec, const std::vector<sweep::Point>& points,
                          const std::vector<std::string>& commands, const fs::path& out) {
    std::vector<std::string> keys;
    for (const sweep::Axis& axis : spec.axes)
      keys.push_back(axis.key);
    std::vector<sweep::Row> rows;
    for (size_t i = 0; i < points.size(); ++i)
      rows.push_back({points[i].id, points[i].values, commands[i],
                      read_result(out / "points" / points[i].id / "result.json")});
    const fs::path csv = out / "sweep.csv";
    write_file_atomically(csv, sweep::make_csv(keys, rows));
    std::printf("  table: %s (%zu rows)\n", display_path(csv).c_str(), rows.size());
  }

  std::string sweep_file_;
  std::string out_dir_;
  std::string spill_;
  std::string scratch_dir_;
  std::string replay_file_;
  CLI::Option* scratch_option_ = nullptr;
  int jobs_ = 0;
  bool dry_run_ = false;
};

const CommandRegistration registration{[] { return std::make_unique<SweepCommand>(); }};

} // namespace
} // namespace gcsim::cli
