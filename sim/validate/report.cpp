#include "sim/validate/report.hpp"

#include "sim/input/paths.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace gcsim::validate {
namespace {

// A kind without points has no error (null), not an error of 0, which a
// check of "at most 5%" would pass.
nlohmann::json summary_entry(const std::vector<double>& measured,
                             const std::vector<double>& simulated) {
  return {{"points", measured.size()},
          {"geomean_error", measured.empty()
                                ? nlohmann::json(nullptr)
                                : nlohmann::json(geometric_mean_error(measured, simulated))}};
}

std::string bytes_label(uint64_t bytes) {
  char text[32];
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
    std::snprintf(text, sizeof text, "%llu MiB", static_cast<unsigned long long>(bytes >> 20));
  else if (bytes >= 1024 && bytes % 1024 == 0)
    std::snprintf(text, sizeof text, "%llu KiB", static_cast<unsigned long long>(bytes >> 10));
  else
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  return text;
}

// Appends printf-formatted text of any length: names, sources and labels
// come from the user's files, so a fixed buffer would cut them.
__attribute__((format(printf, 2, 3))) void append_format(std::string& text, const char* format,
                                                         ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  assert(length >= 0 && "a format the report wrote itself is valid");
  const size_t start = text.size();
  text.resize(start + static_cast<size_t>(length) + 1);
  std::vsnprintf(&text[start], static_cast<size_t>(length) + 1, format, again);
  va_end(again);
  text.resize(start + static_cast<size_t>(length));
}

} // namespace

double log_error(double measured, double simulated) {
  return std::fabs(std::log(simulated / measured));
}

double geometric_mean_error(const std::vector<double>& measured,
                            const std::vector<double>& simulated) {
  assert(!measured.empty() && measured.size() == simulated.size() &&
         "a geometric mean of no errors is no error, not 0");
  double sum = 0;
  for (size_t i = 0; i < measured.size(); ++i)
    sum += log_error(measured[i], simulated[i]);
  return std::exp(sum / static_cast<double>(measured.size())) - 1;
}

nlohmann::json make_report(const ValidationInput& input) {
  const MeasuredRun& run = *input.run;
  nlohmann::json report;
  report["measured_file"] = recorded_path(run.file);
  report["name"] = run.name;
  report["platform"] = {{"source", input.platform_source},
                        {"topology", net::topology_name(input.platform.topology)},
                        {"nodes", input.platform.worker_count()},
                        {"bandwidth_Bps", input.platform.link.bandwidth_Bps},
                        {"link_latency_s", input.platform.link.latency_s},
                        {"network_model", input.platform.network.model}};
  // What the fp16 trainings' and the float16 points' allreduce paid beside
  // the links, where it did.
  if (input.platform.float16_sum_s > 0)
    report["platform"]["float16_sum_s"] = input.platform.float16_sum_s;
  // A multi-GPU cluster's second tier: the machines' GPUs behind one NIC.
  if (input.platform.has_gpu_machines())
    report["platform"].update({{"machines", input.platform.nodes},
                               {"gpus_per_node", input.platform.gpus_per_node},
                               {"gpu_link_bandwidth_Bps", input.platform.gpu_link.bandwidth_Bps},
                               {"gpu_link_latency_s", input.platform.gpu_link.latency_s}});
  if (input.fit)
    report["fit"] = {
        {"alpha_s", input.fit->alpha_s},
        {"alpha_clamped", input.fit->alpha_clamped},
        // A star's rated links, which the fitted rate should
        // not pass (a multi-GPU cluster's inside links may).
        {"described_bandwidth_Bps", run.cluster.topology == net::Topology::star
                                        ? nlohmann::json(run.cluster.link.bandwidth_Bps)
                                        : nlohmann::json(nullptr)},
        {"bandwidth_Bps", input.fit->bandwidth_Bps()},
        {"points", input.fit->points},
        {"latency_points", input.fit->latency_points},
        {"bandwidth_points", input.fit->bandwidth_points},
        {"rms_relative_error", input.fit->rms_relative_error}};
  // The float16 sum's fit, where the run has float16 points: its figure
  // only where the points showed it.
  if (input.fit && input.fit->float16.points + input.fit->float16.smaller > 0) {
    const Float16SumFit& float16 = input.fit->float16;
    report["fit"].update({{"float16_points", float16.points},
                          {"float16_points_shown", float16.shown},
                          {"float16_points_smaller", float16.smaller}});
    if (float16.shown > 0)
      report["fit"]["float16_sum_s"] = float16.seconds_per_element;
  }
  report["error_measure"] = "relative_error = simulated / measured - 1; geomean_error = "
                            "exp(mean |ln(simulated / measured)|) - 1";

  // Large points apart by kind too: the ring ones the fit sees, and the
  // broadcasts and tree allreduces it never does.
  std::vector<double> all_m, all_s, large_m, large_s, ring_m, ring_s, broadcast_m, broadcast_s,
      tree_m, tree_s, float16_m, float16_s;
  nlohmann::json collectives = nlohmann::json::array();
  for (size_t i = 0; i < run.collectives.size(); ++i) {
    const CollectivePoint& point = run.collectives[i];
    const double simulated = input.collective_seconds[i];
    collectives.push_back({{"collective", collective_name(point.collective)},
                           {"algorithm", algorithm_name(point.algorithm)},
                           {"label", point_label(point)},
                           {"ranks", point.ranks},
                           {"bytes", point.bytes},
                           {"measured_s", point.seconds},
                           {"simulated_s", simulated},
                           {"relative_error", simulated / point.seconds - 1}});
    if (point.collective == Collective::broadcast && point.algorithm == Algorithm::ring)
      collectives.back()["chunk_bytes"] = point.chunk_bytes;
    // The rate a ring point's critical path ran at: one number per point that
    // shows whether the kinds share one bandwidth, as the model assumes.
    PathCost cost;
    const bool ring = ring_path_cost(point, cost);
    if (ring)
      collectives.back()["measured_path_rate_Bps"] = cost.bytes / point.seconds;
    if (const std::string role = input.fit ? fitted_to(point, *input.fit) : ""; !role.empty())
      collectives.back()["fitted_to"] = role;
    all_m.push_back(point.seconds);
    all_s.push_back(simulated);
    // The large float16 allreduces apart: their sums, not the links, can set
    // their pace (the float16 sum is fitted to them).
    if (point.dtype == DataType::float16) {
      if (point.bytes >= kBandwidthPointBytes) {
        float16_m.push_back(point.seconds);
        float16_s.push_back(simulated);
      }
      continue;
    }
    // The large collectives (issue 7's 5% target): those the bandwidth is fitted to.
    if (point.bytes >= kBandwidthPointBytes) {
      large_m.push_back(point.seconds);
      large_s.push_back(simulated);
      const bool broadcast = point.collective == Collective::broadcast;
      (ring ? ring_m : broadcast ? broadcast_m : tree_m).push_back(point.seconds);
      (ring ? ring_s : broadcast ? broadcast_s : tree_s).push_back(simulated);
    }
  }
  report["collectives"] = collectives;

  std::vector<double> dense_m, dense_s, compressed_m, compressed_s;
  nlohmann::json training = nlohmann::json::array();
  bool traced_compressed = false;
  for (size_t i = 0; i < run.training.size(); ++i) {
    const TrainingRun& t = run.training[i];
    const IterationTimes mean = t.steady_mean();
    const SimulatedIteration& sim = input.training[i];
    const bool dense = t.compressor == "dense";
    // The trace and profile of training_inputs are those of the runs without a scenario.
    traced_compressed = traced_compressed || (!dense && t.scenario.empty());
    // The script's phases: compute (forward + backward), compression, the
    // collectives' calls, and the rest (gradient flattening, decoding, the
    // optimizer). The simulation's compute gets compute + optimizer as input;
    // its communication is what the iteration adds beyond compute and
    // compression, so the measured one is taken the same way.
    const double measured_compute = mean.compute_s + mean.optimizer_s;
    const double measured_compression = dense ? 0.0 : mean.compression_s;
    const double measured_comm = mean.iteration_s - measured_compute - measured_compression;
    nlohmann::json measured = {
        {"iteration_s", mean.iteration_s},     {"compute_s", mean.compute_s},
        {"compression_s", mean.compression_s}, {"communication_s", mean.communication_s},
        {"optimizer_s", mean.optimizer_s},     {"rest_of_iteration_s", measured_comm}};
    if (t.bytes_sent_per_worker >= 0)
      measured["bytes_sent_per_worker"] = t.bytes_sent_per_worker;
    nlohmann::json simulated = {{"iteration_s", sim.iteration_s},
                                {"compute_s", sim.compute_s},
                                {"compression_s", sim.compression_s},
                                {"communication_s", sim.communication_s},
                                {"bytes_sent_per_worker", sim.bytes_sent_per_worker}};
    // A phase the run did not record (all of the iteration is then the rest)
    // has no error.
    nlohmann::json errors = {{"iteration_s", sim.iteration_s / mean.iteration_s - 1}};
    if (measured_compute > 0)
      errors["compute_s"] = sim.compute_s / measured_compute - 1;
    if (measured_comm > 0)
      errors["communication_s"] = sim.communication_s / measured_comm - 1;
    if (!dense && measured_compression > 0)
      errors["compression_s"] = sim.compression_s / measured_compression - 1;
    nlohmann::json entry = {
        {"name", t.name},
        {"compressor", t.compressor_params},
        {"ranks", t.ranks},
        {"iterations_compared", t.iterations.size() - static_cast<size_t>(t.warmup_iterations)},
        {"measured", measured},
        {"simulated", simulated},
        {"relative_error", errors}};
    if (!t.scenario.empty()) {
      entry["scenario"] = recorded_path(t.scenario);
    } else {
      // What the simulation took as this run's inputs (simulate_training's
      // rule), so that a reader need not work it out.
      entry["inputs"] = {{"compute", sim.compute_inputs}};
      if (!dense) {
        entry["simulated_compressor"] = simulated_compressor_params(t);
        entry["inputs"]["compression_kernels"] = sim.compression_inputs;
      }
    }
    training.push_back(entry);
    (dense ? dense_m : compressed_m).push_back(mean.iteration_s);
    (dense ? dense_s : compressed_s).push_back(sim.iteration_s);
  }
  report["training"] = training;
  if (traced_compressed)
    report["training_inputs"] = {
        {"gradients", input.gradient_trace},
        {"compression_kernels", "priced by the device profile " + input.device_profile +
                                    " from the sizes the compressor really processed, or scaled "
                                    "to the run's measured compression (each run's inputs)"},
        {"compute", "the measured forward, backward and optimizer means, or the run's "
                    "compute_alone on shared cores (each run's inputs)"}};
  std::vector<double> train_m = dense_m, train_s = dense_s;
  train_m.insert(train_m.end(), compressed_m.begin(), compressed_m.end());
  train_s.insert(train_s.end(), compressed_s.begin(), compressed_s.end());
  report["summary"] = {{"collectives_all", summary_entry(all_m, all_s)},
                       {"collectives_4MiB_and_more", summary_entry(large_m, large_s)},
                       {"ring_collectives_4MiB_and_more", summary_entry(ring_m, ring_s)},
                       {"broadcast_4MiB_and_more", summary_entry(broadcast_m, broadcast_s)},
                       {"tree_allreduce_4MiB_and_more", summary_entry(tree_m, tree_s)},
                       {"float16_allreduce_4MiB_and_more", summary_entry(float16_m, float16_s)},
                       {"training_dense_iteration", summary_entry(dense_m, dense_s)},
                       {"training_compressed_iteration", summary_entry(compressed_m, compressed_s)},
                       {"training_iteration", summary_entry(train_m, train_s)}};
  return report;
}

std::string format_report(const nlohmann::json& report) {
  std::string text;
  const nlohmann::json& platform = report["platform"];
  const std::string topology = platform.value("topology", "star");
  const std::string counted = topology == "star" ? "nodes" : "workers (" + topology + ")";
  append_format(text, "validate %s on %s: %d %s, %.2f Mbit/s, %.1f us per link",
                report["name"].get<std::string>().c_str(),
                platform["source"].get<std::string>().c_str(), platform["nodes"].get<int>(),
                counted.c_str(), platform["bandwidth_Bps"].get<double>() * 8 / 1e6,
                platform["link_latency_s"].get<double>() * 1e6);
  if (platform.contains("gpus_per_node")) {
    append_format(text, " between %d machines; inside each, %d GPUs on %.2f Mbit/s, %.1f us links",
                  platform["machines"].get<int>(), platform["gpus_per_node"].get<int>(),
                  platform["gpu_link_bandwidth_Bps"].get<double>() * 8 / 1e6,
                  platform["gpu_link_latency_s"].get<double>() * 1e6);
  }
  if (platform.contains("float16_sum_s"))
    append_format(text, ", a float16 sum of %.3g ns per element",
                  platform["float16_sum_s"].get<double>() * 1e9);
  text += '\n';
  if (report.contains("fit")) {
    const nlohmann::json& fit = report["fit"];
    append_format(text,
                  "  fit: alpha %.1f us per message, bandwidth %.2f Mbit/s (rms %.1f%% over %d "
                  "ring points; ",
                  fit["alpha_s"].get<double>() * 1e6, fit["bandwidth_Bps"].get<double>() * 8 / 1e6,
                  100 * fit["rms_relative_error"].get<double>(), fit["points"].get<int>());
    text += fit_basis(fit.value("latency_points", 0), fit.value("bandwidth_points", 0)) + ")\n";
    const nlohmann::json& described = fit["described_bandwidth_Bps"];
    if (described.is_number() &&
        fit["bandwidth_Bps"].get<double>() > 1.01 * described.get<double>()) {
      append_format(text,
                    "  fit: the bandwidth is above the described links' %.2f Mbit/s: the small "
                    "points' latency is more than the large ones pay, or the points are not the "
                    "collectives or sizes they are named as\n",
                    described.get<double>() * 8 / 1e6);
    }
    if (fit.contains("float16_points")) {
      Float16SumFit float16;
      float16.points = fit["float16_points"].get<int>();
      float16.shown = fit["float16_points_shown"].get<int>();
      float16.smaller = fit.value("float16_points_smaller", 0);
      float16.seconds_per_element = fit.value("float16_sum_s", 0.0);
      text += "  fit: " + float16_basis(float16) + "\n";
    }
    if (fit.value("alpha_clamped", false))
      text += "  fit: the latency came out negative and is set to 0, the bandwidth fitted alone: "
              "the points cannot tell a latency (give sizes from 8 bytes)\n";
  }
  // On a fitted platform, which points the fit saw (in sample) is a column.
  const bool fitted = report.contains("fit");
  if (!report["collectives"].empty())
    text +=
        std::string("  collective          ranks      bytes    measured_s  simulated_s   error  "
                    "path_Mbit/s") +
        (fitted ? "  fitted to" : "") + "\n";
  for (const nlohmann::json& c : report["collectives"]) {
    append_format(text, "  %-17s %5d %10s %13.6f %12.6f %+7.1f%%",
                  c["label"].get<std::string>().c_str(), c["ranks"].get<int>(),
                  bytes_label(c["bytes"].get<uint64_t>()).c_str(), c["measured_s"].get<double>(),
                  c["simulated_s"].get<double>(), 100 * c["relative_error"].get<double>());
    if (c.contains("measured_path_rate_Bps"))
      append_format(text, " %12.1f", c["measured_path_rate_Bps"].get<double>() * 8 / 1e6);
    else if (c.contains("fitted_to"))
      text += std::string(13, ' ');
    if (c.contains("fitted_to"))
      text += "  " + c["fitted_to"].get<std::string>();
    // Trailing spaces where a row has no rate and no fit.
    text.erase(text.find_last_not_of(' ') + 1);
    text += "\n";
  }
  if (!report["training"].empty()) {
    text += "  training     phase            measured_s  simulated_s   error\n";
    // The measured phases a profiler reports overlap (DDP's allreduces run
    // inside the backward pass): what the rows compare.
    const bool measured_compute =
        std::any_of(report["training"].begin(), report["training"].end(),
                    [](const nlohmann::json& t) { return !t.contains("scenario"); });
    text += std::string("  (compute: forward, backward and optimizer; communication: what the "
                        "iteration has beyond compute and compression") +
            (measured_compute ? "; a run without a scenario takes its compute from the measured "
                                "file, as its inputs.compute says"
                              : "") +
            ")\n";
  }
  for (const nlohmann::json& t : report["training"]) {
    const nlohmann::json& m = t["measured"];
    const nlohmann::json& s = t["simulated"];
    const std::string name = t["name"].get<std::string>();
    const bool dense = t["compressor"]["name"] == "dense";
    const struct {
      const char* phase;
      double measured;
      double simulated;
      bool shown;
    } rows[] = {
        {"iteration", m["iteration_s"].get<double>(), s["iteration_s"].get<double>(), true},
        {"compute", m["compute_s"].get<double>() + m["optimizer_s"].get<double>(),
         s["compute_s"].get<double>(), true},
        {"compression", m["compression_s"].get<double>(), s["compression_s"].get<double>(), !dense},
        {"communication", m["rest_of_iteration_s"].get<double>(),
         s["communication_s"].get<double>(), true}};
    for (const auto& row : rows) {
      if (!row.shown)
        continue;
      if (row.measured > 0)
        append_format(text, "  %-12s %-13s %13.6f %12.6f %+7.1f%%\n", name.c_str(), row.phase,
                      row.measured, row.simulated, 100 * (row.simulated / row.measured - 1));
      else
        append_format(text, "  %-12s %-13s %13.6f %12.6f\n", name.c_str(), row.phase, row.measured,
                      row.simulated);
    }
  }
  // float16 allreduces measured slower than float32 ones of the same size,
  // on a platform without a float16 sum: what --fit would derive from them
  // (from those of 4 MiB and more).
  if (!report.contains("fit") && !platform.contains("float16_sum_s")) {
    int slower = 0;
    for (const nlohmann::json& c : report["collectives"]) {
      if (c["label"] != "allreduce/float16" || c["bytes"].get<uint64_t>() < kBandwidthPointBytes)
        continue;
      for (const nlohmann::json& same : report["collectives"])
        if (same["label"] == "allreduce" && same["ranks"] == c["ranks"] &&
            same["bytes"] == c["bytes"] &&
            c["measured_s"].get<double>() > kFloat16SumShows * same["measured_s"].get<double>()) {
          ++slower;
          break;
        }
    }
    if (slower > 0)
      append_format(text,
                    "  %d float16 allreduce%s measured more than 5%% slower than the float32 one "
                    "of the same bytes, on a platform without a float16 sum: gloo's float16 sums "
                    "outlast the transfers (--fit derives the platform's float16_sum from these "
                    "points)\n",
                    slower, slower == 1 ? " is" : "s are");
  }
  const nlohmann::json& summary = report["summary"];
  // The points' errors above have a sign; these have none.
  text += "  geometric-mean error, either way (exp(mean |ln(simulated / measured)|) - 1):\n";
  for (const char* key :
       {"collectives_4MiB_and_more", "ring_collectives_4MiB_and_more", "broadcast_4MiB_and_more",
        "tree_allreduce_4MiB_and_more", "float16_allreduce_4MiB_and_more", "collectives_all",
        "training_dense_iteration", "training_compressed_iteration"}) {
    const nlohmann::json& entry = summary[key];
    if (entry["points"].get<int>() == 0)
      continue;
    const int points = entry["points"].get<int>();
    append_format(text, "    %-32s %5.1f%%  (%d point%s%s)\n", key,
                  100 * entry["geomean_error"].get<double>(), points, points == 1 ? "" : "s",
                  fitted && std::string(key) == "ring_collectives_4MiB_and_more"
                      ? ", in sample: the bandwidth's own"
                      : "");
  }
  return text;
}

} // namespace gcsim::validate
