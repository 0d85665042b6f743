#include "sim/scenario/scenario.hpp"

#include "compressors/registry.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/input/paths.hpp"
#include "sim/scenario/platform_spec.hpp"
#include "sim/trace/gradient_source.hpp"
#include "sim/trace/manifest.hpp"
#include "sim/trace/workload.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

namespace gcsim {
namespace {

// The --set that wrote the field at `pointer` or one holding it; of
// several, the last, whose value stands (--set platform=FILE --set
// platform.nodes=200: the second).
const Override* override_writing(const std::vector<Override>& overrides,
                                 const std::string& pointer) {
  const Override* writer = nullptr;
  for (const Override& item : overrides) {
    const std::string set_pointer = item.pointer();
    if (pointer == set_pointer || pointer.rfind(set_pointer + "/", 0) == 0)
      writer = &item;
  }
  return writer;
}

// Errors in a field a --set wrote name the --set, not the file: the field
// itself, one inside it, or one the --set made on its way (training.foo of
// --set training.foo.bar=1, which the file does not have).
struct OverrideIndex {
  const std::vector<Override>& overrides;
  nlohmann::json before; // the document before the overrides

  [[noreturn]] void rethrow(const InputError& error, const std::string& prefix) const {
    const std::string pointer = prefix + error.json_path();
    if (const Override* writer = override_writing(overrides, pointer))
      throw InputError("--set " + writer->text, pointer, error.message());
    if (pointer.empty() || pointer == "/" || existed_before_overrides(pointer))
      throw error;
    for (const Override& item : overrides)
      if (item.pointer().rfind(pointer + "/", 0) == 0)
        throw InputError("--set " + item.text, pointer, error.message());
    // A field the file never had, which a --set of the topology beside it
    // made necessary (fat_tree for topology=fat_tree): the file alone was
    // blamed.
    const std::string topology = pointer.substr(0, pointer.rfind('/')) + "/topology";
    if (error.message().rfind("required field is missing", 0) == 0)
      for (const Override& item : overrides)
        if (item.pointer() == topology)
          throw InputError(error.file(), error.json_path(),
                           error.message() + ", needed once --set " + item.text);
    throw error;
  }

  bool existed_before_overrides(const std::string& pointer) const {
    try {
      return before.contains(nlohmann::json::json_pointer(pointer));
    } catch (const nlohmann::json::exception&) {
      return true; // not a pointer: leave the error where it was
    }
  }
};

TrainingSpec read_training(ObjectReader& parent, const net::PlatformSpec& platform,
                           bool schedule_replayed) {
  const bool has_servers = platform.servers > 0;
  TrainingSpec training;
  if (!parent.has("training")) {
    parent.allow("training");
    if (has_servers)
      training.allreduce = AllreduceAlgorithm::parameter_server;
    return training;
  }
  ObjectReader reader = parent.object("training");
  reader.string_or("comment", "");
  training.iterations = static_cast<int>(reader.integer_or("iterations", 1, 100000, 3));
  training.warmup_iterations =
      static_cast<int>(reader.integer_or("warmup_iterations", 0, 100000, 0));
  // "expected an integer in [0, 0]" did not say where the bound came from.
  // A replay runs its schedule's iterations, and checks the warm-up against them.
  if (!schedule_replayed && training.warmup_iterations >= training.iterations)
    reader.fail("warmup_iterations",
                "expected fewer than training.iterations (" + std::to_string(training.iterations) +
                    ") warm-up iterations, got " + std::to_string(training.warmup_iterations) +
                    ": the summary leaves them out, and it needs one iteration at least");
  training.batch_per_worker =
      static_cast<int>(reader.integer_or("batch_per_worker", 1, 1 << 20, 32));
  // A fraction of a byte is dropped here, as DDP drops it from bucket_cap_mb
  // * 1024 * 1024, so that result.json records the sizes the run uses.
  training.bucket_bytes = std::floor(reader.size_or("bucket_size", training.bucket_bytes));
  training.first_bucket_bytes = std::floor(reader.size_or(
      "first_bucket_size", std::min(training.first_bucket_bytes, training.bucket_bytes)));
  training.overlap = reader.boolean_or("overlap", true);
  training.compression_scope =
      reader.choice_or("compression_scope", {"auto", "model", "bucket"}, "auto");
  training.kernels_share_device = reader.boolean_or("kernels_share_device", false);
  training.compute_variation = reader.number_or("compute_variation", 0);
  if (!(training.compute_variation >= 0 && training.compute_variation <= 1))
    reader.fail("compute_variation", "expected a coefficient of variation in [0, 1], got " +
                                         describe_json(*reader.find("compute_variation")));
  training.allreduce = reader.named_or(
      "allreduce",
      {AllreduceAlgorithm::ring, AllreduceAlgorithm::recursive_doubling,
       AllreduceAlgorithm::double_binary_tree, AllreduceAlgorithm::hierarchical,
       AllreduceAlgorithm::parameter_server},
      algorithm_name,
      has_servers ? AllreduceAlgorithm::parameter_server : AllreduceAlgorithm::ring);
  if (training.allreduce == AllreduceAlgorithm::parameter_server && !has_servers)
    reader.fail("allreduce", "\"parameter_server\" needs a platform with topology "
                             "\"parameter_server\"");
  if (training.allreduce == AllreduceAlgorithm::hierarchical && !platform.has_gpu_machines())
    reader.fail("allreduce", "\"hierarchical\" needs machines of several GPUs, a platform with "
                             "topology \"multi_gpu\" or a \"fat_tree\" with \"gpus_per_node\" "
                             "(its rings run among the GPUs of each machine and between the "
                             "machines), got \"" +
                                 std::string(net::topology_name(platform.topology)) + "\"");
  training.broadcast =
      reader.named_or("broadcast", {BroadcastAlgorithm::binomial, BroadcastAlgorithm::ring},
                      broadcast_name, BroadcastAlgorithm::binomial);
  reader.finish();
  return training;
}

} // namespace

std::vector<NamedFile> Scenario::input_files() const {
  std::vector<NamedFile> files{{"the scenario file", file},
                               {"the scenario's platform file", platform_source},
                               {"the platform's SimGrid XML file", platform.xml_file},
                               {"the scenario's device profile", device_file},
                               {"the scenario's compute_spec", workload.compute_spec}};
  if (trace_folder)
    files.push_back({"the scenario's trace folder", *trace_folder});
  else
    files.push_back({"the scenario's workload", workload.source});
  return files;
}

std::string Scenario::source_of(const std::string& pointer) const {
  const Override* writer = override_writing(overrides, pointer);
  return writer != nullptr ? "--set " + writer->text : file.string();
}

bool Scenario::overridden(const std::string& pointer) const {
  return override_writing(overrides, pointer) != nullptr;
}

std::unique_ptr<compress::Compressor> Scenario::make_compressor() const {
  const std::string compressor_name = compressor["name"].get<std::string>();
  nlohmann::json params = compressor;
  params.erase("name");
  std::unique_ptr<compress::Compressor> made;
  try {
    made = compress::make_compressor(compressor_name, params);
  } catch (const compress::ParameterError& error) {
    const std::string path =
        error.parameter().empty() ? "/compressor/name" : "/compressor/" + error.parameter();
    // `--set compressor.name=dense` on a top-k scenario keeps the file's
    // density, which dense refuses: the file is to blame, the --set the cause.
    const bool name_set_alone = overridden("/compressor/name") && !overridden("/compressor");
    const std::string hint =
        name_set_alone && !error.parameter().empty() && !overridden(path)
            ? " (--set compressor.name keeps the file's other compressor fields; to replace "
              "them all: --set 'compressor={\"name\": \"" +
                  compressor_name + "\"}')"
            : "";
    throw InputError(source_of(path), path, error.what() + hint);
  }
  // A compressor's own dense warm-up (IWP's, 5 by default; PowerSGD's
  // start_iteration) as long as the run: every iteration dense, reported as
  // the compressor's.
  if (const std::string warmup_field(made->dense_warmup_parameter()); !warmup_field.empty()) {
    const int64_t warmup = made->params().at(warmup_field).get<int64_t>();
    // The field written too long or too short: a default warm-up is written
    // nowhere, so the run's length (and the --set or file that gave it).
    const bool written = compressor.contains(warmup_field);
    const std::string path = written ? "/compressor/" + warmup_field : "/training/iterations";
    if (warmup >= training.iterations)
      throw InputError(source_of(path), path,
                       std::to_string(warmup) + " dense warm-up iterations" +
                           (written ? "" : " (the default)") + " and the run has " +
                           std::to_string(training.iterations) +
                           " (training.iterations): " + compressor_name +
                           " would never compress; give fewer, or more iterations");
  }
  // Parameters that must hold on this platform's workers (sketched_sgd's
  // server rank): the compressor itself finds out at its first iteration.
  try {
    made->check_workers(platform.worker_count());
  } catch (const compress::ParameterError& error) {
    const std::string path = "/compressor/" + error.parameter();
    throw InputError(source_of(path), path, error.what());
  }
  // Here, not at the run, so that a sweep's check of every point before it
  // runs any sees it too. Dense sends the buckets as DDP does, whatever the
  // scope.
  if (training.compression_scope == "bucket" && made->name() != "dense" &&
      !made->can_run_per_bucket())
    throw InputError(source_of("/training/compression_scope"), "/training/compression_scope",
                     "\"bucket\" is not possible for " + made->name() +
                         ": it selects over the whole model at once (use \"model\" or "
                         "\"auto\")");
  return made;
}

const char* algorithm_name(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
  case AllreduceAlgorithm::ring:
    return "ring";
  case AllreduceAlgorithm::recursive_doubling:
    return "recursive_doubling";
  case AllreduceAlgorithm::double_binary_tree:
    return "tree";
  case AllreduceAlgorithm::hierarchical:
    return "hierarchical";
  case AllreduceAlgorithm::parameter_server:
    return "parameter_server";
  }
  return "unknown";
}

const char* broadcast_name(BroadcastAlgorithm algorithm) {
  switch (algorithm) {
  case BroadcastAlgorithm::binomial:
    return "binomial";
  case BroadcastAlgorithm::ring:
    return "ring";
  }
  return "unknown";
}

Scenario load_scenario(const std::filesystem::path& file, const std::vector<Override>& overrides,
                       std::optional<uint64_t> seed, bool schedule_replayed) {
  const std::string file_name = file.string();
  nlohmann::json document = load_json_file(file);
  if (!document.is_object())
    throw InputError(file_name, "/", "expected a scenario object, got " + describe_json(document));
  // A sweep file given to `gcsim run` would be refused for its missing
  // platform, which says nothing of what the file is.
  if (!document.contains("platform") && document.contains("scenario") && document.contains("grid"))
    throw InputError(file_name, "/platform",
                     "required field is missing: this is a sweep file (it has \"scenario\" and "
                     "\"grid\"), which `gcsim sweep` runs");

  Scenario scenario;
  scenario.file = file;
  // Outermost first, each depth in the order given: a --set of a field
  // inside an object that another --set replaces applies whichever comes
  // first (`platform.nodes` and `platform`, a sweep's grid in any order);
  // applied as given, the object silently undid it.
  scenario.overrides = overrides;
  std::stable_sort(
      scenario.overrides.begin(), scenario.overrides.end(),
      [](const Override& a, const Override& b) { return a.path.size() < b.path.size(); });
  OverrideIndex index{scenario.overrides, {}};
  for (const Override& item : scenario.overrides) {
    const std::string pointer = item.pointer();
    // Two values for one field, one of them silently dropped: refused.
    if (seed && pointer == "/seed")
      throw InputError("--set " + item.text, pointer,
                       "--seed " + std::to_string(*seed) + " sets the seed too: give one of them");
    // A replay runs what its schedule recorded: a compressor or scope set
    // beside it would not run, and the figures would be labelled with it.
    const bool compressor_set = pointer == "/compressor" || pointer.rfind("/compressor/", 0) == 0;
    const bool scope_set = pointer == "/training/compression_scope" ||
                           (pointer == "/training" && item.value.is_object() &&
                            item.value.contains("compression_scope"));
    const bool gradients_set = pointer == "/gradients" || pointer.rfind("/gradients/", 0) == 0;
    if (schedule_replayed && (compressor_set || scope_set || gradients_set))
      throw InputError("--set " + item.text, pointer,
                       std::string("a replay runs the ") +
                           (compressor_set ? "compressor"
                            : scope_set    ? "compression scope"
                                           : "gradients") +
                           " its schedule recorded (--replay): drop this --set, or the --replay");
  }

  // The platform may live in its own file; inline it so that overrides can
  // reach into it.
  scenario.platform_source = file_name;
  std::string platform_prefix = "/platform";
  // A platform named by its file, in the scenario or by a --set (`source`,
  // which errors name): the file's JSON.
  auto platform_from_file = [&](const std::string& value, const std::string& source) {
    // An empty path resolves to the scenario's own folder.
    if (value.empty())
      throw InputError(source, "/platform", "expected a platform object or file, got \"\"");
    const std::filesystem::path platform_file = find_input_path(value, file, source, "/platform");
    scenario.platform_source = platform_file.string();
    platform_prefix = "";
    try {
      return load_json_file(platform_file);
    } catch (const InputError& error) {
      throw InputError(source, "/platform", error.what());
    }
  };
  if (auto it = document.find("platform"); it != document.end() && it->is_string()) {
    bool overridden_whole = false;
    for (const Override& item : scenario.overrides)
      overridden_whole |= item.pointer() == "/platform";
    if (!overridden_whole)
      *it = platform_from_file(it->get<std::string>(), file_name);
  }
  index.before = document;
  for (const Override& item : scenario.overrides) {
    if (item.pointer() == "/platform" && item.value.is_string()) {
      document["platform"] =
          platform_from_file(item.value.get<std::string>(), "--set " + item.text);
      continue;
    }
    apply_override(document, item);
  }
  if (seed)
    document["seed"] = *seed;

  try {
    ObjectReader reader(document, file_name, "");
    reader.string_or("comment", "");
    reader.string_or("description", "");
    scenario.name = reader.string_or("name", file.stem().string());
    if (!is_folder_name(scenario.name))
      reader.fail("name", folder_name_refusal("the result folder", !reader.has("name")));
    scenario.seed = static_cast<uint64_t>(reader.integer_or("seed", 0, INT64_MAX, 1));

    const nlohmann::json& platform_json = reader.require("platform");
    if (platform_prefix.empty()) {
      try {
        scenario.platform = read_platform_spec(platform_json, scenario.platform_source, "");
      } catch (const InputError& error) {
        index.rethrow(error, "/platform");
      }
    } else {
      scenario.platform = read_platform_spec(platform_json, file_name, "/platform");
    }

    // A layer spec named by the scenario's `key`: a file that cannot be read
    // is reported at that key.
    auto read_spec = [&](const std::filesystem::path& spec_file, const char* key) {
      nlohmann::json spec_json;
      try {
        spec_json = load_json_file(spec_file);
      } catch (const InputError& error) {
        throw InputError(file_name, key, error.what());
      }
      return training::read_layer_spec(spec_json, spec_file.string());
    };
    // A file the scenario names at `key`, found where resolve_input_path
    // looks. An empty path would resolve to the scenario's own folder.
    const auto input_field = [&reader, &file, &file_name](const char* key) {
      const std::string value = reader.string(key);
      if (value.empty())
        reader.fail(key, "expected a path, got \"\"");
      return find_input_path(value, file, file_name, reader.path_of(key));
    };
    const std::filesystem::path workload_file = input_field("workload");
    std::error_code fs_error;
    bool is_trace = std::filesystem::is_directory(workload_file, fs_error) ||
                    workload_file.filename() == trace::kManifestFileName;
    if (is_trace) {
      scenario.trace_folder = std::filesystem::is_directory(workload_file, fs_error)
                                  ? workload_file
                                  : workload_file.parent_path();
      try {
        scenario.workload = training::workload_from_trace_folder(*scenario.trace_folder);
      } catch (const InputError& error) {
        throw InputError(file_name, "/workload", error.what());
      }
      if (reader.has("compute_spec")) {
        const training::Workload spec = read_spec(input_field("compute_spec"), "/compute_spec");
        try {
          training::take_compute_from(scenario.workload, spec);
        } catch (const std::invalid_argument& error) {
          throw InputError(file_name, "/compute_spec",
                           std::string(error.what()) + ": not the trace's model");
        }
      }
    } else {
      if (reader.has("compute_spec"))
        reader.fail("compute_spec", "only with a trace workload; a layer spec has its own FLOPs");
      scenario.workload = read_spec(workload_file, "/workload");
    }
    // The trace library owns the default (scenario.hpp's initializer is not it).
    scenario.synthesis = trace::GradientSource::default_synthesis();
    if (reader.has("gradients") && scenario.trace_folder) {
      ObjectReader gradients = reader.object("gradients");
      gradients.string_or("comment", "");
      scenario.synthesis = gradients.choice_or(
          "synthesis", trace::GradientSource::synthesis_methods(), scenario.synthesis);
      for (const char* synthetic_only : {"signal_share", "spread"})
        if (gradients.has(synthetic_only))
          gradients.fail(synthetic_only, "only for a layer spec's synthetic gradients; a "
                                         "trace's workers are captured");
      gradients.finish();
    } else if (reader.has("gradients")) {
      // A layer spec's synthetic stand-in (workloads/scenarios/README.md).
      ObjectReader gradients = reader.object("gradients");
      gradients.string_or("comment", "");
      training::SyntheticGradients& synthetic = scenario.synthetic;
      synthetic.method = gradients.choice_or("synthesis", training::SyntheticGradients::methods(),
                                             synthetic.method);
      for (const auto& [key, field, most] :
           {std::tuple{"signal_share", &synthetic.signal_share, 1.0},
            std::tuple{"spread", &synthetic.spread, 2.0}}) {
        if (!gradients.has(key))
          continue;
        if (synthetic.method != "capture_fitted")
          gradients.fail(key, std::string("only with \"synthesis\": \"capture_fitted\", not \"") +
                                  synthetic.method + "\"");
        *field = gradients.number(key);
        if (!(*field >= 0 && *field <= most))
          gradients.fail(key, fmt::format("expected a number in [0, {}], got {}", most,
                                          gradients.require(key).dump()));
      }
      gradients.finish();
    } else {
      reader.allow("gradients");
    }

    scenario.device_file = input_field("device");
    if (std::error_code error; !std::filesystem::is_regular_file(scenario.device_file, error))
      reader.fail("device", "expected a device profile file, not a folder or a device: " +
                                scenario.device_file.string());

    scenario.training = read_training(reader, scenario.platform, schedule_replayed);

    const nlohmann::json& compressor = reader.require("compressor");
    if (!compressor.is_object() || !compressor.contains("name") || !compressor["name"].is_string())
      reader.fail("compressor", "expected an object with a \"name\", e.g. {\"name\": \"dense\"}");
    scenario.compressor = compressor;
    reader.finish();
  } catch (const InputError& error) {
    index.rethrow(error, "");
  }
  scenario.resolved = document;
  // The name the run goes by (its default folder's) is what result.json and
  // the printed title say, given or not.
  scenario.resolved["name"] = scenario.name;
  return scenario;
}

} // namespace gcsim
