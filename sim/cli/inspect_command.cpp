// `gcsim inspect TRACE [--json FILE] [--iteration I]`: what a gradient trace
// holds, layer by layer: parameter count, gradient norm, the share of the
// squared mass in the top 1% of elements, how much the workers' top-1% index
// sets overlap (which decides gradient build-up in sparse allreduce), and the
// measured forward/backward times.

#include "sim/cli/command.hpp"
#include "sim/input/atomic_write.hpp"
#include "sim/input/input_error.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/input/paths.hpp"
#include "sim/output/result.hpp"
#include "sim/trace/statistics.hpp"
#include "sim/trace/trace.hpp"
#include "sim/trace/workload.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/printf.h>
#include <nlohmann/json.hpp>

namespace gcsim::cli {
namespace {

constexpr double kTopFraction = 0.01;

std::string milliseconds(const std::optional<double>& seconds) {
  return seconds ? fmt::format("{:.3f}", *seconds * 1e3) : std::string("-");
}

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// A statistics-only trace's figures for one captured iteration (`wanted`, or
// the first): statistics.json beside its manifest, which gcsim inspect
// computed from the full trace (scripts/trace_tools/make_stats_trace.py).
// Empty when the trace has no such file; a file that does not match the
// manifest layer for layer is refused.
std::optional<std::pair<int64_t, std::vector<trace::LayerStatistics>>>
stored_statistics(const trace::Manifest& manifest, std::optional<int64_t> wanted) {
  const std::filesystem::path file = manifest.folder / "statistics.json";
  std::error_code error;
  if (!std::filesystem::exists(file, error))
    return std::nullopt;
  const nlohmann::json document = load_json_file(file);
  ObjectReader reader(document, file.string(), "");
  reader.string_or("source", "");
  if (reader.has("definitions"))
    reader.object("definitions");
  if (reader.number("top_fraction") != kTopFraction)
    reader.fail("top_fraction", "expected 0.01, the top fraction gcsim inspect shows");
  const nlohmann::json& iterations = reader.require("iterations");
  if (!iterations.is_array() || iterations.empty())
    reader.fail("iterations", "expected a non-empty array of captured iterations");
  reader.finish();
  std::string listed;
  for (size_t i = 0; i < iterations.size(); ++i) {
    ObjectReader entry(iterations[i], file.string(), "/iterations/" + std::to_string(i));
    const int64_t iteration = entry.integer("iteration", 0, INT64_MAX);
    listed += (listed.empty() ? "" : ", ") + std::to_string(iteration);
    if (wanted ? iteration != *wanted : i > 0)
      continue;
    const nlohmann::json& layers = entry.require("layers");
    if (!layers.is_array() || layers.size() != manifest.layers.size())
      entry.fail("layers",
                 "expected the manifest's " + std::to_string(manifest.layers.size()) + " layers");
    std::vector<trace::LayerStatistics> shown;
    for (size_t j = 0; j < layers.size(); ++j) {
      ObjectReader layer(layers[j], file.string(),
                         entry.path_of("layers") + "/" + std::to_string(j));
      const trace::TraceLayer& expected = manifest.layers[j];
      if (layer.string("name") != expected.name)
        layer.fail("name",
                   "expected \"" + expected.name + "\", the manifest's layer " + std::to_string(j));
      trace::LayerStatistics stats;
      stats.params = layer.integer("params", expected.params, expected.params);
      stats.k = layer.integer("k", 1, expected.params);
      // What the full trace's figures can be: a hand-edited file printed a
      // negative norm or a 300-digit overlap.
      const auto share = [&layer](const char* key) {
        const double value = layer.number(key);
        if (!(value >= 0 && value <= 1))
          layer.fail(key, fmt::format("expected a share in [0, 1], got {}", value));
        return value;
      };
      stats.norm = layer.number("norm");
      if (!(stats.norm >= 0 && std::isfinite(stats.norm)))
        layer.fail("norm", fmt::format("expected a finite norm of 0 or more, got {}", stats.norm));
      stats.top_mass = share("top_mass");
      // One worker has no pair to compare: inspect --json writes null.
      if (manifest.workers < 2 && layer.has("overlap") && layer.require("overlap").is_null())
        layer.allow("overlap");
      else
        stats.overlap = share("overlap");
      layer.finish();
      shown.push_back(stats);
    }
    entry.finish();
    return std::make_pair(iteration, std::move(shown));
  }
  throw InputError("--iteration", "",
                   std::to_string(*wanted) + " is not in " + file.string() + "; it has: " + listed);
}

class InspectCommand final : public Command {
public:
  std::string name() const override { return "inspect"; }
  std::string description() const override {
    return "Show a gradient trace layer by layer: parameters, gradient norm, top-1% mass, "
           "top-1% overlap between workers, measured forward/backward times";
  }
  void configure(CLI::App& app) override {
    app.add_option("trace", trace_path_, "trace folder (or its manifest.json)")
        ->required()
        ->check(nonempty_path);
    app.add_option("--json", json_path_, "also write the statistics as JSON to this file")
        ->check(nonempty_path);
    // Checked as text: CLI11 took "" for 0 and saturated a number past 2^63.
    app.add_option("--iteration", iteration_,
                   "training iteration to inspect (one of the captured ones; default: the first)")
        ->transform(integer_in(0, std::numeric_limits<long>::max()));
  }

  int run() override {
    const trace::Trace trace = trace::Trace::open(trace_path_);
    const trace::Manifest& manifest = trace.manifest();
    const trace::TraceWorkload workload = trace::workload_from_trace(manifest);
    const std::filesystem::path folder = std::filesystem::path(manifest.file).parent_path();
    refuse_same_file({"--json", json_path_}, {{"the trace folder", folder.empty() ? "." : folder}});
    // Printed only once every figure is in: a bad tensor found halfway must
    // not leave half a table on stdout.
    std::string text;

    nlohmann::json report = {{"trace", recorded_path(trace_path_)},
                             {"model", manifest.model},
                             {"dataset", manifest.dataset},
                             {"workers", manifest.workers},
                             {"micro_batch", manifest.micro_batch},
                             {"dtype", trace::dtype_name(manifest.dtype)},
                             {"total_params", manifest.total_params},
                             {"iterations", manifest.iterations},
                             {"has_tensors", manifest.has_tensors},
                             {"top_fraction", kTopFraction},
                             {"optimizer", manifest.optimizer},
                             {"learning_rate", manifest.learning_rate},
                             {"seed", manifest.seed},
                             {"input_shape", manifest.input_shape}};
    std::string input;
    for (int64_t extent : manifest.input_shape)
      input += (input.empty() ? " (input " : "x") + std::to_string(extent);
    if (!input.empty())
      input += ')';
    text += fmt::sprintf("trace     %s\nmodel     %s on %s%s, %lld parameters in %zu tensors\n",
                         trace_path_.c_str(), manifest.model.c_str(), manifest.dataset.c_str(),
                         input.c_str(), static_cast<long long>(manifest.total_params),
                         manifest.layers.size());
    text += fmt::sprintf(
        "capture   %lld workers x micro-batch %lld, %s, %s lr %g, seed %lld, iterations",
        static_cast<long long>(manifest.workers), static_cast<long long>(manifest.micro_batch),
        trace::dtype_name(manifest.dtype).c_str(), manifest.optimizer.c_str(),
        manifest.learning_rate, static_cast<long long>(manifest.seed));
    for (int64_t it : manifest.iterations)
      text += fmt::sprintf(" %lld", static_cast<long long>(it));
    text += '\n';
    if (workload.has_times && manifest.timing) {
      const trace::CaptureTiming& timing = *manifest.timing;
      text += fmt::sprintf(
          "timing    %s (%s, %lld %s), times per micro-batch of %lld", timing.device.c_str(),
          timing.cpu.c_str(), static_cast<long long>(timing.threads),
          timing.threads == 1 ? "thread" : "threads", static_cast<long long>(timing.micro_batch));
      if (timing.samples > 0)
        text += fmt::sprintf(", mean of %lld passes", static_cast<long long>(timing.samples));
      text += '\n';
    }

    std::optional<size_t> index;
    std::optional<std::pair<int64_t, std::vector<trace::LayerStatistics>>> stored;
    if (manifest.has_tensors) {
      index = iteration_index(manifest);
      report["iteration"] = manifest.iterations[*index];
      text += fmt::sprintf("iteration %lld (top set: 1%% of each layer's elements)\n\n",
                           static_cast<long long>(manifest.iterations[*index]));
    } else if ((stored = stored_statistics(manifest, iteration_))) {
      report["iteration"] = stored->first;
      report["statistics_from"] = "statistics.json";
      text += fmt::sprintf("iteration %lld (top set: 1%% of each layer's elements), from "
                           "statistics.json: this trace holds no gradient tensors\n\n",
                           static_cast<long long>(stored->first));
    } else {
      // Nothing shown depends on an iteration: one asked for would be ignored.
      if (iteration_)
        throw InputError("--iteration", "",
                         manifest.file + " holds statistics only, no gradient tensors and no "
                                         "statistics.json: there is no iteration to choose");
      text += "statistics only: this trace holds no gradient tensors\n\n";
    }

    // Times belong to modules; the table shows them on a module's first tensor.
    std::map<std::string, const trace::WorkloadLayer*> by_module;
    for (const trace::WorkloadLayer& layer : workload.layers)
      by_module[layer.name] = &layer;

    std::vector<trace::MappedNpy> files;
    if (index)
      for (int64_t w = 0; w < manifest.workers; ++w)
        files.push_back(trace.map_gradient(*index, w));
    trace::SliceReader read = [&](int64_t worker, int64_t offset, int64_t count, float* out) {
      const trace::MappedNpy& file = files[static_cast<size_t>(worker)];
      size_t bad = file.read_float32(static_cast<size_t>(offset), static_cast<size_t>(count), out);
      if (bad != trace::MappedNpy::npos)
        trace.fail_unusable(file, bad, out[bad - static_cast<size_t>(offset)]);
    };

    size_t name_width = 12; // "whole passes"
    for (const trace::TraceLayer& layer : manifest.layers)
      name_width = std::max(name_width, layer.name.size());
    // One line of the table: a name, then six columns.
    const auto row = [&text, name_width](const std::string& name, const auto& params,
                                         const std::string& norm, const std::string& mass,
                                         const std::string& overlap, const std::string& forward,
                                         const std::string& backward) {
      text += fmt::format("{:<{}}  {:>10}  {:>11}  {:>9}  {:>9}  {:>9}  {:>9}\n", name, name_width,
                          params, norm, mass, overlap, forward, backward);
    };
    row("layer", "params", "grad norm", "top1% mass", "top1% ovl", "fwd ms", "bwd ms");
    nlohmann::json layers = nlohmann::json::array();
    std::string previous_module;
    for (size_t j = 0; j < manifest.layers.size(); ++j) {
      const trace::TraceLayer& layer = manifest.layers[j];
      nlohmann::json entry = {{"name", layer.name},
                              {"module", layer.module},
                              {"shape", layer.shape},
                              {"params", layer.params},
                              {"offset", layer.offset}};
      std::string norm = "-", mass = "-", overlap = "-";
      std::optional<trace::LayerStatistics> stats;
      if (index) {
        stats = trace::layer_statistics(read, manifest.workers, layer.offset, layer.params,
                                        kTopFraction);
      } else if (stored) {
        stats = stored->second[j];
      }
      if (stats) {
        entry["k"] = stats->k;
        entry["norm"] = stats->norm;
        entry["top_mass"] = stats->top_mass;
        norm = fmt::format("{:.4e}", stats->norm);
        mass = fmt::format("{:.3f}", stats->top_mass);
        // One worker has no pair to compare: not a perfect agreement of 1.
        if (manifest.workers >= 2) {
          entry["overlap"] = stats->overlap;
          overlap = fmt::format("{:.3f}", stats->overlap);
        } else {
          entry["overlap"] = nullptr;
        }
      }
      std::string forward = "", backward = "";
      auto module = by_module.find(layer.module);
      if (layer.module != previous_module && module != by_module.end()) {
        forward = milliseconds(module->second->forward_s);
        backward = milliseconds(module->second->backward_s);
      }
      previous_module = layer.module;
      layers.push_back(entry);
      row(layer.name, layer.params, norm, mass, overlap, forward, backward);
    }
    report["layers"] = layers;

    nlohmann::json modules = nlohmann::json::array();
    double forward_total = 0, backward_total = 0;
    for (const trace::WorkloadLayer& layer : workload.layers) {
      modules.push_back({{"name", layer.name},
                         {"type", layer.type},
                         {"params", layer.params},
                         {"offset", layer.offset},
                         {"forward_s", optional_json(layer.forward_s)},
                         {"backward_s", optional_json(layer.backward_s)}});
      forward_total += layer.forward_s.value_or(0);
      backward_total += layer.backward_s.value_or(0);
    }
    report["workload_layers"] = modules;
    const auto if_timed = [&](double seconds) {
      return workload.has_times ? std::optional<double>(seconds) : std::nullopt;
    };
    row("total", manifest.total_params, "", "", "", milliseconds(if_timed(forward_total)),
        milliseconds(if_timed(backward_total)));
    // The whole passes include what no module's hooks see (the loss, the
    // hooks themselves); gcsim charges the modules' times, so show the gap.
    const std::optional<trace::CaptureTiming>& timing = manifest.timing;
    const bool whole_passes =
        workload.has_times && timing && timing->forward_total_s > 0 && timing->backward_total_s > 0;
    if (whole_passes)
      row("whole passes", "", "", "", "", milliseconds(timing->forward_total_s),
          milliseconds(timing->backward_total_s));
    text += "\ngrad norm: each worker's L2 norm of the layer's gradient, mean over workers (not "
            "the norm of their mean); top1% mass: the share of its squared norm in its top k "
            "elements by magnitude, k = 1% of the layer's elements rounded up (so more than 1% "
            "of a small layer: 1 of a 16-element bias), mean over workers; top1% ovl: |top_a & "
            "top_b| / k over pairs of workers, mean (\"-\" with one worker)\n";
    if (whole_passes)
      text += "whole passes: the captured forward and backward passes timed whole (the loss and "
              "the hooks included); gcsim charges the modules' times, the total above\n";
    if (workload.has_times) {
      report["timing"] = {{"micro_batch", workload.micro_batch},
                          {"device", workload.timing_device},
                          {"forward_s", forward_total},
                          {"backward_s", backward_total}};
      if (whole_passes) {
        report["timing"]["whole_forward_s"] = timing->forward_total_s;
        report["timing"]["whole_backward_s"] = timing->backward_total_s;
      }
      // What the text's timing line says too: where the times were taken.
      if (timing) {
        report["timing"]["cpu"] = timing->cpu;
        report["timing"]["threads"] = timing->threads;
      }
      if (timing && timing->samples > 0)
        report["timing"]["samples"] = timing->samples;
      if (timing && !timing->method.empty())
        report["timing"]["method"] = timing->method;
    }
    if (manifest.provenance.contains("loss"))
      report["loss"] = manifest.provenance["loss"];
    if (!manifest.capture_command.empty())
      report["capture_command"] = manifest.capture_command;

    if (!json_path_.empty())
      write_json(report);
    std::fputs(text.c_str(), stdout);
    return 0;
  }

private:
  size_t iteration_index(const trace::Manifest& manifest) const {
    if (!iteration_)
      return 0;
    for (size_t i = 0; i < manifest.iterations.size(); ++i)
      if (manifest.iterations[i] == *iteration_)
        return i;
    std::string captured;
    for (int64_t it : manifest.iterations)
      captured += (captured.empty() ? "" : ", ") + std::to_string(it);
    throw InputError("--iteration", "",
                     std::to_string(*iteration_) + " was not captured in " + manifest.file +
                         "; captured: " + captured);
  }

  void write_json(const nlohmann::json& report) const {
    output::write_json_file(json_path_, report, 1);
  }

  std::string trace_path_;
  std::string json_path_;
  std::optional<int64_t> iteration_;
};

const CommandRegistration registration{[] { return std::make_unique<InspectCommand>(); }};

} // namespace
} // namespace gcsim::cli
