// `gcsim validate MEASURED.json`: simulate the setup of a real run and print
// measured against simulated, per point and per phase, with the
// geometric-mean error; optionally calibrate the platform first (--fit).

#include "sim/cli/command.hpp"
#include "sim/input/atomic_write.hpp"
#include "sim/input/input_error.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/input/paths.hpp"
#include "sim/output/result.hpp"
#include "sim/scenario/platform_spec.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/sweep/process.hpp"
#include "sim/training/iteration_model.hpp"
#include "sim/validate/fit.hpp"
#include "sim/validate/measured_run.hpp"
#include "sim/validate/report.hpp"
#include "sim/validate/simulate.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>

namespace gcsim::cli {
namespace {

class ValidateCommand final : public Command {
public:
  std::string name() const override { return "validate"; }
  std::string description() const override {
    return "Compare a measured run (results/validation/README.md) with its simulation";
  }
  void configure(CLI::App& app) override {
    app.add_option("measured", measured_file_, "Measured-run JSON file")
        ->required()
        ->check(nonempty_path);
    app.add_option("--scenario", scenario_file_, "Simulate on this scenario's platform")
        ->check(nonempty_path);
    app.add_option("--platform", platform_file_,
                   "Simulate on this platform file (e.g. a calibrated one)")
        ->check(nonempty_path);
    app.add_flag(
        "--fit", fit_,
        "Calibrate the platform from the run's float32 ring collectives (latency from those below "
        "1 MiB, bandwidth from those of 4 MiB and more) and its float16 sum from the float16 "
        "allreduces of 4 MiB and more, and simulate on it");
    app.add_option("--out", out_file_, "With --fit: write the calibrated platform file here")
        ->check(nonempty_path);
    app.add_option("--json", json_file_, "Write the comparison as JSON here")->check(nonempty_path);
    app.add_option("--trace", trace_,
                   "Compressed runs without a scenario: the gradient trace the compressors run "
                   "on (its layers, and their shapes where the run gives them, must be the "
                   "measured model's)")
        ->check(nonempty_path)
        ->capture_default_str();
    app.add_option("--device", device_,
                   "Compressed runs without a scenario: the device profile that prices the "
                   "compression kernels, unless the run's measured compression time takes its "
                   "place (each run's inputs in the JSON)")
        ->check(nonempty_path)
        ->capture_default_str();
    app.add_flag("--quiet", quiet_, "Print nothing on success");
  }

  std::string out_of_memory_advice() const override { return kSimulationMemoryAdvice; }
  int run() override {
    if (!out_file_.empty() && !fit_)
      throw InputError("--out", "", "writes the calibrated platform: it needs --fit");
    if (fit_ + !platform_file_.empty() + !scenario_file_.empty() > 1)
      throw InputError(fit_ ? "--fit" : "--platform", "",
                       "choose one of --fit, --platform and --scenario");
    // --device and --trace as the training simulation reads them.
    validate::TrainingInputs training;
    training.trace = resolve_input_path(trace_, measured_file_);
    training.device = resolve_input_path(device_, measured_file_);
    training.measured_file = measured_file_;
    // Loaded before anything is written or simulated: what it reads is
    // what no output may be written over.
    std::optional<Scenario> scenario;
    if (!scenario_file_.empty())
      scenario = load_scenario(scenario_file_, {}, std::nullopt);
    std::vector<NamedFile> inputs{{"the measured file", measured_file_},
                                  {"--platform", platform_file_},
                                  {"--device", training.device},
                                  {"--trace", training.trace}};
    if (scenario) {
      const std::vector<NamedFile> read = scenario->input_files();
      inputs.insert(inputs.end(), read.begin(), read.end());
    }
    validate::MeasuredRun run = validate::read_measured_run(measured_file_);
    // A training run's scenario, and what it reads: --fit --out written over
    // one replaced it with the calibrated platform.
    for (size_t i = 0; i < run.training.size(); ++i)
      for (const NamedFile& read : run.training[i].scenario_inputs)
        inputs.push_back({"the file " + measured_file_ + " names at /training/" +
                              std::to_string(i) + "/scenario (" + read.argument + ")",
                          read.path});
    refuse_same_file({"--out", out_file_}, inputs);
    std::vector<NamedFile> json_others = inputs;
    json_others.push_back({"--out", out_file_});
    refuse_same_file({"--json", json_file_}, json_others);
    // Before the simulations, not after them; a folder made for an output
    // goes again if the validation is refused.
    MadeFolders made_folders;
    for (const std::string& output : {out_file_, json_file_})
      if (!output.empty())
        check_writable(output, &made_folders);

    validate::ValidationInput input;
    input.run = &run;
    input.platform = run.cluster;
    input.platform_source = "the measured cluster description";
    // Where a simulated iteration too long for any run is refused: the file
    // and field the platform came from.
    std::string platform_file = measured_file_;
    std::string platform_path = "/cluster";
    // The platform as a description, for the training runs `gcsim run` simulates.
    nlohmann::json description = run.cluster_description;
    if (fit_) {
      validate::FitResult fit = validate::fit_alpha_beta(run.collectives, measured_file_);
      fit.float16 = validate::fit_float16_sum(run.collectives, fit, run.cluster, measured_file_);
      input.platform = validate::calibrated_platform(fit, run.cluster, run.name + "-calibrated");
      input.platform_source = "the fit";
      platform_path = "/collectives"; // the points it was fitted to
      input.fit = fit;
      description = validate::platform_json(input.platform, fit, measured_file_);
    } else if (!platform_file_.empty()) {
      try {
        description = load_json_file(platform_file_);
        input.platform = read_platform_spec(description, platform_file_, "");
      } catch (const InputError& error) {
        throw InputError("--platform", "", error.what());
      }
      input.platform_source = recorded_path(platform_file_);
      platform_file = platform_file_;
      platform_path = "";
      fit_node_count(input.platform, run, platform_file_);
    } else if (scenario) {
      input.platform = scenario->platform;
      input.platform_source = recorded_path(scenario_file_);
      platform_file = scenario->platform_source;
      platform_path = scenario->platform_path();
      // The platform as the scenario resolved it, its file inlined.
      description = scenario->resolved["platform"];
      fit_node_count(input.platform, run, scenario->platform_source);
    }
    // As fit_node_count sized it, and with its SimGrid file wherever the
    // scenario that gets it lies.
    if (input.platform.topology == net::Topology::star)
      description["nodes"] = input.platform.nodes;
    if (input.platform.topology == net::Topology::simgrid_xml)
      description["xml"] = input.platform.xml_file;

    // Where the platform's float16 sum came from, for a float16 point it
    // makes too long: the points it was fitted to, else the field that gave it.
    std::string sum_path = platform_path + "/float16_sum";
    if (fit_)
      sum_path = input.fit->float16.shown > 0 ? "/collectives" : "/cluster/float16_sum";

    input.gradient_trace = recorded_path(training.trace);
    input.device_profile = recorded_path(training.device);
    try {
      input.collective_seconds = validate::simulate_collectives(input.platform, run.collectives);
      refuse_endless_points(run, input.collective_seconds, {platform_file, platform_path},
                            {platform_file, sum_path}, input.platform.float16_sum_s > 0);
      input.training = validate::simulate_training(input.platform, run.training, training);
      simulate_scenario_runs(run, description, input.training);
    } catch (const training::IterationTooLong& error) {
      throw training::too_long_input_error(error, input.platform, platform_file, platform_path);
    } catch (const std::invalid_argument& error) {
      throw InputError(platform_file, platform_path, error.what());
    }

    // Written only once everything is simulated, and together: a refused
    // validation leaves no calibrated platform behind, and a comparison is
    // never left beside another run's platform.
    nlohmann::json report = validate::make_report(input);
    std::vector<OutputFile> outputs;
    if (fit_ && !out_file_.empty())
      outputs.push_back(
          {out_file_, output::json_text(validate::platform_json(input.platform, *input.fit,
                                                                recorded_path(measured_file_)))});
    if (!json_file_.empty())
      outputs.push_back({json_file_, output::json_text(report)});
    write_files_atomically(outputs);
    made_folders.keep();
    if (!quiet_)
      std::fputs(validate::format_report(report).c_str(), stdout);
    return 0;
  }

private:
  // The same backstop as a training iteration's (training::IterationTooLong):
  // every figure within its bounds can still make a point no one means.
  struct Field {
    std::string file;
    std::string path;
  };
  // A float16 point is made that long by the platform's float16 sum where
  // it has one (`summed`), any other by the links.
  static void refuse_endless_points(const validate::MeasuredRun& run,
                                    const std::vector<double>& seconds, const Field& links,
                                    const Field& float16_sum, bool summed) {
    for (size_t p = 0; p < seconds.size(); ++p) {
      if (seconds[p] <= kLongestSeconds)
        continue;
      const validate::CollectivePoint& point = run.collectives[p];
      const std::string what = "collective point " + std::to_string(p) + " (" +
                               validate::point_label(point) + " of " + std::to_string(point.bytes) +
                               " bytes on " + std::to_string(point.ranks) + " ranks)";
      if (summed && point.dtype == validate::DataType::float16)
        throw InputError(float16_sum.file, float16_sum.path,
                         training::too_long_message(
                             what, seconds[p], "check the float16 sum its ring pays per element"));
      throw InputError(links.file, links.path, training::too_long_message(what, seconds[p]));
    }
  }

  // Training runs that name a scenario are simulated by `gcsim run` itself,
  // in child processes as a sweep's points are: the scenario's workload,
  // compute model, training loop and compressor on the validated platform,
  // for as many iterations as were measured, with the same warm-up.
  void simulate_scenario_runs(const validate::MeasuredRun& run, const nlohmann::json& platform,
                              std::vector<validate::SimulatedIteration>& simulated) const {
    std::vector<size_t> indices;
    for (size_t i = 0; i < run.training.size(); ++i)
      if (!run.training[i].scenario.empty())
        indices.push_back(i);
    if (indices.empty())
      return;
    const ScratchFolder scratch;
    const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe");
    std::vector<sweep::Job> jobs;
    std::vector<std::filesystem::path> outs;
    for (size_t i : indices) {
      const validate::TrainingRun& t = run.training[i];
      outs.push_back(scratch.path / ("run-" + std::to_string(i)));
      jobs.push_back(
          {{executable.string(), "run", t.scenario.string(), "--set", "platform=" + platform.dump(),
            "--set", "training.iterations=" + std::to_string(t.iterations.size()), "--set",
            "training.warmup_iterations=" + std::to_string(t.warmup_iterations), "--out",
            outs.back().string(), "--quiet"},
           scratch.path / ("run-" + std::to_string(i) + ".log")});
    }
    // Runs beside each other share the memory that --spill auto judges by.
    const int parallel =
        std::max(1, std::min(sweep::available_cores(), static_cast<int>(jobs.size())));
    if (parallel > 1) {
      const std::string share = sweep::memory_share_argument(static_cast<size_t>(parallel));
      for (sweep::Job& job : jobs)
        job.argv.insert(job.argv.end(), {"--memory-share", share});
    }
    std::vector<sweep::ExitStatus> statuses(jobs.size());
    sweep::run_jobs(
        jobs, parallel, [](size_t) {},
        [&statuses](size_t job, const sweep::ExitStatus& status) {
          statuses[job] = status;
          return true;
        });
    for (size_t j = 0; j < jobs.size(); ++j) {
      const std::string at = "/training/" + std::to_string(indices[j]) + "/scenario";
      if (statuses[j].code == 2 && statuses[j].signal == 0)
        throw refused_run(jobs[j], indices[j], sweep::last_line(jobs[j].log));
      if (!statuses[j].ok())
        throw std::runtime_error("gcsim run " + run.training[indices[j]].scenario.string() + " " +
                                 statuses[j].describe() + ": " + sweep::last_line(jobs[j].log));
      const nlohmann::json result = load_json_file(outs[j] / "result.json");
      const nlohmann::json& summary = result.at("summary");
      validate::SimulatedIteration& s = simulated[indices[j]];
      s.iteration_s = summary.at("iteration_time_s").get<double>();
      s.compute_s = summary.at("compute_s").get<double>();
      s.compression_s = summary.value("compression_s", 0.0);
      // As the measured side takes it: what the iteration adds beyond compute
      // and the kernels' mean time.
      s.communication_s = std::max(0.0, s.iteration_s - s.compute_s - s.compression_s);
      s.bytes_sent_per_worker = summary.at("bytes_sent_per_worker").get<double>();
    }
  }

  // A scenario run's refusal, said of the measured file. One that blames a
  // --set validate gave it (the measured iteration count, the platform)
  // names what it stands for: the user gave no --set.
  InputError refused_run(const sweep::Job& job, size_t index, const std::string& line) const {
    const std::string at = "/training/" + std::to_string(index);
    const std::string& scenario = job.argv[2];
    const std::vector<std::pair<std::string, std::string>> givens{
        {"training.iterations=", at + "/iterations"},
        {"training.warmup_iterations=", at + "/warmup_iterations"},
        {"platform=", at + "/scenario"}};
    for (size_t a = 3; a + 1 < job.argv.size(); ++a) {
      const std::string prefix = "--set " + job.argv[a + 1] + ": ";
      if (job.argv[a] != "--set" || line.compare(0, prefix.size(), prefix) != 0)
        continue;
      // What follows is the field validate set and why it was refused.
      std::string why = line.substr(prefix.size());
      if (!why.empty() && why.front() == '/' && why.find(": ") != std::string::npos)
        why = why.substr(why.find(": ") + 2);
      for (const auto& [setting, path] : givens)
        if (job.argv[a + 1].compare(0, setting.size(), setting) == 0)
          return InputError(measured_file_, path,
                            "simulating " + scenario +
                                (setting == "platform=" ? " on the validated platform: "
                                                        : " for these iterations: ") +
                                why);
    }
    return InputError(measured_file_, at + "/scenario", line);
  }

  // A folder of its own under the temporary directory, removed with all it
  // holds when validate is done with it.
  struct ScratchFolder {
    std::filesystem::path path;
    ScratchFolder() {
      std::string name =
          (std::filesystem::temp_directory_path() / "gcsim-validate-XXXXXX").string();
      if (mkdtemp(name.data()) == nullptr)
        throw std::runtime_error("cannot make a temporary folder " + name + ": " +
                                 std::strerror(errno));
      path = name;
    }
    ~ScratchFolder() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
    ScratchFolder(const ScratchFolder&) = delete;
    ScratchFolder& operator=(const ScratchFolder&) = delete;
  };

  // A star platform is the same cluster at any size: take the run's node
  // count. Other topologies must already have enough workers.
  static void fit_node_count(net::PlatformSpec& platform, const validate::MeasuredRun& run,
                             const std::string& source) {
    const int needed = run.cluster.worker_count();
    if (platform.topology == net::Topology::star) {
      platform.nodes = needed;
      return;
    }
    if (platform.worker_count() != needed)
      throw InputError(source, "/nodes",
                       "the measured run has " + std::to_string(needed) +
                           " workers, the platform " + std::to_string(platform.worker_count()));
  }

  std::string measured_file_;
  std::string scenario_file_;
  std::string platform_file_;
  std::string out_file_;
  std::string json_file_;
  std::string trace_ = "workloads/traces/fmnist-cnn-16w";
  std::string device_ = "platforms/devices/cpu-amd-epyc-zen4.json";
  bool fit_ = false;
  bool quiet_ = false;
};

const CommandRegistration registration{[] { return std::make_unique<ValidateCommand>(); }};

} // namespace
} // namespace gcsim::cli
