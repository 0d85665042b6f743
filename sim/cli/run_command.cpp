// `gcsim run SCENARIO.json`: simulate a scenario, print a summary and write
// DIR/result.json.

#include "sim/cli/command.hpp"
#include "sim/cost/device_profile.hpp"
#include "sim/input/input_error.hpp"
#include "sim/output/result.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/training/plan.hpp"

#include <chrono>
#include <cstdio>
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
    app.add_option("scenario", scenario_file_, "Scenario JSON file")->required();
    app.add_option("--out", out_dir_,
                   "Folder for result.json (default: results/<scenario name>/)");
    app.add_option("--set", sets_,
                   "Override a scenario field by its dotted path, e.g. "
                   "--set platform.nodes=16 --set platform.link.bandwidth=10Gbps (repeatable)")
        ->take_all();
    app.add_option("--seed", seed_, "Override the scenario's seed");
    app.add_flag("--quiet", quiet_, "Print nothing on success");
  }

  int run() override {
    std::vector<Override> overrides;
    for (const std::string& text : sets_)
      overrides.push_back(parse_override(text));
    Scenario scenario = load_scenario(scenario_file_, overrides, seed_);
    cost::DeviceProfile profile = cost::DeviceProfile::load(scenario.device_file);
    check_compressor(scenario);

    training::IterationPlan plan = training::dense_plan(scenario, profile);
    const auto wall_start = std::chrono::steady_clock::now();
    const bool show_progress = isatty(STDERR_FILENO) != 0 && !quiet_;
    const int iterations = plan.iterations;
    auto progress = [&](int iteration, double clock) {
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
      if (show_progress && wall > 1.0)
        std::fprintf(stderr, "\r  iteration %d/%d, simulated %.3f s, wall %.1f s", iteration + 1,
                     iterations, clock, wall);
    };
    std::vector<training::RunResult> runs;
    try {
      runs = training::simulate(scenario.platform, {plan}, progress);
    } catch (const std::invalid_argument& error) {
      throw InputError(scenario.platform_source, "", error.what());
    }
    if (show_progress)
      std::fprintf(stderr, "\r%60s\r", "");

    nlohmann::json result = output::make_result(scenario, runs.front(), profile.name());
    std::string directory = out_dir_.empty() ? "results/" + scenario.name : out_dir_;
    output::write_result(directory, result);
    if (!quiet_) {
      std::fputs(output::format_summary(result).c_str(), stdout);
      std::printf("  result: %s/result.json\n", directory.c_str());
    }
    return 0;
  }

private:
  // Compression-aware runs arrive with the compressor integration; until
  // then only the dense baseline runs, and anything else is refused loudly.
  static void check_compressor(const Scenario& scenario) {
    std::string name = scenario.compressor["name"].get<std::string>();
    if (name != "dense")
      throw InputError(scenario.file.string(), "/compressor/name",
                       "unknown compressor \"" + name + "\"; this build simulates: dense");
    for (auto it = scenario.compressor.begin(); it != scenario.compressor.end(); ++it)
      if (it.key() != "name")
        throw InputError(scenario.file.string(), "/compressor/" + it.key(),
                         "unknown parameter of compressor \"dense\"");
  }

  std::string scenario_file_;
  std::string out_dir_;
  std::vector<std::string> sets_;
  std::optional<uint64_t> seed_;
  bool quiet_ = false;
};

const CommandRegistration registration{[] { return std::make_unique<RunCommand>(); }};

} // namespace
} // namespace gcsim::cli
