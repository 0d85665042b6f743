#include "sim/validate/measured_run.hpp"

#include "compressors/registry.hpp"
#include "sim/input/input_error.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/input/paths.hpp"
#include "sim/scenario/platform_spec.hpp"
#include "sim/scenario/scenario.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gcsim::validate {
namespace {

CollectivePoint read_point(const nlohmann::json& json, const std::string& file,
                           const std::string& path) {
  ObjectReader reader(json, file, path);
  reader.allow("samples_s");
  reader.string_or("comment", "");
  CollectivePoint point;
  point.collective = reader.named(
      "collective", {Collective::allreduce, Collective::allgather, Collective::broadcast},
      collective_name);
  // Only the algorithms gloo and NCCL run are modelled here; anything else
  // would be simulated as something it is not.
  const Algorithm fallback = default_algorithm(point.collective);
  switch (point.collective) {
  case Collective::allreduce:
    point.algorithm =
        reader.named_or("algorithm", {Algorithm::ring, Algorithm::tree}, algorithm_name, fallback);
    break;
  case Collective::allgather:
    point.algorithm = reader.named_or("algorithm", {Algorithm::ring}, algorithm_name, fallback);
    break;
  case Collective::broadcast:
    point.algorithm = reader.named_or("algorithm", {Algorithm::binomial_tree, Algorithm::ring},
                                      algorithm_name, fallback);
    break;
  }
  point.dtype = reader.named_or("dtype", {DataType::float32, DataType::float16}, data_type_name,
                                DataType::float32);
  // Only the ring allreduce's sums are modelled by type; an allgather or a
  // broadcast moves the same bytes whatever the type, so a point of another
  // type would only look like something it is not.
  if (point.dtype == DataType::float16 &&
      !(point.collective == Collective::allreduce && point.algorithm == Algorithm::ring))
    reader.fail("dtype", "\"float16\" is modelled for the ring allreduce only (its sums); give "
                         "this point as float32, which moves the same bytes");
  point.ranks = static_cast<int>(reader.integer("ranks", 2, kMaxWorkers));
  point.bytes = static_cast<uint64_t>(reader.integer("bytes", 1, int64_t{1} << 50));
  if (point.dtype == DataType::float16 && point.bytes % 2 != 0)
    reader.fail("bytes",
                std::to_string(point.bytes) + " is not a whole number of 2-byte float16 elements");
  if (point.collective == Collective::broadcast && point.algorithm == Algorithm::ring) {
    point.chunk_bytes = static_cast<uint64_t>(reader.integer_or(
        "chunk_bytes", 1, int64_t{1} << 50, static_cast<int64_t>(net::kNcclChunkBytes)));
  } else if (reader.has("chunk_bytes"))
    reader.fail("chunk_bytes", "only a \"ring\" broadcast (NCCL's) is sent in pieces");
  point.seconds = reader.positive_seconds("seconds");
  point.repetitions = static_cast<int>(reader.integer_or("repetitions", 1, 1 << 30, 1));
  // Not simulated (the scripts read them), but a negative time is bad input
  // wherever it is.
  if (const nlohmann::json* samples = reader.find("samples_s")) {
    if (!samples->is_array() || samples->empty())
      reader.fail("samples_s",
                  "expected an array of each repetition's seconds, got " + describe_json(*samples));
    for (size_t i = 0; i < samples->size(); ++i) {
      const nlohmann::json& sample = (*samples)[i];
      if (!sample.is_number() || !is_measured_seconds(sample.get<double>()))
        throw InputError(file, reader.path_of("samples_s") + "/" + std::to_string(i),
                         "expected seconds, 0 or in [1e-12, 1e9], got " + describe_json(sample));
    }
    if (samples->size() != static_cast<size_t>(point.repetitions))
      reader.fail("samples_s", std::to_string(samples->size()) + " samples for " +
                                   std::to_string(point.repetitions) + " repetitions");
  }
  reader.finish();
  return point;
}

IterationTimes read_iteration(const nlohmann::json& json, const std::string& file,
                              const std::string& path) {
  ObjectReader reader(json, file, path);
  // Informative only, read for their type: the loss, run.py --barrier's
  // diagnostic wait, and its line-up of the ranks' collectives.
  reader.number_or("loss", 0);
  reader.string_or("comment", "");
  reader.number_or("wait_s", 0);
  reader.number_or("arrival_spread_s", 0);
  reader.number_or("collectives_after_last_arrival_s", 0);
  reader.number_or("iteration_longest_rank_s", 0);
  IterationTimes times;
  times.iteration_s = reader.positive_seconds("iteration_s");
  times.forward_s = reader.seconds_or("forward_s", 0);
  times.backward_s = reader.seconds_or("backward_s", 0);
  times.compute_s = reader.seconds_or("compute_s", times.forward_s + times.backward_s);
  times.compression_s = reader.seconds_or("compression_s", 0);
  times.communication_s = reader.seconds_or("communication_s", 0);
  times.optimizer_s = reader.seconds_or("optimizer_s", 0);
  // Without a forward/backward split, the compute counts as backward.
  if (times.forward_s + times.backward_s == 0)
    times.backward_s = times.compute_s;
  reader.finish();
  return times;
}

/// A layer's tensor shape, whose elements at 4 bytes each are `bytes`.
std::vector<int64_t> read_shape(ObjectReader& layer, uint64_t bytes) {
  constexpr int64_t kMost = int64_t{1} << 50;
  const std::vector<int64_t> shape = layer.integers("shape", 1, kMost);
  int64_t elements = 1;
  for (int64_t dim : shape) {
    if (elements > kMost / dim)
      layer.fail("shape", "is implausibly large");
    elements *= dim;
  }
  if (static_cast<uint64_t>(elements) * 4 != bytes)
    layer.fail("shape", "holds " + std::to_string(elements) + " elements, " +
                            std::to_string(elements * 4) + " bytes as float32, not the layer's " +
                            std::to_string(bytes));
  return shape;
}

// A run described by a gcsim scenario: the scenario says what the file
// would otherwise (compressor, workload, overlap), so the file must not.
void read_scenario(ObjectReader& reader, TrainingRun& run, const std::string& file) {
  const std::string written = reader.string("scenario");
  run.scenario = find_input_path(written, file, file, reader.path_of("scenario"));
  for (const char* key : {"compressor", "workload", "overlap", "compute_alone"})
    if (reader.has(key))
      reader.fail(key, "comes from the scenario (" + written + ") in a run that names one");
  Scenario scenario;
  try {
    scenario = load_scenario(run.scenario, {}, std::nullopt);
  } catch (const InputError& error) {
    reader.fail("scenario", error.what());
  }
  // The comparison names the compressor; gcsim run reads the rest itself.
  run.compressor = scenario.compressor.value("name", "dense");
  run.compressor_params = scenario.compressor;
  run.scenario_inputs = scenario.input_files();
}

void read_workload(ObjectReader& reader, TrainingRun& run, const std::string& file) {
  ObjectReader compressor = reader.object("compressor");
  run.compressor = compressor.choice("name", known_compressors());
  run.compressor_params = reader.require("compressor");
  if (selects_by_density(run.compressor)) {
    double density = compressor.positive_number("density");
    if (density > 1)
      compressor.fail("density", "expected a density in (0, 1], got " + std::to_string(density));
  } else if (run.compressor != "dense") {
    // DDP's hooks: the parameters gcsim's compressor of that name takes, as a
    // scenario gives them (the hook's settings the run used).
    for (const compress::ParamSpec& param : compress::compressor_info(run.compressor).params)
      compressor.allow(param.name);
    compressor.finish(); // an unknown key named by its path first
    nlohmann::json params = run.compressor_params;
    params.erase("name");
    try {
      compress::make_compressor(run.compressor, params);
    } catch (const compress::ParameterError& error) {
      throw InputError(file, reader.path_of("compressor"), error.what());
    }
  }
  compressor.finish();
  run.overlap = reader.boolean_or("overlap", false);

  if (reader.has("compute_alone")) {
    ObjectReader alone = reader.object("compute_alone");
    alone.string_or("comment", "");
    ComputeAlone times;
    times.forward_s = alone.seconds("forward_s");
    times.backward_s = alone.seconds("backward_s");
    times.optimizer_s = alone.seconds("optimizer_s");
    if (alone.has("compression_s")) {
      if (run.compressor == "dense")
        alone.fail("compression_s", "a dense run has no compressor to time");
      times.compression_s = alone.seconds("compression_s");
    }
    alone.finish();
    run.compute_alone = times;
  } else {
    reader.allow("compute_alone");
  }

  ObjectReader workload = reader.object("workload");
  workload.string_or("model", "");
  workload.string_or("dataset", "");
  workload.string_or("comment", "");
  run.batch_per_worker = static_cast<int>(workload.integer_or("batch_per_worker", 1, 1 << 30, 1));
  const nlohmann::json& layers = workload.require("layers");
  if (!layers.is_array() || layers.empty())
    workload.fail("layers", "expected a non-empty array of {\"name\", \"bytes\"}, got " +
                                describe_json(layers));
  // backward_s and shape: every layer or none (a layer without one would
  // have to be guessed).
  const auto in_first = [&layers](const char* key) {
    return layers[0].is_object() && layers[0].contains(key);
  };
  const auto as_in_first = [](ObjectReader& layer, const char* key, bool given) {
    if (given != layer.has(key))
      layer.fail(key, std::string(given ? "missing here but given" : "given here but not") +
                          " in layer 0: give it for every layer or none");
  };
  const bool timed = in_first("backward_s");
  const bool shaped = in_first("shape");
  double backward_total = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    ObjectReader layer(layers[i], file, workload.path_of("layers") + "/" + std::to_string(i));
    layer.string_or("name", "");
    run.layer_bytes.push_back(static_cast<uint64_t>(layer.integer("bytes", 1, int64_t{1} << 50)));
    as_in_first(layer, "shape", shaped);
    if (shaped)
      run.layer_shapes.push_back(read_shape(layer, run.layer_bytes.back()));
    as_in_first(layer, "backward_s", timed);
    if (timed) {
      run.layer_backward_s.push_back(layer.seconds("backward_s"));
      backward_total += run.layer_backward_s.back();
    }
    layer.finish();
  }
  if (timed && !(backward_total > 0))
    workload.fail("layers", "the layers' backward_s add up to 0 s: leave them out");
  workload.finish();
}

TrainingRun read_training(const nlohmann::json& json, const std::string& file,
                          const std::string& path) {
  ObjectReader reader(json, file, path);
  reader.string_or("comment", "");
  TrainingRun run;
  if (reader.has("scenario"))
    read_scenario(reader, run, file);
  else
    read_workload(reader, run, file);
  run.name = reader.string_or("name", run.compressor);
  run.ranks = static_cast<int>(reader.integer("ranks", 1, kMaxWorkers));
  run.warmup_iterations = static_cast<int>(reader.integer_or("warmup_iterations", 0, 1 << 30, 0));
  if (reader.has("bytes_sent_per_worker")) {
    run.bytes_sent_per_worker = reader.number("bytes_sent_per_worker");
    if (!(run.bytes_sent_per_worker >= 0 && run.bytes_sent_per_worker <= kLargestBytes))
      reader.fail("bytes_sent_per_worker", "expected a number of bytes in [0, 2^53], got " +
                                               describe_json(run.bytes_sent_per_worker));
  }

  const nlohmann::json& iterations = reader.require("iterations");
  if (!iterations.is_array() || iterations.empty())
    reader.fail("iterations", "expected a non-empty array of per-iteration times, got " +
                                  describe_json(iterations));
  for (size_t i = 0; i < iterations.size(); ++i)
    run.iterations.push_back(read_iteration(
        iterations[i], file, reader.path_of("iterations") + "/" + std::to_string(i)));
  if (run.warmup_iterations >= static_cast<int>(run.iterations.size()))
    reader.fail("warmup_iterations",
                "leaves no iteration to compare: " + std::to_string(run.warmup_iterations) +
                    " of " + std::to_string(run.iterations.size()));
  reader.finish();
  return run;
}

} // namespace

const char* collective_name(Collective collective) {
  switch (collective) {
  case Collective::allreduce:
    return "allreduce";
  case Collective::allgather:
    return "allgather";
  case Collective::broadcast:
    return "broadcast";
  }
  return "?";
}

const char* algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
  case Algorithm::ring:
    return "ring";
  case Algorithm::binomial_tree:
    return "binomial_tree";
  case Algorithm::tree:
    return "tree";
  }
  return "?";
}

const char* data_type_name(DataType type) {
  switch (type) {
  case DataType::float32:
    return "float32";
  case DataType::float16:
    return "float16";
  }
  return "?";
}

Algorithm default_algorithm(Collective collective) {
  return collective == Collective::broadcast ? Algorithm::binomial_tree : Algorithm::ring;
}

std::string point_label(const CollectivePoint& point) {
  std::string label = collective_name(point.collective);
  if (point.algorithm != default_algorithm(point.collective))
    label += std::string("/") + algorithm_name(point.algorithm);
  if (point.dtype != DataType::float32)
    label += std::string("/") + data_type_name(point.dtype);
  return label;
}

const std::vector<std::string>& known_compressors() {
  static const std::vector<std::string> names{"dense", "topk", "cltk", "deft", "fp16", "powersgd"};
  return names;
}

bool selects_by_density(const std::string& compressor) {
  return compressor == "topk" || compressor == "cltk" || compressor == "deft";
}

IterationTimes TrainingRun::steady_mean() const {
  IterationTimes mean;
  const auto first = static_cast<size_t>(warmup_iterations);
  const double count = static_cast<double>(iterations.size() - first);
  for (size_t i = first; i < iterations.size(); ++i) {
    const IterationTimes& t = iterations[i];
    mean.iteration_s += t.iteration_s / count;
    mean.forward_s += t.forward_s / count;
    mean.backward_s += t.backward_s / count;
    mean.compute_s += t.compute_s / count;
    mean.compression_s += t.compression_s / count;
    mean.communication_s += t.communication_s / count;
    mean.optimizer_s += t.optimizer_s / count;
  }
  return mean;
}

uint64_t TrainingRun::gradient_bytes() const {
  uint64_t total = 0;
  for (uint64_t bytes : layer_bytes)
    total += bytes;
  return total;
}

MeasuredRun read_measured_run(const std::filesystem::path& path) {
  const std::string file = path.string();
  nlohmann::json json;
  try {
    json = load_json_file(path);
  } catch (const InputError& error) {
    // A benchmark's own output, given as it came: say what turns it into one.
    if (error.message().rfind("malformed JSON at line 1, column 1", 0) == 0)
      throw InputError(file, "",
                       error.message() +
                           ": not a measured run (JSON); scripts/import_benchmarks.py makes one "
                           "of nccl-tests or gloo benchmark output");
    throw;
  }
  ObjectReader reader(json, file, "");
  // Where the run came from, for people: read for their type only.
  for (const char* key : {"source", "date", "comment", "description"})
    reader.string_or(key, "");
  if (reader.has("machine"))
    reader.object("machine");
  reader.number_or("wall_s", 0);
  reader.format("gcsim-measured-run/1", "a measured run");
  MeasuredRun run;
  run.file = path;
  run.name = reader.string_or("name", path.stem().string());
  // The cluster is a platform description (platforms/README.md).
  run.cluster_description = reader.require("cluster");
  run.cluster = read_platform_spec(run.cluster_description, file, "/cluster");

  if (const nlohmann::json* points = reader.find("collectives")) {
    if (!points->is_array())
      reader.fail("collectives", "expected an array, got " + describe_json(*points));
    for (size_t i = 0; i < points->size(); ++i) {
      std::string at = "/collectives/" + std::to_string(i);
      run.collectives.push_back(read_point((*points)[i], file, at));
      if (run.collectives.back().ranks > run.cluster.worker_count())
        throw InputError(file, at + "/ranks",
                         "more ranks than the cluster has workers (" +
                             std::to_string(run.cluster.worker_count()) + ")");
    }
  }
  if (const nlohmann::json* runs = reader.find("training")) {
    if (!runs->is_array())
      reader.fail("training", "expected an array, got " + describe_json(*runs));
    for (size_t i = 0; i < runs->size(); ++i) {
      std::string at = "/training/" + std::to_string(i);
      run.training.push_back(read_training((*runs)[i], file, at));
      if (run.training.back().ranks != run.cluster.worker_count())
        throw InputError(file, at + "/ranks",
                         "a training run uses the whole cluster: expected " +
                             std::to_string(run.cluster.worker_count()) + " ranks");
    }
  }
  if (run.collectives.empty() && run.training.empty())
    reader.fail_here("nothing to validate: no \"collectives\" and no \"training\"");
  reader.finish();
  return run;
}

} // namespace gcsim::validate
