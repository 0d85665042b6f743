#include "sim/training/schedule_file.hpp"

#include "compressors/registry.hpp"
#include "sim/cost/device_profile.hpp"
#include "sim/cost/kernels.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/input/paths.hpp"
#include "sim/input/units.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

namespace gcsim::training {
namespace {

// Past any tensor (2^53: a double's exact integers).
constexpr double kMostKernelElements = 9007199254740992.0;

// A kind's name in schedule files, by a switch so that a kind added or
// moved in the enum cannot take another's name.
const char* kind_name(StepPlan::Kind kind) {
  switch (kind) {
  case StepPlan::Kind::allreduce_ring:
    return "allreduce_ring";
  case StepPlan::Kind::allreduce_recursive_doubling:
    return "allreduce_recursive_doubling";
  case StepPlan::Kind::allgather:
    return "allgather";
  case StepPlan::Kind::allgatherv:
    return "allgatherv";
  case StepPlan::Kind::broadcast:
    return "broadcast";
  case StepPlan::Kind::reduce:
    return "reduce";
  case StepPlan::Kind::point_to_point:
    return "point_to_point";
  case StepPlan::Kind::allreduce_tree:
    return "allreduce_tree";
  case StepPlan::Kind::allreduce:
    return "allreduce";
  }
  return "unknown";
}

// Every kind's name, in enum order (StepPlan::Kind::allreduce is the last).
const std::vector<std::string>& kind_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (int kind = 0; kind <= static_cast<int>(StepPlan::Kind::allreduce); ++kind)
      all.emplace_back(kind_name(static_cast<StepPlan::Kind>(kind)));
    return all;
  }();
  return names;
}

std::vector<int> read_ranks(ObjectReader& reader, std::string_view key, int workers) {
  const nlohmann::json& value = reader.require(key);
  if (!value.is_array())
    reader.fail(key, "expected an array of worker ranks");
  std::vector<int> ranks;
  for (const nlohmann::json& rank : value) {
    if (!rank.is_number_integer() || rank.get<int64_t>() < 0 || rank.get<int64_t>() >= workers)
      reader.fail(key,
                  "expected ranks in [0, " + std::to_string(workers) + "), got " + rank.dump());
    if (!ranks.empty() && rank.get<int>() <= ranks.back())
      reader.fail(key, "ranks must be ascending");
    ranks.push_back(rank.get<int>());
  }
  return ranks;
}

// A byte count a step may send: a whole number in [0, kLargestBytes], as a
// scenario's sizes are. Past 2^53 bytes a count is a typo, and the double
// SimGrid sends it as no longer holds it exactly.
bool is_byte_count(const nlohmann::json& value) {
  if (value.is_number_unsigned())
    return value.get<uint64_t>() <= static_cast<uint64_t>(kLargestBytes);
  if (value.is_number_integer())
    return value.get<int64_t>() >= 0 && value.get<int64_t>() <= static_cast<int64_t>(kLargestBytes);
  return false;
}

const char* const kByteCountRange = "a byte count, a whole number in [0, 2^53]";

// A part's steps and kernels, as JSON members of `out`.
void write_part(const CompressionPart& part, nlohmann::json& out) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepPlan& step : part.steps) {
    nlohmann::json messages = nlohmann::json::array();
    for (const StepPlan::Message& message : step.messages)
      messages.push_back({message.src, message.dst, message.bytes});
    steps.push_back({{"kind", kind_name(step.kind)},
                     {"label", step.label},
                     {"root", step.root},
                     {"participants", step.participants},
                     {"bytes", step.bytes},
                     {"messages", messages}});
  }
  nlohmann::json kernels = nlohmann::json::array();
  for (const std::vector<KernelPlan>& worker : part.kernels) {
    nlohmann::json list = nlohmann::json::array();
    for (const KernelPlan& kernel : worker)
      list.push_back(
          {kernel.name, kernel.before_step, kernel.n, kernel.k, kernel.rows, kernel.cols});
    kernels.push_back(list);
  }
  out["steps"] = std::move(steps);
  out["kernels"] = std::move(kernels);
}

// Reads a part's "steps" and "kernels" members from `item`.
CompressionPart read_part(ObjectReader& item, const std::string& name, const std::string& where,
                          int workers, const cost::DeviceProfile& profile) {
  CompressionPart part;
  const nlohmann::json& steps = item.require("steps");
  if (!steps.is_array())
    item.fail("steps", "expected an array");
  for (size_t s = 0; s < steps.size(); ++s) {
    ObjectReader step_reader(steps[s], name, where + "/steps/" + std::to_string(s));
    StepPlan step;
    std::string kind = step_reader.choice("kind", kind_names());
    step.kind = static_cast<StepPlan::Kind>(
        std::find(kind_names().begin(), kind_names().end(), kind) - kind_names().begin());
    step.label = step_reader.string("label");
    step.root = static_cast<int>(step_reader.integer("root", -1, workers - 1));
    step.participants = read_ranks(step_reader, "participants", workers);
    const nlohmann::json& bytes = step_reader.require("bytes");
    if (!bytes.is_array() || bytes.size() != step.participants.size())
      step_reader.fail("bytes", "expected one byte count per participant");
    for (size_t b = 0; b < bytes.size(); ++b) {
      if (!is_byte_count(bytes[b]))
        throw InputError(name, step_reader.path_of("bytes") + "/" + std::to_string(b),
                         std::string("expected ") + kByteCountRange + ", got " +
                             describe_json(bytes[b]));
      step.bytes.push_back(bytes[b].get<uint64_t>());
    }
    // Every rank of these collectives forwards blocks at its own size, so
    // unequal counts would simulate traffic no run could send.
    const bool sizes_may_differ =
        step.kind == StepPlan::Kind::allgatherv || step.kind == StepPlan::Kind::point_to_point;
    const auto unequal =
        std::adjacent_find(step.bytes.begin(), step.bytes.end(), std::not_equal_to<uint64_t>());
    if (!sizes_may_differ && unequal != step.bytes.end()) {
      const size_t at = static_cast<size_t>(unequal - step.bytes.begin());
      step_reader.fail("bytes", "a step of kind '" + kind +
                                    "' moves the same byte count on every participant, got " +
                                    std::to_string(step.bytes[at]) + " on rank " +
                                    std::to_string(step.participants[at]) + " and " +
                                    std::to_string(step.bytes[at + 1]) + " on rank " +
                                    std::to_string(step.participants[at + 1]) +
                                    " (allgatherv takes counts of their own)");
    }
    auto is_participant = [&step](int64_t rank) {
      return std::binary_search(step.participants.begin(), step.participants.end(), rank);
    };
    // The simulator finds a rank's place among the participants; a rank that
    // is not one would silently stand for another, or wait forever.
    if ((step.kind == StepPlan::Kind::broadcast || step.kind == StepPlan::Kind::reduce) &&
        !is_participant(step.root))
      step_reader.fail("root", "a " + kind + "'s root must be one of its participants, got " +
                                   std::to_string(step.root));
    const nlohmann::json& messages = step_reader.require("messages");
    if (!messages.is_array())
      step_reader.fail("messages", "expected an array of [src, dst, bytes]");
    for (size_t m = 0; m < messages.size(); ++m) {
      const nlohmann::json& message = messages[m];
      if (!message.is_array() || message.size() != 3 || !message[0].is_number_integer() ||
          !message[1].is_number_integer() || !message[2].is_number_integer() ||
          message[0].get<int64_t>() < 0 || message[0].get<int64_t>() >= workers ||
          message[1].get<int64_t>() < 0 || message[1].get<int64_t>() >= workers)
        step_reader.fail("messages",
                         "expected [src, dst, bytes] with ranks below " + std::to_string(workers));
      if (!is_byte_count(message[2]))
        throw InputError(name, step_reader.path_of("messages") + "/" + std::to_string(m) + "/2",
                         std::string("expected ") + kByteCountRange + ", got " +
                             describe_json(message[2]));
      for (size_t end : {0, 1})
        if (!is_participant(message[end].get<int64_t>()))
          throw InputError(name,
                           step_reader.path_of("messages") + "/" + std::to_string(m) + "/" +
                               std::to_string(end),
                           std::string(end == 0 ? "src" : "dst") + " " + message[end].dump() +
                               " is not one of the step's participants");
      step.messages.push_back(
          {message[0].get<int>(), message[1].get<int>(), message[2].get<uint64_t>()});
    }
    step_reader.finish();
    part.steps.push_back(std::move(step));
  }
  const nlohmann::json& kernels = item.require("kernels");
  if (!kernels.is_array() || kernels.size() != static_cast<size_t>(workers))
    item.fail("kernels", "expected one kernel list per worker");
  for (size_t w = 0; w < kernels.size(); ++w) {
    if (!kernels[w].is_array())
      throw InputError(name, where + "/kernels/" + std::to_string(w),
                       "expected worker " + std::to_string(w) +
                           "'s kernels, an array of [name, before_step, n, k, rows, cols], got " +
                           describe_json(kernels[w]));
    std::vector<KernelPlan> list;
    for (size_t i = 0; i < kernels[w].size(); ++i) {
      const nlohmann::json& kernel = kernels[w][i];
      // Each refusal names the entry, or its field (a scenario's 1.0 is an
      // integer, and so is a before_step's).
      const std::string entry = where + "/kernels/" + std::to_string(w) + "/" + std::to_string(i);
      if (!kernel.is_array() || kernel.size() != 6)
        throw InputError(name, entry,
                         "expected [name, before_step, n, k, rows, cols], got " +
                             describe_json(kernel));
      if (!kernel[0].is_string())
        throw InputError(name, entry + "/0",
                         "expected the kernel's name, got " + describe_json(kernel[0]));
      if (!kernel[1].is_number() || !(kernel[1].get<double>() >= 0) ||
          kernel[1].get<double>() != std::floor(kernel[1].get<double>()) ||
          kernel[1].get<double>() > 1e9)
        throw InputError(name, entry + "/1",
                         "expected before_step, a step index (a whole number from 0 to 1e9), got " +
                             describe_json(kernel[1]));
      // Sizes past any tensor would be priced by the profile, and the error
      // blamed on it.
      for (size_t field = 2; field < 6; ++field)
        if (!kernel[field].is_number() || !(kernel[field].get<double>() >= 0) ||
            kernel[field].get<double>() > kMostKernelElements)
          throw InputError(name, entry + "/" + std::to_string(field),
                           "expected a size from 0 to 2^53 elements, got " +
                               describe_json(kernel[field]));
      KernelPlan plan{kernel[0].get<std::string>(),
                      0,
                      static_cast<size_t>(kernel[1].get<double>()),
                      kernel[2].get<double>(),
                      kernel[3].get<double>(),
                      kernel[4].get<double>(),
                      kernel[5].get<double>()};
      // What a kernel selects or samples is some of its n: a larger k would
      // be priced past anything a compressor runs, without a word.
      if (const std::optional<cost::Kernel> fitted = cost::fitted_kernel_of(plan.name);
          fitted && cost::kernel_family(*fitted).uses_k && plan.k > plan.n)
        throw InputError(name, entry + "/3",
                         "k " + units::format_number(plan.k) + " is more than the kernel's n " +
                             units::format_number(plan.n) + ": " + plan.name +
                             " selects or samples some of its n elements");
      // The simulator runs a worker's kernels in list order, each once the
      // steps before its before_step are done; one past the end would never
      // run, one listed before a kernel of an earlier step would run late.
      const std::string before_step = entry + "/1";
      if (plan.before_step > part.steps.size())
        throw InputError(name, before_step,
                         "before_step " + std::to_string(plan.before_step) +
                             " is past the last step: the part has " +
                             std::to_string(part.steps.size()) + " steps (before_step " +
                             std::to_string(part.steps.size()) + " runs a kernel after them)");
      if (!list.empty() && plan.before_step < list.back().before_step)
        throw InputError(name, before_step,
                         "before_step " + std::to_string(plan.before_step) +
                             " comes after a kernel with before_step " +
                             std::to_string(list.back().before_step) +
                             ": a worker's kernels are listed in the order they run");
      try {
        plan.seconds = profile.kernel_seconds(plan.name, {plan.n, plan.k, plan.rows, plan.cols});
      } catch (const std::invalid_argument& error) {
        throw InputError(name, entry, error.what());
      }
      list.push_back(std::move(plan));
    }
    part.kernels.push_back(std::move(list));
  }
  return part;
}

} // namespace

nlohmann::json schedule_to_json(const CompressedRun& run, int workers,
                                const nlohmann::json& compressor,
                                const nlohmann::json& scenario_compressor,
                                const nlohmann::json& gradient_source, const Workload& workload) {
  nlohmann::json iterations = nlohmann::json::array();
  for (size_t i = 0; i < run.schedule.size(); ++i) {
    const std::vector<CompressionPart>& parts = run.schedule[i].parts;
    // One whole-model part keeps the flat form; bucketed runs list parts.
    nlohmann::json entry = nlohmann::json::object();
    if (parts.size() == 1 && parts.front().ready_layer == 0) {
      write_part(parts.front(), entry);
    } else {
      entry["parts"] = nlohmann::json::array();
      for (const CompressionPart& part : parts) {
        nlohmann::json item = {{"ready_layer", part.ready_layer}};
        write_part(part, item);
        entry["parts"].push_back(std::move(item));
      }
    }
    const CompressionQuality& quality = run.quality[i];
    entry["quality"] = {{"density_after_aggregation", quality.density_after_aggregation},
                        {"cosine", quality.cosine},
                        {"rel_l2", quality.rel_l2},
                        {"energy_share", quality.energy_share},
                        {"bytes_sent_mean", quality.bytes_sent_mean},
                        {"info", quality.info}};
    iterations.push_back(std::move(entry));
  }
  return {{"format", "gcsim-schedule/1"},
          {"workers", workers},
          {"model",
           {{"name", workload.name},
            {"parameters", workload.parameters()},
            {"layers", workload.layers.size()}}},
          {"compressor", compressor},
          {"scenario_compressor", scenario_compressor},
          {"gradients", gradient_source},
          {"kernel_fields", {"name", "before_step", "n", "k", "rows", "cols"}},
          {"iterations", iterations}};
}

CompressedRun schedule_from_file(const std::filesystem::path& file, int workers,
                                 const Workload& workload, const cost::DeviceProfile& profile,
                                 nlohmann::json& compressor, nlohmann::json& gradient_source,
                                 nlohmann::json& scenario_compressor) {
  const std::string name = file.string();
  nlohmann::json document = load_json_file(file);
  ObjectReader reader(document, name, "");
  // The kernels' field names, for a reader of the file.
  if (const nlohmann::json* fields = reader.find("kernel_fields"); fields && !fields->is_array())
    reader.fail("kernel_fields", "expected an array, got " + describe_json(*fields));
  reader.format("gcsim-schedule/1", "a schedule.json that gcsim run wrote");
  int64_t recorded = reader.integer("workers", 1, 1 << 16);
  if (recorded != workers)
    reader.fail("workers", "the schedule is for " + std::to_string(recorded) +
                               " workers but the platform has " + std::to_string(workers));
  if (reader.has("model")) {
    ObjectReader model = reader.object("model");
    const std::string recorded_name = model.string("name");
    const int64_t parameters = model.integer("parameters", 1, int64_t{1} << 50);
    const int64_t layers = model.integer("layers", 1, 1 << 30);
    model.finish();
    const auto scenario_layers = static_cast<int64_t>(workload.layers.size());
    if (parameters != workload.parameters() || layers != scenario_layers)
      throw InputError(
          name, parameters != workload.parameters() ? "/model/parameters" : "/model/layers",
          "the schedule was recorded on " + recorded_name + " (" + std::to_string(parameters) +
              " parameters in " + std::to_string(layers) + " layers), the scenario's workload " +
              workload.name + " has " + std::to_string(workload.parameters()) + " parameters in " +
              std::to_string(scenario_layers) +
              " layers: a replay's bytes and kernel sizes are its own model's");
  }
  compressor = reader.require("compressor");
  if (!compressor.is_object() || !compressor.contains("name") || !compressor["name"].is_string())
    reader.fail("compressor", "expected the compressor that made the schedule, an object with a "
                              "\"name\", got " +
                                  describe_json(compressor));
  // What result.json will say ran: a name and parameters a scenario could
  // give, with their defaults, as the registry checks them.
  const auto with_defaults = [&name](const nlohmann::json& given, const std::string& where) {
    try {
      nlohmann::json params = given;
      params.erase("name");
      const std::unique_ptr<compress::Compressor> made =
          compress::make_compressor(given["name"].get<std::string>(), params);
      nlohmann::json full = made->params();
      full["name"] = made->name();
      return full;
    } catch (const compress::ParameterError& error) {
      throw InputError(name, where + (error.parameter().empty() ? "name" : error.parameter()),
                       error.what());
    }
  };
  compressor = with_defaults(compressor, "/compressor/");
  // The same compressor as the scenario wrote it, or the file was edited:
  // a replay's result.json would name a run that never happened.
  scenario_compressor = compressor;
  if (const nlohmann::json* written = reader.find("scenario_compressor")) {
    const std::string expected = "expected the compressor as the recorded scenario wrote it, ";
    if (!written->is_object())
      reader.fail("scenario_compressor", expected + "an object, got " + describe_json(*written));
    if (!written->contains("name") || !(*written)["name"].is_string())
      reader.fail("scenario_compressor",
                  expected + "an object with a \"name\", got " + describe_json(*written));
    if ((*written)["name"] != compressor["name"])
      throw InputError(name, "/scenario_compressor/name",
                       "names " + (*written)["name"].dump() +
                           ", but the schedule's compressor is " + compressor["name"].dump() +
                           ": one of them was edited");
    if (with_defaults(*written, "/scenario_compressor/") != compressor)
      reader.fail("scenario_compressor",
                  written->dump() + " with its defaults is not the schedule's compressor " +
                      compressor.dump() + ": one of them was edited");
    scenario_compressor = *written;
  }
  gradient_source = reader.require("gradients");
  const nlohmann::json& iterations = reader.require("iterations");
  if (!iterations.is_array() || iterations.empty())
    reader.fail("iterations", "expected a non-empty array");
  CompressedRun run;
  for (size_t i = 0; i < iterations.size(); ++i) {
    const std::string where = "/iterations/" + std::to_string(i);
    ObjectReader item(iterations[i], name, where);
    CompressedIteration iteration;
    if (item.has("parts")) {
      const nlohmann::json& parts = item.require("parts");
      if (!parts.is_array() || parts.empty())
        item.fail("parts", "expected a non-empty array");
      for (size_t p = 0; p < parts.size(); ++p) {
        const std::string part_where = where + "/parts/" + std::to_string(p);
        ObjectReader part_reader(parts[p], name, part_where);
        const int ready = static_cast<int>(part_reader.integer("ready_layer", 0, 1 << 30));
        if (p > 0 && ready > iteration.parts.back().ready_layer)
          part_reader.fail("ready_layer", "parts must come in backward order (ready_layer "
                                          "not increasing)");
        CompressionPart part = read_part(part_reader, name, part_where, workers, profile);
        part.ready_layer = ready;
        part_reader.finish();
        iteration.parts.push_back(std::move(part));
      }
    } else {
      iteration.parts.push_back(read_part(item, name, where, workers, profile));
    }
    ObjectReader quality_reader = item.object("quality");
    CompressionQuality quality;
    quality.density_after_aggregation = quality_reader.number("density_after_aggregation");
    quality.cosine = quality_reader.number("cosine");
    quality.rel_l2 = quality_reader.number("rel_l2");
    quality.energy_share = quality_reader.number("energy_share");
    quality.bytes_sent_mean = quality_reader.number("bytes_sent_mean");
    quality.info = quality_reader.require("info");
    quality_reader.finish();
    item.finish();
    run.schedule.push_back(std::move(iteration));
    run.quality.push_back(std::move(quality));
  }
  reader.finish();
  return run;
}

std::string compression_scope_of(const std::vector<CompressionPart>& parts) {
  const bool overlapping = std::any_of(parts.begin(), parts.end(),
                                       [](const auto& part) { return part.ready_layer > 0; });
  return parts.size() > 1 || overlapping ? "bucket" : "model";
}

Replay replay_schedule(Scenario& scenario, const std::string& file,
                       const cost::DeviceProfile& profile) {
  Replay replay;
  nlohmann::json replayed_gradients;
  replay.compressed =
      schedule_from_file(file, scenario.platform.worker_count(), scenario.workload, profile,
                         replay.compressor, replayed_gradients, replay.scenario_compressor);
  replay.gradient_source = {
      {"kind", "replay"}, {"schedule", recorded_path(file)}, {"recorded_from", replayed_gradients}};
  CompressedRun& compressed = replay.compressed;
  // The schedule's compressor is what runs; result.json's scenario said
  // the scenario file's, which the replay ignores. It says the recorded
  // run's as written, as that run's result.json did (model.compressor_params
  // has every parameter), so that a replay's result and its run's compare.
  scenario.resolved["compressor"] = replay.scenario_compressor;
  // All the schedule's iterations, or the first N of a --set
  // training.iterations=N; the scenario file's count, written for
  // another run, is not the replay's. result.json says what ran.
  const int recorded = static_cast<int>(compressed.schedule.size());
  // (A --set of the whole training object without an iteration count
  // asks for none.)
  const bool shortened =
      scenario.overridden("/training/iterations") &&
      scenario.resolved.contains(nlohmann::json::json_pointer("/training/iterations"));
  if (shortened && scenario.training.iterations > recorded)
    throw InputError(scenario.source_of("/training/iterations"), "/training/iterations",
                     "asks for " + std::to_string(scenario.training.iterations) +
                         " iterations, but the replayed schedule " + file + " has " +
                         std::to_string(recorded));
  const int replayed = shortened ? scenario.training.iterations : recorded;
  if (scenario.training.warmup_iterations >= replayed)
    throw InputError(shortened ? scenario.source_of("/training/iterations") : file,
                     shortened ? "/training/iterations" : "/iterations",
                     (shortened ? "replays " : "the schedule has ") + std::to_string(replayed) +
                         " iterations, not more than the scenario's warmup_iterations (" +
                         std::to_string(scenario.training.warmup_iterations) + ")");
  compressed.schedule.resize(static_cast<size_t>(replayed));
  compressed.quality.resize(static_cast<size_t>(replayed));
  scenario.training.iterations = replayed;
  scenario.resolved["training"]["iterations"] = replayed;
  // Like the compressor, the scope is the schedule's.
  if (scenario.resolved["training"].contains("compression_scope"))
    scenario.resolved["training"]["compression_scope"] =
        compression_scope_of(compressed.schedule.front().parts);
  const size_t layers = scenario.workload.layers.size();
  for (int i = 0; i < replayed; ++i) {
    const auto& parts = compressed.schedule[static_cast<size_t>(i)].parts;
    for (size_t p = 0; p < parts.size(); ++p)
      if (static_cast<size_t>(parts[p].ready_layer) >= layers)
        throw InputError(
            file,
            "/iterations/" + std::to_string(i) + "/parts/" + std::to_string(p) + "/ready_layer",
            "layer " + std::to_string(parts[p].ready_layer) + " does not exist: the workload has " +
                std::to_string(layers) + " layers");
  }
  return replay;
}

} // namespace gcsim::training
