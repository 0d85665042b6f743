#include "sim/cost/device_profile.hpp"

#include "sim/input/input_error.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/input/units.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace gcsim::cost {
namespace {

constexpr const char* kFormat = "gcsim-device-profile/1";
constexpr std::array<std::string_view, 7> kLayerKinds{"conv", "linear",    "norm", "embedding",
                                                      "lstm", "attention", "other"};
// The largest per-kind efficiency read (a factor on the FLOP rate).
constexpr int kMaxEfficiency = 4;

// Seven significant digits keep profiles readable; the monotonicity check
// allows for that rounding.
double rounded(double value) {
  if (value == 0 || !std::isfinite(value))
    return value;
  char text[32];
  std::snprintf(text, sizeof text, "%.7g", value);
  return std::strtod(text, nullptr);
}

// Seven digits, as the points are stored: a profile written and read back
// prices every pass as it did (four digits moved a 45.722 us latency).
std::string format_rate(double flops_per_s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.7gTflops", flops_per_s / 1e12);
  return text;
}

std::string format_duration(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.7gus", seconds * 1e6);
  return text;
}

// [min, max] of one shape field.
std::pair<double, double> read_interval(ObjectReader& reader, std::string_view key) {
  const nlohmann::json& value = reader.require(key);
  if (!value.is_array() || value.size() != 2 || !value[0].is_number() || !value[1].is_number())
    reader.fail(key, "expected [min, max], got " + describe_json(value));
  const double low = value[0].get<double>();
  const double high = value[1].get<double>();
  if (!(low >= 0) || !(high >= low) || !std::isfinite(high))
    reader.fail(key,
                "expected 0 <= min <= max, got [" + value[0].dump() + ", " + value[1].dump() + "]");
  return {low, high};
}

Curve read_curve(ObjectReader& reader, const Family& family, bool check_monotone) {
  // Each kernel has one family: another kernel's (latency_linear on
  // topk_select) is no "unknown value".
  if (const nlohmann::json& written = reader.require("family");
      written.is_string() && written.get<std::string>() != family.name)
    reader.fail("family", "\"" + written.get<std::string>() +
                              "\" is not this kernel's family: it is fitted as \"" +
                              std::string(family.name) + "\"");
  reader.choice("family", {std::string(family.name)});
  ObjectReader range_reader = reader.object("range");
  ShapeRange range;
  std::tie(range.n_min, range.n_max) = read_interval(range_reader, "n");
  if (family.uses_k)
    std::tie(range.k_min, range.k_max) = read_interval(range_reader, "k");
  if (family.uses_rows)
    std::tie(range.rows_min, range.rows_max) = read_interval(range_reader, "rows");
  if (family.uses_cols)
    std::tie(range.cols_min, range.cols_max) = read_interval(range_reader, "cols");
  if (family.uses_k && range_reader.has("k_per_n")) {
    range.has_k_per_n = true;
    std::tie(range.k_per_n_min, range.k_per_n_max) = read_interval(range_reader, "k_per_n");
  }
  if (family.uses_cols && range_reader.has("cols_per_n")) {
    range.has_cols_per_n = true;
    std::tie(range.cols_per_n_min, range.cols_per_n_max) =
        read_interval(range_reader, "cols_per_n");
  }
  range_reader.finish();
  // Pieces are in the family's field unless the fit found a step in k.
  const std::string piecewise_in =
      family.uses_k
          ? reader.choice_or("piecewise_in", {"n", "k"}, std::string(1, family.piecewise_in))
          : std::string(1, family.piecewise_in);

  const nlohmann::json& list = reader.require("segments");
  if (!list.is_array() || list.empty())
    reader.fail("segments", "expected a non-empty array of segments, got " + describe_json(list));
  std::vector<Segment> segments;
  for (std::size_t s = 0; s < list.size(); ++s) {
    ObjectReader segment_reader(list[s], reader.file(),
                                reader.path_of("segments") + "/" + std::to_string(s));
    Segment segment;
    // Without "from" a segment starts where the previous one ends (no gap).
    segment.from = segment_reader.number_or("from", segments.empty() ? 0.0 : segments.back().up_to);
    segment.up_to = segment_reader.number_or("up_to", std::numeric_limits<double>::infinity());
    for (std::size_t t = 0; t < family.term_count; ++t)
      segment.coefficients[t] = segment_reader.number(term_key(family.terms[t]));
    segment_reader.finish();
    segments.push_back(segment);
  }
  Curve curve(family, std::move(segments), range, piecewise_in[0]);
  std::string where;
  const std::string problem = curve.problem(&where, check_monotone);
  if (!problem.empty())
    throw InputError(reader.file(), reader.path() + where, problem);
  return curve;
}

KernelModel read_kernel(ObjectReader& reader, Kernel kernel, bool need_points,
                        bool check_monotone) {
  const Family& family = kernel_family(kernel);
  KernelModel model;
  model.regime = reader.string_or("regime", "");
  model.source = reader.string_or("source", "");
  ObjectReader fit_reader = reader.object("fit");
  model.curve = read_curve(fit_reader, family, check_monotone);
  fit_reader.finish();
  const nlohmann::json* points = reader.find("points");
  if (points == nullptr && need_points)
    reader.fail("points", "a measured profile keeps the raw timings of every kernel");
  if (points != nullptr) {
    if (!points->is_array())
      reader.fail("points", "expected an array, got " + describe_json(*points));
    if (points->empty() && need_points)
      reader.fail("points", "a measured profile keeps the raw timings of every kernel; got none");
    for (std::size_t p = 0; p < points->size(); ++p) {
      ObjectReader point(points->at(p), reader.file(),
                         reader.path_of("points") + "/" + std::to_string(p));
      // A size the kernel family uses, as the fit and the residuals read
      // it: a missing one was 0, and a negative one or k > n was fitted.
      const auto size = [&](std::string_view key, bool used, double most, const char* bound) {
        // A size the time does not depend on would be silently dropped: a
        // slip in a hand-made profile (a k on a sketch) is said instead.
        if (!used) {
          const double value = point.number_or(key, 0);
          if (value != 0)
            point.fail(key, std::string(kernel_name(kernel)) + "'s time does not depend on " +
                                std::string(key) + "; expected 0 or no " + std::string(key) +
                                ", got " + describe_json(point.require(key)));
          return value;
        }
        const double value = point.number(key);
        if (!(value >= 1 && value <= most)) {
          char range[96];
          std::snprintf(range, sizeof range, "expected a size in [1, %s%.17g], got ", bound, most);
          point.fail(key, range + describe_json(point.require(key)));
        }
        return value;
      };
      Sample sample;
      sample.shape.n = size("n", true, kLargestBytes, "");
      sample.shape.k = size("k", family.uses_k, sample.shape.n, "n = ");
      sample.shape.rows = size("rows", family.uses_rows, kLargestBytes, "");
      sample.shape.cols = size("cols", family.uses_cols, kLargestBytes, "");
      // Not 0: down to 1e-300 s the fit found no curve (exit 1, no field named).
      sample.seconds = point.positive_seconds("seconds");
      model.repetitions.push_back(static_cast<double>(point.integer_or("reps", 0, 1 << 30, 0)));
      point.finish();
      model.points.push_back(sample);
    }
  }
  return model;
}

Provenance read_provenance(ObjectReader& reader) {
  Provenance provenance;
  provenance.kind = reader.choice("kind", {"measured", "derived"});
  if (provenance.kind == "measured") {
    // What measured it and when: a blank one tells a reader nothing (and
    // to_json leaves it out, so a refit's output would lack the field).
    const auto said = [&reader](const char* key) {
      std::string text = reader.string(key);
      if (text.empty())
        reader.fail(key, "empty: a measured profile says how and when it was measured");
      return text;
    };
    provenance.command = said("command");
    provenance.date = said("date");
    provenance.host = reader.string_or("host", "");
    provenance.regime = reader.string_or("regime", "");
    return provenance;
  }
  provenance.regime = reader.string("regime");
  const nlohmann::json& list = reader.require("sources");
  if (!list.is_array() || list.empty())
    reader.fail("sources", "a derived profile cites the source of every figure it uses");
  for (std::size_t s = 0; s < list.size(); ++s) {
    ObjectReader source(list[s], reader.file(),
                        reader.path_of("sources") + "/" + std::to_string(s));
    provenance.sources.push_back(
        Source{source.string("figure"), source.string("value"), source.string("source")});
    source.finish();
  }
  return provenance;
}

ComputeModel read_compute(ObjectReader& reader) {
  ComputeModel compute;
  compute.forward_flops_per_s = reader.flop_rate("forward_flop_rate");
  compute.backward_flops_per_s = reader.flop_rate("backward_flop_rate");
  // Profiles written before 2026-12-02 carry the FLOP convention the
  // workloads now state per layer; the one value ever written agrees with it.
  if (reader.has("backward_flops_ratio") && reader.positive_number("backward_flops_ratio") != 2.0)
    reader.fail("backward_flops_ratio",
                "is no longer read: a layer's backward FLOPs are the workload's backward_flops "
                "(twice its forward FLOPs where not given); remove the field and set those");
  compute.layer_latency_s = reader.duration_or("layer_latency", 0.0);
  compute.source = reader.string_or("source", "");
  ObjectReader efficiency = reader.object("efficiency");
  for (std::size_t i = 0; i < kLayerKinds.size(); ++i) {
    compute.efficiency[i] = efficiency.positive_number(kLayerKinds[i]);
    // A factor on the measured GEMM rate: a little over 1 is real (cuDNN's
    // Winograd convolutions do fewer multiplies than their FLOPs count), a
    // percentage (50 for 0.5) is not, and would run that kind 100 times fast.
    if (compute.efficiency[i] > kMaxEfficiency)
      efficiency.fail(kLayerKinds[i], "expected a factor on the FLOP rate of at most " +
                                          std::to_string(kMaxEfficiency) +
                                          " (0.5 for half of it, not 50), got " +
                                          describe_json(efficiency.require(kLayerKinds[i])));
  }
  efficiency.finish();
  return compute;
}

ModelTimes read_model_times(ObjectReader& reader) {
  ModelTimes times;
  times.source = reader.string_or("source", "");
  const nlohmann::json& batches = reader.require("batches");
  if (!batches.is_array() || batches.empty())
    reader.fail("batches", "expected a non-empty array of micro-batch sizes");
  for (const nlohmann::json& batch : batches) {
    if (!batch.is_number_integer() || batch.get<int64_t>() <= 0 || batch.get<int64_t>() > 1 << 24)
      reader.fail("batches", "expected positive integers, got " + batch.dump());
    if (!times.batches.empty() && batch.get<int>() <= times.batches.back())
      reader.fail("batches", "must increase");
    times.batches.push_back(batch.get<int>());
  }
  const nlohmann::json& layers = reader.require("layers");
  ObjectReader layers_reader = reader.object("layers");
  if (layers.empty())
    reader.fail("layers", "expected one entry per layer");
  auto series = [&](ObjectReader& layer, std::string_view key) {
    const nlohmann::json& values = layer.require(key);
    std::vector<double> seconds;
    if (!values.is_array() || values.size() != times.batches.size())
      layer.fail(key, "expected one time per batch (" + std::to_string(times.batches.size()) +
                          "), got " + describe_json(values));
    for (const nlohmann::json& value : values) {
      if (!value.is_number() || !is_measured_seconds(value.get<double>()))
        layer.fail(key, "expected seconds, 0 or in [1e-12, 1e9], got " + value.dump());
      seconds.push_back(value.get<double>());
    }
    return seconds;
  };
  for (auto it = layers.begin(); it != layers.end(); ++it) {
    ObjectReader layer = layers_reader.object(it.key());
    ModelTimes::Layer& entry = times.layers[it.key()];
    entry.forward_s = series(layer, "forward_s");
    entry.backward_s = series(layer, "backward_s");
    layer.finish();
  }
  layers_reader.finish();
  return times;
}

std::size_t layer_kind_index(std::string_view kind) {
  for (std::size_t i = 0; i < kLayerKinds.size(); ++i)
    if (kLayerKinds[i] == kind)
      return i;
  throw std::invalid_argument("unknown layer kind \"" + std::string(kind) +
                              "\"; expected conv, linear, norm, embedding, lstm, attention or "
                              "other");
}

void check_flops(double flops) {
  if (!(flops >= 0) || !std::isfinite(flops))
    throw std::invalid_argument("layer FLOPs must be finite and non-negative");
}

} // namespace

KernelModel fit_measured_kernel(Kernel kernel, std::vector<Sample> samples) {
  for (Sample& sample : samples)
    sample.seconds = rounded(sample.seconds);
  KernelModel model;
  model.curve = fit_curve(kernel_family(kernel), samples);
  model.points = std::move(samples);
  return model;
}

double scale_to_batch(double seconds, int from_batch, int to_batch, double fixed_s) {
  assert(from_batch > 0 && to_batch > 0 && "batches are positive");
  // A pass faster than the latency tells nothing of its per-sample cost: it
  // keeps its time at smaller batches and grows in proportion at larger ones.
  if (seconds <= fixed_s)
    return to_batch < from_batch ? seconds : seconds * to_batch / from_batch;
  return fixed_s + (seconds - fixed_s) * to_batch / from_batch;
}

std::optional<std::pair<double, double>>
ModelTimes::layer_seconds(std::string_view layer, int batch, double fixed_s) const {
  const auto found = layers.find(layer);
  if (found == layers.end())
    return std::nullopt;
  const Layer& times = found->second;
  assert(!batches.empty() && times.forward_s.size() == batches.size() &&
         "checked when the profile was read");
  const auto b = static_cast<double>(batch);
  const std::size_t last = batches.size() - 1;
  if (batch <= batches.front() || batch >= batches.back()) {
    const std::size_t i = batch <= batches.front() ? 0 : last;
    return std::pair{scale_to_batch(times.forward_s[i], batches[i], batch, fixed_s),
                     scale_to_batch(times.backward_s[i], batches[i], batch, fixed_s)};
  }
  std::size_t i = 0;
  while (batches[i + 1] < batch)
    ++i;
  const double w = (b - batches[i]) / (batches[i + 1] - batches[i]);
  auto between = [&](const std::vector<double>& s) { return s[i] + w * (s[i + 1] - s[i]); };
  return std::pair{between(times.forward_s), between(times.backward_s)};
}

const std::array<std::string_view, 7>& DeviceProfile::layer_kinds() {
  return kLayerKinds;
}

DeviceProfile DeviceProfile::load(const std::filesystem::path& file, bool check_monotone) {
  return from_json(load_json_file(file), file.string(), check_monotone);
}

DeviceProfile DeviceProfile::from_json(const nlohmann::json& json, const std::string& file,
                                       bool check_monotone) {
  DeviceProfile profile;
  ObjectReader root(json, file, "");
  root.string_or("comment", "");
  root.format(kFormat, "a device profile");
  profile.name_ = root.string("name");

  ObjectReader device = root.object("device");
  profile.device_kind_ = device.choice("kind", {"gpu", "cpu"});
  profile.device_model_ = device.string("model");
  if (device.has("details"))
    device.object("details");
  device.finish();
  profile.device_ = root.require("device");

  ObjectReader provenance = root.object("provenance");
  profile.provenance_ = read_provenance(provenance);
  provenance.finish();

  ObjectReader compute = root.object("compute");
  profile.compute_ = read_compute(compute);
  compute.finish();

  const bool measured = profile.provenance_.kind == "measured";
  ObjectReader kernels = root.object("kernels");
  for (Kernel kernel : all_kernels()) {
    ObjectReader entry = kernels.object(kernel_name(kernel));
    profile.kernels_[static_cast<std::size_t>(kernel)] =
        read_kernel(entry, kernel, measured, check_monotone);
    entry.finish();
  }
  kernels.finish();
  if (const nlohmann::json* all = root.find("model_times")) {
    ObjectReader models(*all, file, "/model_times");
    for (auto it = all->begin(); it != all->end(); ++it) {
      ObjectReader entry = models.object(it.key());
      profile.model_times_[it.key()] = read_model_times(entry);
      entry.finish();
    }
  }
  root.finish();
  profile.file_ = file;
  return profile;
}

const ModelTimes* DeviceProfile::model_times(std::string_view model) const {
  const auto found = model_times_.find(model);
  return found == model_times_.end() ? nullptr : &found->second;
}

nlohmann::json DeviceProfile::to_json() const {
  nlohmann::json json;
  json["format"] = kFormat;
  json["name"] = name_;
  json["device"] = device_;
  json["device"]["kind"] = device_kind_;
  json["device"]["model"] = device_model_;

  nlohmann::json provenance{{"kind", provenance_.kind}};
  if (!provenance_.command.empty())
    provenance["command"] = provenance_.command;
  if (!provenance_.date.empty())
    provenance["date"] = provenance_.date;
  if (!provenance_.host.empty())
    provenance["host"] = provenance_.host;
  if (!provenance_.regime.empty())
    provenance["regime"] = provenance_.regime;
  if (!provenance_.sources.empty()) {
    provenance["sources"] = nlohmann::json::array();
    for (const Source& source : provenance_.sources)
      provenance["sources"].push_back(
          {{"figure", source.figure}, {"value", source.value}, {"source", source.source}});
  }
  json["provenance"] = provenance;

  nlohmann::json compute{{"forward_flop_rate", format_rate(compute_.forward_flops_per_s)},
                         {"backward_flop_rate", format_rate(compute_.backward_flops_per_s)},
                         {"layer_latency", format_duration(compute_.layer_latency_s)}};
  for (std::size_t i = 0; i < kLayerKinds.size(); ++i)
    compute["efficiency"][std::string(kLayerKinds[i])] = compute_.efficiency[i];
  if (!compute_.source.empty())
    compute["source"] = compute_.source;
  json["compute"] = compute;

  nlohmann::json kernels = nlohmann::json::object();
  for (Kernel kernel : all_kernels()) {
    const KernelModel& model = this->kernel(kernel);
    const Family& family = kernel_family(kernel);
    nlohmann::json entry;
    if (!model.regime.empty())
      entry["regime"] = model.regime;
    if (!model.source.empty())
      entry["source"] = model.source;
    const ShapeRange& range = model.curve.range();
    nlohmann::json fit{{"family", std::string(family.name)}};
    fit["range"]["n"] = {range.n_min, range.n_max};
    if (family.uses_k)
      fit["range"]["k"] = {range.k_min, range.k_max};
    if (family.uses_rows)
      fit["range"]["rows"] = {range.rows_min, range.rows_max};
    if (family.uses_cols)
      fit["range"]["cols"] = {range.cols_min, range.cols_max};
    if (family.uses_k && range.has_k_per_n)
      fit["range"]["k_per_n"] = {rounded(range.k_per_n_min), rounded(range.k_per_n_max)};
    if (family.uses_cols && range.has_cols_per_n)
      fit["range"]["cols_per_n"] = {rounded(range.cols_per_n_min), rounded(range.cols_per_n_max)};
    if (model.curve.piecewise_in() != family.piecewise_in)
      fit["piecewise_in"] = std::string(1, model.curve.piecewise_in());
    fit["segments"] = nlohmann::json::array();
    for (const Segment& segment : model.curve.segments()) {
      nlohmann::json piece = nlohmann::json::object();
      if (segment.from > 0)
        piece["from"] = rounded(segment.from);
      if (std::isfinite(segment.up_to))
        piece["up_to"] = rounded(segment.up_to);
      for (std::size_t t = 0; t < family.term_count; ++t)
        piece[std::string(term_key(family.terms[t]))] = rounded(segment.coefficients[t]);
      fit["segments"].push_back(piece);
    }
    entry["fit"] = fit;
    if (!model.points.empty()) {
      entry["points"] = nlohmann::json::array();
      for (std::size_t p = 0; p < model.points.size(); ++p) {
        const Sample& sample = model.points[p];
        nlohmann::json point{{"n", sample.shape.n}};
        if (family.uses_k || sample.shape.k > 0)
          point["k"] = sample.shape.k;
        if (family.uses_rows)
          point["rows"] = sample.shape.rows;
        if (family.uses_cols)
          point["cols"] = sample.shape.cols;
        point["seconds"] = rounded(sample.seconds);
        if (p < model.repetitions.size() && model.repetitions[p] > 0)
          point["reps"] = static_cast<int64_t>(model.repetitions[p]);
        entry["points"].push_back(point);
      }
    }
    kernels[std::string(kernel_name(kernel))] = entry;
  }
  json["kernels"] = kernels;
  for (const auto& [model, times] : model_times_) {
    nlohmann::json entry{{"batches", times.batches}, {"layers", nlohmann::json::object()}};
    if (!times.source.empty())
      entry["source"] = times.source;
    for (const auto& [layer, seconds] : times.layers)
      entry["layers"][layer] = {{"forward_s", seconds.forward_s},
                                {"backward_s", seconds.backward_s}};
    json["model_times"][model] = entry;
  }
  return json;
}

double DeviceProfile::pass_seconds(const char* pass, double rate, std::string_view layer_kind,
                                   double flops) const {
  check_flops(flops);
  const double seconds =
      compute_.layer_latency_s + flops / (rate * compute_.efficiency[layer_kind_index(layer_kind)]);
  if (!runnable(seconds))
    fail_unrunnable("/compute",
                    std::string("the ") + pass + " pass of a " + std::string(layer_kind) + " layer",
                    flops, "FLOPs", seconds);
  return seconds;
}

double DeviceProfile::forward_seconds(std::string_view layer_kind, double flops) const {
  return pass_seconds("forward", compute_.forward_flops_per_s, layer_kind, flops);
}

double DeviceProfile::backward_seconds(std::string_view layer_kind, double flops) const {
  return pass_seconds("backward", compute_.backward_flops_per_s, layer_kind, flops);
}

double DeviceProfile::optimizer_seconds(double parameters) const {
  return kernel_seconds(Kernel::sgd_momentum, KernelShape{parameters, 0, 0, 0});
}

double DeviceProfile::kernel_seconds(std::string_view kernel, const KernelShape& shape) const {
  if (kernel == kLowRankProduct) {
    const double streaming = kernel_seconds(Kernel::l2_norm, KernelShape{shape.n, 0, 0, 0});
    if (!(shape.k >= 0) || !std::isfinite(shape.k))
      throw std::invalid_argument("kernel low_rank_product: shape fields must be finite and "
                                  "non-negative");
    // The FLOPs without the profile's per-layer latency, a whole pass's
    // overhead: the streaming curve carries one kernel's.
    const double flops = 2 * shape.n * shape.k;
    const double computing =
        flops / (compute_.forward_flops_per_s * compute_.efficiency[layer_kind_index("linear")]);
    if (!runnable(computing))
      fail_unrunnable("/compute", "a low-rank product", flops, "FLOPs", computing);
    return std::max(streaming, computing);
  }
  const std::optional<Kernel> found = kernel_from_name(kernel);
  if (!found) {
    std::string known;
    for (Kernel candidate : all_kernels())
      known += " " + std::string(kernel_name(candidate));
    throw std::invalid_argument("unknown kernel \"" + std::string(kernel) + "\"; known:" + known +
                                " " + std::string(kLowRankProduct));
  }
  return kernel_seconds(*found, shape);
}

double DeviceProfile::kernel_seconds(Kernel kernel, const KernelShape& shape) const {
  for (double field : {shape.n, shape.k, shape.rows, shape.cols})
    if (!(field >= 0) || !std::isfinite(field))
      throw std::invalid_argument("kernel " + std::string(kernel_name(kernel)) +
                                  ": shape fields must be finite and non-negative");
  const double seconds = this->kernel(kernel).curve.seconds(shape);
  if (!runnable(seconds)) {
    const std::string name(kernel_name(kernel));
    fail_unrunnable("/kernels/" + name + "/fit", "kernel " + name, shape.n, "elements", seconds);
  }
  return seconds;
}

bool DeviceProfile::runnable(double seconds) {
  return std::isfinite(seconds) && seconds >= 0 && seconds <= kLongestSeconds;
}

void DeviceProfile::fail_unrunnable(const std::string& path, const std::string& what, double size,
                                    const char* unit, double seconds) const {
  char text[128];
  std::snprintf(text, sizeof text, " over %.4g %s takes %.3g s", size, unit, seconds);
  throw InputError(file_, path,
                   what + text +
                       ", which no simulation can run: check the figures here (and "
                       "the workload's)");
}

void DeviceProfile::set_device(std::string kind, std::string model, nlohmann::json details) {
  device_ = nlohmann::json{{"kind", kind}, {"model", model}, {"details", std::move(details)}};
  device_kind_ = std::move(kind);
  device_model_ = std::move(model);
}

void DeviceProfile::set_kernel(Kernel kernel, KernelModel model) {
  kernels_[static_cast<std::size_t>(kernel)] = std::move(model);
}

} // namespace gcsim::cost
