// `gcsim run SCENARIO.json`: simulate a scenario, print a summary and write
// DIR/result.json.

#include "compressors/params.hpp"
#include "compressors/registry.hpp"
#include "compressors/topk.hpp"
#include "sim/cli/command.hpp"
#include "sim/cost/device_profile.hpp"
#include "sim/input/atomic_write.hpp"
#include "sim/input/input_error.hpp"
#include "sim/input/paths.hpp"
#include "sim/output/result.hpp"
#include "sim/output/timeline.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/training/compression.hpp"
#include "sim/training/compressor_fit.hpp"
#include "sim/training/gradient_feed.hpp"
#include "sim/training/plan.hpp"
#include "sim/training/schedule_file.hpp"
#include "sim/training/state_spill.hpp"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>
#include <unistd.h>

#include <CLI/CLI.hpp>

namespace gcsim::cli {
namespace {

class RunCommand final : public Command {
public:
  std::string name() const override { return "run"; }
  std::string description() const override {
    return "Simulate a scenario: print a summary and write DIR/result.json";
  }
  void configure(CLI::App& app) override {
    app.add_option("scenario", scenario_file_, "Scenario JSON file")
        ->required()
        ->check(nonempty_path);
    app.add_option("--out", out_dir_, "Folder for result.json (default: results/<scenario name>/)")
        ->check(nonempty_path);
    app.add_option("--set", sets_,
                   "Override a scenario field by its dotted path, e.g. "
                   "--set platform.nodes=16 --set platform.link.bandwidth=10Gbps (repeatable)")
        ->take_all();
    // Checked as text and read by seed(): CLI11's own conversion takes -1 as
    // 2^64 - 1 and saturates 99999999999999999999 to 2^63 - 1 without a word.
    app.add_option("--seed", seed_text_,
                   "Override the scenario's seed (0 to 2^63 - 1; not beside --set seed=)")
        ->transform(integer_in(0, std::numeric_limits<long>::max()));
    app.add_option("--timeline", timeline_file_,
                   "Also write a Chrome trace-event timeline (open it in Perfetto)")
        ->check(nonempty_path);
    app.add_option("--replay", replay_file_,
                   "Timing only: simulate the schedule.json of an earlier compressed run (its "
                   "real selection sizes) on this scenario's platform and device, without tensors")
        ->check(nonempty_path);
    app.add_flag("--quiet", quiet_, "Print nothing on success");
    app.add_option("--spill", spill_.mode,
                   "Per-worker state in a scratch file instead of memory (same results, "
                   "slower): DGC's and Sketched-SGD's local momenta (read and written a worker "
                   "at a time) and the error-feedback residuals (mapped, paged by the kernel). "
                   "'auto': the momenta when residuals and momenta together would take more "
                   "than half of the physical memory (or leave too little room under the "
                   "process's cgroup memory limit), the residuals too when they alone would; "
                   "'always': both; 'never': neither, and state past the machine's memory and "
                   "swap (or the cgroup's limit) is refused as out of memory before it starts")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->capture_default_str();
    scratch_option_ = app.add_option("--scratch-dir", spill_.dir,
                                     "Directory for the spilled state (unlinked files, gone "
                                     "when gcsim ends; default $TMPDIR, else /tmp; checked when "
                                     "named, even if nothing spills)")
                          ->capture_default_str();
    app.add_option("--memory-share", spill_.memory_share,
                   "The part of the machine's (and cgroup's) memory that --spill auto counts "
                   "on, in (0, 1]: runs beside each other share it (gcsim sweep --jobs N "
                   "gives each point 1/N)")
        ->check(CLI::Validator(
            [](std::string& text) {
              char* end = nullptr;
              const double share = std::strtod(text.c_str(), &end);
              const bool ok = end != text.c_str() && *end == '\0' && share > 0 && share <= 1;
              return ok ? std::string() : "must be a number in (0, 1]: " + text;
            },
            "(0, 1]"))
        ->capture_default_str();
  }

  std::string out_of_memory_advice() const override { return kSimulationMemoryAdvice; }
  int run() override {
    std::vector<Override> overrides;
    for (const std::string& text : sets_)
      overrides.push_back(parse_override(text));
    Scenario scenario = load_scenario(scenario_file_, overrides, seed(), !replay_file_.empty());
    cost::DeviceProfile profile = cost::DeviceProfile::load(scenario.device_file);
    const int workers = scenario.platform.worker_count();
    std::unique_ptr<compress::Compressor> compressor;
    nlohmann::json compressor_json = scenario.compressor;
    if (replay_file_.empty()) {
      compressor = scenario.make_compressor();
      compressor_json = compressor->params();
      compressor_json["name"] = compressor->name();
    }
    const bool dense = compressor != nullptr && compressor->name() == "dense";
    // Before the compressors and the simulation, which can take minutes.
    const std::string directory = out_dir_.empty() ? "results/" + scenario.name : out_dir_;
    // Folders made here go again if the run is refused (or fails) before
    // its result is written.
    const std::filesystem::path result_file = std::filesystem::path(directory) / "result.json";
    const std::filesystem::path schedule_file =
        !dense && replay_file_.empty() ? std::filesystem::path(directory) / "schedule.json" : "";
    std::vector<NamedFile> inputs = scenario.input_files();
    inputs.push_back({"--replay", replay_file_});
    refuse_same_file({"--out", result_file}, inputs);
    refuse_same_file({"--out", schedule_file}, inputs);
    std::vector<NamedFile> timeline_others = inputs;
    timeline_others.push_back({"--out's result.json", result_file});
    timeline_others.push_back({"--out's schedule.json", schedule_file});
    refuse_same_file({"--timeline", timeline_file_}, timeline_others);
    // A scratch directory named is checked even when this run spills
    // nothing, as gcsim sweep does: a typo should not wait for a bigger run.
    const bool scratch_checked = scratch_option_->count() > 0 || spill_.mode == "always";
    if (scratch_checked)
      training::check_scratch_dir(spill_.dir, scratch_option_->count() > 0);
    MadeFolders made_folders;
    check_writable(result_file, &made_folders);
    if (!timeline_file_.empty())
      check_writable(timeline_file_, &made_folders);

    // A compressed run also simulates the dense baseline on the same
    // platform, first, so that speedup_vs_dense compares like with like.
    std::vector<training::IterationPlan> plans{training::dense_plan(scenario, profile)};
    training::CompressedRun compressed;
    nlohmann::json gradient_source;
    if (!replay_file_.empty()) {
      training::Replay replay = training::replay_schedule(scenario, replay_file_, profile);
      compressed = std::move(replay.compressed);
      compressor_json = std::move(replay.compressor);
      gradient_source = std::move(replay.gradient_source);
      plans.front().iterations = scenario.training.iterations;
      training::IterationPlan plan = plans.front();
      plan.compressed = compressed.schedule;
      plans.push_back(std::move(plan));
    } else if (!dense) {
      training::check_compressor_fits(scenario, *compressor, plans.front(), spill_.memory_share);
      std::unique_ptr<training::GradientFeed> feed =
          scenario.trace_folder ? training::make_trace_feed(*scenario.trace_folder, workers,
                                                            scenario.seed, scenario.synthesis)
                                : training::make_synthetic_feed(scenario.workload, workers,
                                                                scenario.seed, scenario.synthetic);
      gradient_source = feed->describe();
      // How finely layer-wise compressors (DEFT's partitions, DGC's vectors,
      // PowerSGD's matrices) saw the model: a layer per tensor where shapes
      // are known, else per spec layer.
      gradient_source["layers"] = feed->layout().layers().size();
      // More iterations simulated than captured: iteration i takes captured
      // iteration i mod n (training::make_trace_feed), said in the result.
      if (gradient_source.value("kind", "") == "trace" &&
          gradient_source["iterations"].size() < static_cast<size_t>(scenario.training.iterations))
        gradient_source["iterations_taken_in_turn"] = true;
      const bool per_bucket = training::runs_per_bucket(scenario, *compressor);
      const size_t d = feed->layout().total();
      assert(d == static_cast<size_t>(scenario.workload.parameters()) &&
             "the feed's gradients are the workload's parameters");
      spilled_ = training::should_spill(spill_, *compressor, d, workers);
      mapped_ = training::should_spill_residuals(spill_, d, workers);
      const std::string residual_dir = mapped_ ? spill_.dir : "";
      if (spilled_ || mapped_) {
        if (!scratch_checked) // the default folder, chosen by --spill auto
          training::check_scratch_dir(spill_.dir, false);
        if (spilled_ && !per_bucket) // per bucket, each bucket's compressor spills (below)
          compressor->spill_worker_state(spill_.dir);
      }
      // fp16's and bf16's 16-bit sums round in the order the run's allreduce adds.
      const compress::SummationOrder summation = training::compressor_summation(
          plans.front().algorithm, workers, plans.front().ranks_per_node);
      try {
        if (per_bucket) {
          const training::IterationPlan& dense_plan = plans.front();
          auto make = [this, &scenario, &summation] {
            std::unique_ptr<compress::Compressor> made = scenario.make_compressor();
            made->sum_as(summation);
            if (spilled_)
              made->spill_worker_state(spill_.dir);
            return made;
          };
          compressed = training::run_compressor_per_bucket(
              make, *feed, training::plan_buckets(dense_plan), dense_plan.layer_bytes, workers,
              scenario.training.iterations, scenario.seed, profile, residual_dir);
        } else {
          compressor->sum_as(summation);
          compressed =
              training::run_compressor(*compressor, *feed, workers, scenario.training.iterations,
                                       scenario.seed, profile, residual_dir);
        }
      } catch (const compress::ParameterError& error) {
        // Parameters that only fail against P (e.g. sketched_sgd's server rank).
        throw InputError(scenario.source_of("/compressor/" + error.parameter()),
                         "/compressor/" + error.parameter(), error.what());
      } catch (const std::invalid_argument& error) {
        throw InputError(scenario.source_of("/compressor"), "/compressor", error.what());
      }
      training::IterationPlan plan = plans.front();
      plan.compressed = compressed.schedule;
      plans.push_back(std::move(plan));
    }
    training::IterationPlan& plan = plans.back();
    // Only a compressed run's allreduce steps pay it (dense's is 0 anyway).
    plan.allreduce_sum_s_per_byte =
        training::compressor_sum_s_per_byte(compressor_json.value("name", ""), scenario.platform);
    const auto wall_start = std::chrono::steady_clock::now();
    const bool show_progress = isatty(STDERR_FILENO) != 0 && !quiet_;
    const int iterations = plan.iterations;
    auto progress = [&](int iteration, double clock) {
      double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
      if (show_progress && wall > 1.0)
        std::fprintf(stderr, "\r  iteration %d/%d, simulated %.3f s, wall %.1f s", iteration + 1,
                     iterations, clock, wall);
    };
    std::vector<training::RunResult> runs;
    std::vector<training::TimelineEvent> timeline;
    // Chosen here so that result.json says which solver timed the run.
    scenario.platform.network.solver = training::choose_solver(scenario.platform, plans);
    try {
      runs = training::simulate(scenario.platform, plans, progress,
                                timeline_file_.empty() ? nullptr : &timeline);
    } catch (const training::IterationTooLong& error) {
      if (show_progress)
        std::fprintf(stderr, "\r%60s\r", "");
      const InputError refused = training::too_long_input_error(
          error, scenario.platform, scenario.platform_source, scenario.platform_path());
      // The file's own values may be fine: a --set of the platform's named
      // beside it is where to look first.
      std::string platform_sets;
      for (const Override& item : scenario.overrides)
        if (item.pointer().rfind("/platform", 0) == 0)
          platform_sets += (platform_sets.empty() ? "" : ", ") + ("--set " + item.text);
      if (platform_sets.empty())
        throw refused;
      throw InputError(refused.file(), refused.json_path(),
                       refused.message() + " (given " + platform_sets + ")");
    } catch (const std::invalid_argument& error) {
      throw InputError(scenario.platform_source, "", error.what());
    }
    if (show_progress)
      std::fprintf(stderr, "\r%60s\r", "");

    output::CompressionExtras extras;
    extras.compressor_name = compressor_json.value("name", "dense");
    extras.compressor_params = compressor_json;
    extras.compressor_params.erase("name"); // result.json names it under model.compressor
    if (!dense) {
      extras.dense_baseline = &runs.front();
      extras.quality = &compressed.quality;
      extras.gradient_source = gradient_source;
      extras.compression_parts = static_cast<int>(compressed.schedule.front().parts.size());
      extras.compression_scope = training::compression_scope_of(compressed.schedule.front().parts);
    }
    extras.extrapolated = training::extrapolated_kernels(
        plans.back(), static_cast<double>(scenario.workload.parameters()), profile);
    nlohmann::json result = output::make_result(scenario, runs.back(), profile, extras);
    // Written together: a result beside another run's schedule or timeline
    // would pass for theirs (a sweep counts a point with a result as done).
    std::vector<OutputFile> outputs;
    if (!dense && replay_file_.empty())
      outputs.push_back(
          {schedule_file, output::json_text(training::schedule_to_json(
                              compressed, workers, compressor_json, scenario.compressor,
                              gradient_source, scenario.workload))});
    if (!timeline_file_.empty()) {
      std::vector<std::string> names{"dense"};
      if (!dense)
        names.push_back(compressor_json.value("name", "compressed"));
      outputs.push_back(
          {timeline_file_,
           output::timeline_text(timeline, names, runs, scenario.training.warmup_iterations)});
    }
    outputs.push_back({result_file, output::json_text(result)});
    // An earlier run's schedule left in the folder would sit beside this
    // result as if it were its own: a dense run has none, a replay's is the
    // one it replayed (kept where it is that file). A file this run read
    // (a scenario named schedule.json in --out) is no earlier schedule.
    std::vector<std::filesystem::path> stale;
    const std::filesystem::path old_schedule = std::filesystem::path(directory) / "schedule.json";
    const bool read_by_this_run =
        std::any_of(inputs.begin(), inputs.end(), [&](const NamedFile& in) {
          return !in.path.empty() && same_file(old_schedule, in.path);
        });
    if ((dense || !replay_file_.empty()) && !read_by_this_run)
      stale.push_back(old_schedule);
    write_files_atomically(outputs, stale);
    made_folders.keep();
    if (!quiet_) {
      std::fputs(output::format_summary(result).c_str(), stdout);
      std::printf("  result: %s/result.json\n", directory.c_str());
      if (spilled_ || mapped_)
        std::printf("  scratch files in %s (--spill): %s\n", spill_.dir.c_str(),
                    spilled_ && mapped_ ? "local momenta, residuals"
                    : spilled_          ? "local momenta"
                                        : "residuals");
      if (!timeline_file_.empty())
        std::printf("  timeline: %s (open in https://ui.perfetto.dev)\n", timeline_file_.c_str());
    }
    return 0;
  }

private:
  std::string scenario_file_;
  std::string out_dir_;
  std::string timeline_file_;
  std::string replay_file_;
  std::vector<std::string> sets_;
  std::optional<std::string> seed_text_;

  std::optional<uint64_t> seed() const {
    if (!seed_text_)
      return std::nullopt;
    return std::stoull(*seed_text_); // integer_in checked it
  }
  bool quiet_ = false;
  training::StateSpill spill_{"auto", training::default_scratch_dir()};
  CLI::Option* scratch_option_ = nullptr;
  bool spilled_ = false; // the compressor's local momenta
  bool mapped_ = false;  // the residuals
};

const CommandRegistration registration{[] { return std::make_unique<RunCommand>(); }};

} // namespace
} // namespace gcsim::cli
