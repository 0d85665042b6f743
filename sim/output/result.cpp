#include "sim/output/result.hpp"

#include "gcsim_commit.hpp"
#include "sim/input/atomic_write.hpp"
#include "sim/input/file_digest.hpp"
#include "sim/input/natural_order.hpp"
#include "sim/input/units.hpp"
#include "sim/trace/manifest.hpp"
#include "sim/training/plan.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace gcsim::output {
namespace {

nlohmann::json iteration_json(const training::IterationRecord& record, double samples) {
  nlohmann::json kernels = nlohmann::json::object();
  for (const auto& [name, seconds] : record.kernel_s)
    kernels[name] = seconds;
  nlohmann::json exposed = nlohmann::json::object();
  for (const auto& [name, seconds] : record.kernel_exposed_s)
    exposed[name] = seconds;
  nlohmann::json by_step = nlohmann::json::object();
  for (const auto& [label, bytes] : record.bytes_by_step)
    by_step[label] = bytes;
  nlohmann::json iteration = {
      {"iteration_time_s", record.iteration_s},
      {"throughput_samples_per_s", record.iteration_s > 0 ? samples / record.iteration_s : 0.0},
      {"compute_s", record.compute_s},
      {"compression_s", record.compression_s},
      {"compression_exposed_s", record.compression_exposed_s},
      {"compression_kernels_s", kernels},
      {"compression_exposed_kernels_s", exposed},
      {"communication_s", record.communication_s},
      {"communication_total_s", record.communication_total_s},
      {"bytes_sent_per_worker", record.bytes_sent_per_worker},
      {"bytes_sent_max_worker", record.bytes_sent_max_worker},
      {"bytes_sent_per_worker_by_step", by_step},
  };
  if (record.bytes_sent_per_server) {
    iteration["bytes_sent_per_server"] = *record.bytes_sent_per_server;
    iteration["bytes_sent_max_server"] = record.bytes_sent_max_server;
  }
  return iteration;
}

// An object's numbers by key in natural order, so that "stride 2" is listed
// before "stride 16" (JSON objects keep their keys as text sorts them).
std::vector<std::pair<std::string, double>> in_natural_order(const nlohmann::json& object) {
  std::vector<std::pair<std::string, double>> entries;
  for (auto it = object.begin(); it != object.end(); ++it)
    entries.emplace_back(it.key(), it->get<double>());
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return input::natural_less(a.first, b.first); });
  return entries;
}

// Mean over iterations of every number, recursing into objects (keys that
// appear in only some iterations count as zero in the others). Summed, then
// divided: the mean of equal values is that value (a sum of value/count
// made 44695848 bytes 44695847.999999344).
nlohmann::json mean_of(const nlohmann::json& iterations) {
  nlohmann::json mean = nlohmann::json::object();
  for (const nlohmann::json& iteration : iterations) {
    for (auto it = iteration.begin(); it != iteration.end(); ++it) {
      if (it->is_number()) {
        mean[it.key()] = mean.value(it.key(), 0.0) + it->get<double>();
      } else if (it->is_object() && it.key() != "compressor_info") {
        nlohmann::json& inner = mean[it.key()];
        if (inner.is_null())
          inner = nlohmann::json::object();
        for (auto field = it->begin(); field != it->end(); ++field)
          if (field->is_number())
            inner[field.key()] = inner.value(field.key(), 0.0) + field->get<double>();
      }
    }
  }
  const double count = static_cast<double>(iterations.size());
  for (auto& [key, value] : mean.items()) {
    if (value.is_number())
      value = value.get<double>() / count;
    else
      for (auto& [field, number] : value.items())
        number = number.get<double>() / count;
  }
  return mean;
}

// Whether the compressor's info of an iteration says `flag` (per bucket,
// every bucket's): "warmup", its own dense warm-up (IWP's, PowerSGD's
// before start_iteration); "momentum_in_update" (DGC's, Sketched-SGD's).
bool compressor_says(const nlohmann::json& iteration, const char* flag) {
  const nlohmann::json info = iteration.value("compressor_info", nlohmann::json::object());
  if (!info.is_object())
    return false;
  const nlohmann::json buckets = info.value("buckets", nlohmann::json::array());
  if (buckets.is_array() && !buckets.empty())
    return std::all_of(buckets.begin(), buckets.end(), [flag](const nlohmann::json& bucket) {
      return bucket.is_object() && bucket.value(flag, false);
    });
  return info.value(flag, false);
}

} // namespace

nlohmann::json make_result(const Scenario& scenario, const training::RunResult& run,
                           const cost::DeviceProfile& profile, const CompressionExtras& extras) {
  const int workers = scenario.platform.worker_count();
  const double samples = static_cast<double>(workers) * scenario.training.batch_per_worker;
  nlohmann::json iterations = nlohmann::json::array();
  for (size_t i = 0; i < run.iterations.size(); ++i) {
    nlohmann::json iteration = iteration_json(run.iterations[i], samples);
    // Only where stragglers were asked for: other results keep their fields.
    if (scenario.training.compute_variation > 0)
      iteration["straggler_wait_s"] = run.iterations[i].straggler_wait_s;
    if (extras.quality != nullptr) {
      const training::CompressionQuality& quality = (*extras.quality)[i];
      iteration["density_after_aggregation"] = quality.density_after_aggregation;
      iteration["fidelity"] = {{"cosine", quality.cosine},
                               {"rel_l2", quality.rel_l2},
                               {"energy_share", quality.energy_share}};
      iteration["compressor_info"] = quality.info;
    }
    if (extras.dense_baseline != nullptr) {
      double dense = extras.dense_baseline->iterations[i].iteration_s;
      iteration["dense_iteration_time_s"] = dense;
      iteration["speedup_vs_dense"] = dense / run.iterations[i].iteration_s;
    }
    iterations.push_back(std::move(iteration));
  }

  // The summary is the mean over the iterations after the warm-up of every
  // per-iteration field, except throughput and speedup, which are ratios of
  // mean times.
  const int warmup = scenario.training.warmup_iterations;
  for (int i = 0; i < warmup; ++i)
    iterations[static_cast<size_t>(i)]["warmup"] = true;
  nlohmann::json measured(iterations.begin() + warmup, iterations.end());
  nlohmann::json summary = mean_of(measured);
  double mean_time = summary["iteration_time_s"].get<double>();
  if (extras.dense_baseline != nullptr) {
    double dense = summary["dense_iteration_time_s"].get<double>();
    summary["speedup_vs_dense"] = dense / mean_time;
    // One worker sends nothing either way: no ratio (0 would say "sends
    // infinitely more").
    summary["compression_ratio"] =
        summary["bytes_sent_per_worker"].get<double>() > 0
            ? nlohmann::json(extras.dense_baseline->iterations.back().bytes_sent_per_worker /
                             summary["bytes_sent_per_worker"].get<double>())
            : nlohmann::json(nullptr);
  }
  summary["throughput_samples_per_s"] = mean_time > 0 ? samples / mean_time : 0.0;
  summary["workers"] = workers;
  summary["iterations"] = static_cast<int>(run.iterations.size());
  summary["warmup_iterations"] = warmup;
  summary["samples_per_iteration"] = samples;
  summary["parameters"] = scenario.workload.parameters();
  summary["gradient_bytes"] = scenario.workload.gradient_bytes();

  nlohmann::json buckets = nlohmann::json::array();
  for (const training::Bucket& bucket : run.buckets)
    buckets.push_back(
        {{"first_layer", scenario.workload.layers[static_cast<size_t>(bucket.first_layer)].name},
         {"last_layer", scenario.workload.layers[static_cast<size_t>(bucket.last_layer)].name},
         {"bytes", bucket.bytes}});

  nlohmann::json result = {
      {"gcsim_version", GCSIM_VERSION},
      {"gcsim_commit", GCSIM_COMMIT},
      {"scenario", scenario.resolved},
      {"model",
       {{"workload", scenario.workload.name},
        {"platform", scenario.platform.name},
        {"topology", net::topology_name(scenario.platform.topology)},
        {"network_model", scenario.platform.network.model},
        {"network_solver", net::solver_name(scenario.platform.network.solver)},
        {"device", profile.name()},
        {"allreduce", algorithm_name(scenario.training.allreduce)},
        {"compressor", extras.compressor_name},
        {"seed", scenario.seed}}},
      {"units", {{"time", "seconds"}, {"data", "bytes"}, {"throughput", "samples per second"}}},
      {"summary", summary},
      {"iterations", iterations},
      {"buckets", buckets},
  };
  // Every built-in topology has a node link (an XML platform has its own
  // links): its rate in bits, so that a rate written in bytes ("10GBps",
  // 80 Gbit/s) shows.
  if (scenario.platform.topology != net::Topology::simgrid_xml)
    result["model"]["link_bandwidth_bps"] = scenario.platform.link.bandwidth_Bps * 8;
  // Named where it is not the default, so that results from before it was a
  // choice read the same.
  if (scenario.training.broadcast != BroadcastAlgorithm::binomial)
    result["model"]["broadcast"] = broadcast_name(scenario.training.broadcast);
  if (scenario.platform.has_gpu_machines()) {
    // The machine's inside too, where a typo otherwise shows nowhere but
    // in the inlined platform.
    result["model"]["gpus_per_node"] = scenario.platform.gpus_per_node;
    result["model"]["gpu_link_bandwidth_bps"] = scenario.platform.gpu_link.bandwidth_Bps * 8;
  }
  if (scenario.platform.topology == net::Topology::simgrid_xml) // which hosts the workers are
    result["model"]["worker_hosts"] = run.worker_hosts;
  result["model"]["input_digests"] = input_digests(scenario);
  if (!extras.compressor_params.is_null())
    result["model"]["compressor_params"] = extras.compressor_params;
  if (!extras.gradient_source.is_null())
    result["model"]["gradients"] = extras.gradient_source;
  if (!extras.compression_scope.empty()) {
    result["model"]["compression_scope"] = extras.compression_scope;
    result["model"]["compression_parts"] = extras.compression_parts;
  }
  if (scenario.training.kernels_share_device)
    result["model"]["kernels_share_device"] = true;
  // The training loop as run, defaults included: `scenario` holds only what
  // the file and the --sets wrote. (The compression scope that ran is
  // `compression_scope` above.)
  const TrainingSpec& training = scenario.training;
  // Whole bytes as integers ("26214400", not "26214400.0").
  const auto bytes = [](double value) {
    return value == std::floor(value) && value < 9e15 ? nlohmann::json(static_cast<uint64_t>(value))
                                                      : nlohmann::json(value);
  };
  result["model"]["training"] = {{"iterations", training.iterations},
                                 {"warmup_iterations", training.warmup_iterations},
                                 {"batch_per_worker", training.batch_per_worker},
                                 {"bucket_size_bytes", bytes(training.bucket_bytes)},
                                 {"first_bucket_size_bytes", bytes(training.first_bucket_bytes)},
                                 {"overlap", training.overlap},
                                 {"allreduce", algorithm_name(training.allreduce)},
                                 {"broadcast", broadcast_name(training.broadcast)},
                                 {"kernels_share_device", training.kernels_share_device},
                                 {"compute_variation", training.compute_variation}};
  for (const training::Extrapolation& past : extras.extrapolated) {
    nlohmann::json entry = {{"kernel", past.kernel},
                            {"largest_n", past.largest_n},
                            {"profile_n_max", past.profile_n_max}};
    for (const training::Extrapolation::OutsideFit& size : past.outside) {
      entry[size.field] = size.priced;
      entry["profile_" + size.field] = size.fitted;
    }
    result["model"]["extrapolated_kernels"].push_back(std::move(entry));
  }
  // Which times the compute is: a trace's own (sim/training/plan.cpp) or the
  // device profile's (measured layer times or FLOP model). Said because a GPU
  // profile does not change the former.
  if (scenario.workload.measured_batch)
    result["model"]["compute_times"] = {{"source", "trace capture"},
                                        {"device", scenario.workload.measured_on},
                                        {"micro_batch", *scenario.workload.measured_batch},
                                        {"scaled_to_batch", scenario.training.batch_per_worker}};
  else {
    nlohmann::json times{{"source", "device profile"}};
    if (const cost::ModelTimes* measured_times =
            training::profile_model_times(scenario.workload, profile)) {
      times["measured_layer_times"] = true;
      times["measured_batches"] = measured_times->batches;
    } else if (!profile.all_model_times().empty()) {
      // Said because a name that does not match (a typo on either side)
      // silently priced the layers by their FLOPs.
      nlohmann::json others = nlohmann::json::array();
      for (const auto& entry : profile.all_model_times())
        others.push_back(entry.first);
      times["profile_measured_models"] = others;
    }
    if (!scenario.workload.compute_spec.empty())
      times["spec"] = scenario.workload.compute_spec; // a trace's layers, this spec's FLOPs
    result["model"]["compute_times"] = times;
  }
  return result;
}

nlohmann::json input_digests(const Scenario& scenario,
                             std::map<std::filesystem::path, std::string>* cache) {
  nlohmann::json digests = nlohmann::json::object();
  auto digest = [&digests, cache](const char* role, const std::filesystem::path& file) {
    if (file.empty())
      return;
    if (cache == nullptr) {
      digests[role] = input::file_digest(file);
      return;
    }
    auto [known, added] = cache->try_emplace(file);
    if (added)
      known->second = input::file_digest(file);
    digests[role] = known->second;
  };
  digest("device", scenario.device_file);
  if (scenario.trace_folder)
    digest("trace_manifest", *scenario.trace_folder / trace::kManifestFileName);
  else
    digest("workload", scenario.workload.source);
  digest("compute_spec", scenario.workload.compute_spec);
  digest("platform_xml", scenario.platform.xml_file);
  return digests;
}

std::string format_summary(const nlohmann::json& result) {
  const nlohmann::json& summary = result["summary"];
  const nlohmann::json& model = result["model"];
  std::string text;
  std::string links =
      model.contains("link_bandwidth_bps")
          ? units::format_bit_rate(model["link_bandwidth_bps"].get<double>() / 8) + " links, "
          : "";
  if (model.contains("gpus_per_node")) {
    const int gpus = model["gpus_per_node"].get<int>();
    const int machines = summary["workers"].get<int>() / gpus;
    links = fmt::format("{} machine{} x {} GPU{}, {} GPU links, {} NICs, ", machines,
                        machines == 1 ? "" : "s", gpus, gpus == 1 ? "" : "s",
                        units::format_bit_rate(model["gpu_link_bandwidth_bps"].get<double>() / 8),
                        units::format_bit_rate(model["link_bandwidth_bps"].get<double>() / 8));
  }
  text += fmt::format(
      "gcsim: {} | {} on {} ({}, {} worker{}, {}{}, {} allreduce{}) | {} | device {}\n",
      result["scenario"].value("name", ""), model["workload"].get<std::string>(),
      model["platform"].get<std::string>(), model["topology"].get<std::string>(),
      summary["workers"].get<int>(), summary["workers"].get<int>() == 1 ? "" : "s", links,
      model["network_model"].get<std::string>(), model["allreduce"].get<std::string>(),
      model.contains("broadcast") ? ", " + model["broadcast"].get<std::string>() + " broadcast"
                                  : std::string(),
      model["compressor"].get<std::string>(), model["device"].get<std::string>());
  const nlohmann::json compute_times = model.value("compute_times", nlohmann::json::object());
  if (compute_times.value("source", "") == "trace capture")
    text += fmt::format("  compute times measured at the trace's capture on {} (micro-batch {}, "
                        "scaled to {}); the device profile times the optimizer and the "
                        "compression kernels\n",
                        compute_times["device"].get<std::string>(),
                        compute_times["micro_batch"].get<int>(),
                        compute_times["scaled_to_batch"].get<int>());
  if (compute_times.value("measured_layer_times", false)) {
    std::string batches;
    for (const nlohmann::json& batch : compute_times["measured_batches"])
      batches += (batches.empty() ? "" : ", ") + batch.dump();
    text += fmt::format("  compute times measured on this device for this model at micro-batches "
                        "{} (others interpolated, or extrapolated past them)\n",
                        batches);
  }
  if (compute_times.contains("profile_measured_models")) {
    std::string models;
    for (const nlohmann::json& name : compute_times["profile_measured_models"])
      models += (models.empty() ? "" : ", ") + name.get<std::string>();
    text += fmt::format("  compute times from the FLOP model: the device profile measured {}, "
                        "not {}\n",
                        models, model["workload"].get<std::string>());
  }
  // Gradients that are not all the trace's own are said: workers
  // synthesized beyond the captured ones, captured iterations taken again.
  const nlohmann::json gradients = model.value("gradients", nlohmann::json::object());
  if (gradients.value("kind", "") == "trace") {
    std::string parts;
    const int workers = summary["workers"].get<int>();
    const int captured_workers = gradients["captured_workers"].get<int>();
    if (workers > captured_workers)
      parts += fmt::format("{} of the {} workers synthesized from the {} captured ({})",
                           workers - captured_workers, workers, captured_workers,
                           gradients["method"].get<std::string>());
    else if (workers < captured_workers) // which of them: a subset's union is smaller
      parts += fmt::format("the first {} of the {} captured workers", workers, captured_workers);
    if (gradients.value("iterations_taken_in_turn", false)) {
      const size_t captured = gradients["iterations"].size();
      parts += fmt::format("{}the trace's {} captured iterations taken in turn for {} simulated "
                           "(iteration i is captured iteration i mod {})",
                           parts.empty() ? "" : "; ", captured, summary["iterations"].get<int>(),
                           captured);
      // A residual built on the last captured iteration meets the first
      // one's (often much smaller) gradient: a dip no training run has.
      if (summary.contains("fidelity"))
        parts += fmt::format(", so from iteration {} on the residuals carried in were built on "
                             "later captured iterations than the gradient they meet: density and "
                             "fidelity there are not a training run's",
                             captured);
    }
    if (!parts.empty())
      text += "  gradients: " + parts + "\n";
  } else if (gradients.value("kind", "") == "replay") {
    // Otherwise a replay's summary reads like a run of its own: the
    // density and fidelity below are the recorded run's.
    text += "  replay of " + gradients["schedule"].get<std::string>() +
            ": the selection sizes, density and fidelity its run recorded, timed again on this "
            "platform and device without tensors\n";
    // The recorded run's own warning, which its density and fidelity carry.
    const nlohmann::json recorded = gradients.value("recorded_from", nlohmann::json::object());
    if (recorded.is_object() && recorded.value("kind", "") == "synthetic")
      text += "  gradients: synthetic (no trace) in the recorded run, " +
              recorded.value("note", std::string()) + "\n";
  } else if (gradients.value("kind", "") == "synthetic" && summary.contains("fidelity")) {
    // The fidelity and density lines below read like a model's; they are
    // the synthesizer's, as its own note in result.json says.
    text += "  gradients: synthetic (no trace), " + gradients.value("note", std::string()) + "\n";
  }
  // The title says "parameter_server allreduce" (the dense baseline's), but
  // a compressor's steps run among the workers: its speedup is partly the
  // change of algorithm.
  if (model.value("allreduce", "") == "parameter_server" && summary.contains("speedup_vs_dense"))
    text += fmt::format("  note: {}'s steps run among the workers (its allreduces a ring) and "
                        "leave the servers idle; the dense baseline pushes and pulls through "
                        "them\n",
                        model["compressor"].get<std::string>());
  // A compressor's own dense warm-up (IWP's, PowerSGD's plain allreduces)
  // inside the averaged iterations pulls the means towards dense. It is the
  // first iterations.
  const nlohmann::json& iterations = result["iterations"];
  const auto dense = std::distance(
      iterations.begin(),
      std::find_if_not(iterations.begin(), iterations.end(),
                       [](const nlohmann::json& i) { return compressor_says(i, "warmup"); }));
  if (dense > summary["warmup_iterations"].get<int64_t>()) {
    const int64_t counted = dense - summary["warmup_iterations"].get<int64_t>();
    text += fmt::format("  note: iterations 0 to {} are {}'s dense warm-up, and {} of them are in "
                        "these means (training.warmup_iterations {} leaves them out)\n",
                        dense - 1, model["compressor"].get<std::string>(), counted, dense);
  }
  if (summary.contains("fidelity") && !iterations.empty() &&
      compressor_says(iterations.back(), "momentum_in_update"))
    text += fmt::format("  note: {}'s update carries its momentum, the dense average it is "
                        "compared with does not: the fidelity measures both (\"momentum\": 0 "
                        "measures the selection alone)\n",
                        model["compressor"].get<std::string>());
  const nlohmann::json params = model.value("compressor_params", nlohmann::json::object());
  if (model.contains("extrapolated_kernels")) {
    const auto elements = [](double n) {
      return n >= 1e6 ? fmt::format("{:.1f}M", n / 1e6) : fmt::format("{:.0f}", n);
    };
    // "5" or "5-24": a range [least, most] of k, rows or columns.
    const auto range = [&elements](const nlohmann::json& bounds) {
      const double least = bounds[0].get<double>(), most = bounds[1].get<double>();
      return least == most ? elements(least) : elements(least) + "-" + elements(most);
    };
    std::string kernels;
    for (const nlohmann::json& past : model["extrapolated_kernels"]) {
      const double n = past["largest_n"].get<double>(),
                   fitted = past["profile_n_max"].get<double>();
      std::string where;
      if (n > fitted)
        where = fmt::format("at n up to {} (fitted to {})", elements(n), elements(fitted));
      for (const auto& [key, noun] :
           {std::pair{"k", ""}, std::pair{"rows", "rows"}, std::pair{"cols", "columns"}})
        if (past.contains(key)) {
          // "at k = 131072 (fitted at k = 1-26214)", "at 64 rows (fitted at 5)"
          const std::string priced = range(past[key]),
                            fitted_at = range(past["profile_" + std::string(key)]);
          where += (where.empty() ? "" : " and ") +
                   (*noun == '\0'
                        ? fmt::format("at {} = {} (fitted at {} = {})", key, priced, key, fitted_at)
                        : fmt::format("at {} {} (fitted at {})", priced, noun, fitted_at));
        }
      kernels += fmt::format("{}{} {}", kernels.empty() ? "" : ", ",
                             past["kernel"].get<std::string>(), where);
    }
    text += "  note: priced past the sizes the device profile was fitted on, so extrapolated: " +
            kernels + "\n";
  }
  // A compressor that sends more than dense (a count sketch at the
  // default 10 k columns past a density of about 2%) is seldom meant.
  if (summary.contains("compression_ratio") && summary["compression_ratio"].is_number() &&
      summary["compression_ratio"].get<double>() < 1) {
    std::string why;
    if (params.contains("rows") && params.contains("columns")) {
      // The sketch's size as the first iteration made it (per bucket, the
      // first bucket's), columns 0 being 10 k.
      nlohmann::json info =
          result["iterations"].empty()
              ? nlohmann::json()
              : result["iterations"][0].value("compressor_info", nlohmann::json());
      if (info.contains("buckets") && info["buckets"].is_array() && !info["buckets"].empty())
        info = info["buckets"][0];
      const std::string size =
          info.contains("sketch_columns")
              ? fmt::format(" of {} x {} floats a worker", params["rows"].get<int64_t>(),
                            info["sketch_columns"].get<int64_t>())
              : "";
      // Columns 0 are 10 k, so the density sizes the sketch too.
      const bool default_columns = params["columns"] == 0;
      why = ": it sends count sketches" + size + "; " +
            (default_columns ? "columns default to 10 k: fewer columns or a lower density send less"
                             : "fewer columns send less");
    }
    text += fmt::format("  note: sends more bytes than dense (compression ratio {:.2f}){}\n",
                        summary["compression_ratio"].get<double>(), why);
  }
  auto row = [&text](const char* label, const std::string& value) {
    text += fmt::format("  {:<48} {:>16}\n", label, value);
  };
  auto seconds = [&](const char* key) { return units::format_seconds(summary[key].get<double>()); };
  row("iteration time", seconds("iteration_time_s"));
  row("  compute (fwd + bwd + optimizer)", seconds("compute_s"));
  if (summary.contains("straggler_wait_s"))
    row("  waiting for the slowest worker", seconds("straggler_wait_s"));
  row("  compression not hidden (busiest worker)", seconds("compression_exposed_s"));
  row("  communication and waits not hidden", seconds("communication_s"));
  row("communication total (overlapped)", seconds("communication_total_s"));
  row("throughput",
      fmt::format("{:.1f} samples/s", summary["throughput_samples_per_s"].get<double>()));
  // Dense runs have no kernels to list.
  if (summary.contains("compression_kernels_s") && !summary["compression_kernels_s"].empty()) {
    row("compression kernels (mean per worker)", seconds("compression_s"));
    for (const auto& [name, kernel_s] : in_natural_order(summary["compression_kernels_s"]))
      row(("    " + name).c_str(), units::format_seconds(kernel_s));
  }
  row("bytes sent per worker", units::format_bytes(summary["bytes_sent_per_worker"].get<double>()));
  if (summary.contains("bytes_sent_per_worker_by_step"))
    for (const auto& [label, bytes] : in_natural_order(summary["bytes_sent_per_worker_by_step"]))
      row(("  " + label).c_str(), units::format_bytes(bytes));
  if (summary.contains("bytes_sent_per_server"))
    row("bytes sent per parameter server",
        units::format_bytes(summary["bytes_sent_per_server"].get<double>()));
  if (summary.contains("density_after_aggregation")) {
    row("density after aggregation",
        fmt::format("{:.6f}", summary["density_after_aggregation"].get<double>()));
    row("fidelity: cosine vs dense",
        fmt::format("{:.4f}", summary["fidelity"]["cosine"].get<double>()));
    row("fidelity: relative L2 error",
        fmt::format("{:.4f}", summary["fidelity"]["rel_l2"].get<double>()));
  }
  if (summary.contains("speedup_vs_dense")) {
    row("dense iteration time (same run)",
        units::format_seconds(summary["dense_iteration_time_s"].get<double>()));
    row("speedup vs dense", fmt::format("{:.2f}x", summary["speedup_vs_dense"].get<double>()));
    row("compression ratio (dense/sent)",
        summary["compression_ratio"].is_null()
            ? std::string("- (nothing sent)")
            // Two decimals below 10, so that 0.98 does not read 1.0.
            : fmt::format(summary["compression_ratio"].get<double>() < 10 ? "{:.2f}" : "{:.1f}",
                          summary["compression_ratio"].get<double>()));
  }
  row("gradient size", units::format_bytes(summary["gradient_bytes"].get<double>()));
  row("buckets", std::to_string(result["buckets"].size()));
  row("iterations simulated", std::to_string(summary["iterations"].get<int>()));
  return text;
}

std::string json_text(const nlohmann::json& document, int indent) {
  // Paths the user gave are recorded as given; one that is not UTF-8 gets
  // U+FFFD for its bad bytes rather than failing after the whole run.
  return document.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void write_json_file(const std::filesystem::path& file, const nlohmann::json& document,
                     int indent) {
  write_file_atomically(file, json_text(document, indent));
}

} // namespace gcsim::output
