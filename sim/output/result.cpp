#include "sim/output/result.hpp"

#include "sim/input/units.hpp"

#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace gcsim::output {
namespace {

nlohmann::json iteration_json(const training::IterationRecord& record, double samples) {
  return {
      {"iteration_time_s", record.iteration_s},
      {"throughput_samples_per_s", record.iteration_s > 0 ? samples / record.iteration_s : 0.0},
      {"compute_s", record.compute_s},
      {"compression_s", 0.0},
      {"communication_s", record.communication_s},
      {"communication_total_s", record.communication_total_s},
      {"bytes_sent_per_worker", record.bytes_sent_per_worker},
      {"bytes_sent_max_worker", record.bytes_sent_max_worker},
  };
}

} // namespace

nlohmann::json make_result(const Scenario& scenario, const training::RunResult& run,
                           const std::string& device_name) {
  const int workers = scenario.platform.worker_count();
  const double samples = static_cast<double>(workers) * scenario.training.batch_per_worker;
  nlohmann::json iterations = nlohmann::json::array();
  for (const training::IterationRecord& record : run.iterations)
    iterations.push_back(iteration_json(record, samples));

  // The summary is the mean over iterations of every per-iteration field,
  // except throughput, which is samples over mean time.
  nlohmann::json summary = nlohmann::json::object();
  for (auto it = iterations.front().begin(); it != iterations.front().end(); ++it) {
    double sum = 0;
    for (const nlohmann::json& iteration : iterations)
      sum += iteration[it.key()].get<double>();
    summary[it.key()] = sum / static_cast<double>(iterations.size());
  }
  double mean_time = summary["iteration_time_s"].get<double>();
  summary["throughput_samples_per_s"] = mean_time > 0 ? samples / mean_time : 0.0;
  summary["workers"] = workers;
  summary["iterations"] = static_cast<int>(run.iterations.size());
  summary["samples_per_iteration"] = samples;
  summary["parameters"] = scenario.workload.parameters();
  summary["gradient_bytes"] = scenario.workload.gradient_bytes();

  nlohmann::json buckets = nlohmann::json::array();
  for (const training::Bucket& bucket : run.buckets)
    buckets.push_back({{"first_layer", scenario.workload.layers[static_cast<size_t>(bucket.first_layer)].name},
                       {"last_layer", scenario.workload.layers[static_cast<size_t>(bucket.last_layer)].name},
                       {"bytes", bucket.bytes}});

  return {
      {"gcsim_version", GCSIM_VERSION_STRING},
      {"scenario", scenario.resolved},
      {"model",
       {{"workload", scenario.workload.name},
        {"platform", scenario.platform.name},
        {"topology", net::topology_name(scenario.platform.topology)},
        {"network_model", scenario.platform.network.model},
        {"device", device_name},
        {"allreduce", algorithm_name(scenario.training.allreduce)},
        {"compressor", scenario.compressor.value("name", "dense")},
        {"seed", scenario.seed}}},
      {"units", {{"time", "seconds"}, {"data", "bytes"}, {"throughput", "samples per second"}}},
      {"summary", summary},
      {"iterations", iterations},
      {"buckets", buckets},
  };
}

std::string format_summary(const nlohmann::json& result) {
  const nlohmann::json& summary = result["summary"];
  const nlohmann::json& model = result["model"];
  std::string text;
  text += fmt::format("gcsim: {} | {} on {} ({}, {} workers, {}) | {} | device {}\n",
                      result["scenario"].value("name", ""), model["workload"].get<std::string>(),
                      model["platform"].get<std::string>(), model["topology"].get<std::string>(),
                      summary["workers"].get<int>(), model["network_model"].get<std::string>(),
                      model["compressor"].get<std::string>(), model["device"].get<std::string>());
  auto row = [&text](const char* label, const std::string& value) {
    text += fmt::format("  {:<34} {:>16}\n", label, value);
  };
  auto seconds = [&](const char* key) { return units::format_seconds(summary[key].get<double>()); };
  row("iteration time", seconds("iteration_time_s"));
  row("  compute (fwd + bwd + optimizer)", seconds("compute_s"));
  row("  compression", seconds("compression_s"));
  row("  communication not hidden", seconds("communication_s"));
  row("communication total (overlapped)", seconds("communication_total_s"));
  row("throughput", fmt::format("{:.1f} samples/s", summary["throughput_samples_per_s"].get<double>()));
  row("bytes sent per worker", units::format_bytes(summary["bytes_sent_per_worker"].get<double>()));
  row("gradient size", units::format_bytes(summary["gradient_bytes"].get<double>()));
  row("buckets", std::to_string(result["buckets"].size()));
  row("iterations simulated", std::to_string(summary["iterations"].get<int>()));
  return text;
}

void write_result(const std::filesystem::path& directory, const nlohmann::json& result) {
  std::filesystem::create_directories(directory);
  const std::filesystem::path final_path = directory / "result.json";
  const std::filesystem::path temporary = directory / ".result.json.partial";
  {
    std::ofstream stream(temporary, std::ios::trunc);
    if (!stream)
      throw std::runtime_error("cannot write " + temporary.string());
    stream << result.dump(1) << '\n';
    if (!stream.flush())
      throw std::runtime_error("cannot write " + temporary.string());
  }
  std::filesystem::rename(temporary, final_path);
}

} // namespace gcsim::output
