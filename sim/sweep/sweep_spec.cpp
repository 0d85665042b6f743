#include "sim/sweep/sweep_spec.hpp"

#include "sim/input/json_reader.hpp"
#include "sim/input/paths.hpp"
#include "sim/input/units.hpp"
#include "sim/scenario/overrides.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace gcsim::sweep {
namespace {

// What makes two grid values one: a quantity written two ways ("10Gbps",
// "10 Gbps", "1.25GBps") is one value, as the scenario reads it.
nlohmann::json same_value_key(const nlohmann::json& value) {
  if (value.is_string()) {
    using units::Quantity;
    for (const Quantity quantity :
         {Quantity::bandwidth, Quantity::duration, Quantity::size, Quantity::flop_rate})
      if (const std::optional<double> parsed =
              units::parse(value.get_ref<const std::string&>(), quantity))
        return nlohmann::json::array({"quantity", static_cast<int>(quantity), *parsed});
  }
  return nlohmann::json::array({"json", value});
}

bool valid_dotted_path(const std::string& key) {
  if (key.empty() || key.find('=') != std::string::npos)
    return false;
  return key.front() != '.' && key.back() != '.' && key.find("..") == std::string::npos;
}

// nlohmann::json keeps keys sorted; the grid's order is the user's loop
// order, so the keys are read again from the text in file order.
std::vector<std::string> keys_in_file_order(const std::filesystem::path& file,
                                            const std::string& member) {
  std::ifstream stream(file);
  std::stringstream buffer;
  buffer << stream.rdbuf();
  nlohmann::ordered_json document = nlohmann::ordered_json::parse(buffer.str(), nullptr, false);
  std::vector<std::string> keys;
  if (document.is_discarded() || !document.is_object() || !document.contains(member))
    return keys;
  for (auto it = document[member].begin(); it != document[member].end(); ++it)
    keys.push_back(it.key());
  return keys;
}

// The part of a dotted key that names it in a point id: "platform.nodes" ->
// "nodes", "compressor.name" -> "compressor".
std::string short_name(const std::string& key) {
  size_t dot = key.rfind('.');
  if (dot == std::string::npos)
    return key;
  std::string last = key.substr(dot + 1);
  if (last != "name")
    return last;
  size_t before = key.rfind('.', dot - 1);
  return key.substr(before == std::string::npos ? 0 : before + 1,
                    dot - (before == std::string::npos ? 0 : before + 1));
}

std::string label(const nlohmann::json& value) {
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_object()) {
    std::string text = value.contains("name") ? label(value["name"]) : "";
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (it.key() == "name")
        continue;
      text += (text.empty() ? "" : "-") + it.key() + label(it.value());
    }
    return text;
  }
  if (value.is_array()) {
    std::string text;
    for (const nlohmann::json& element : value)
      text += (text.empty() ? "" : "-") + label(element);
    return text;
  }
  return value.dump();
}

// Ids are folder names and CSV cells: letters, digits, '.', '+' and single
// dashes only, and short enough to read.
std::string sanitized(const std::string& text) {
  std::string result;
  for (char c : text) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '+' || c == '_';
    if (plain)
      result += c;
    else if (!result.empty() && result.back() != '-')
      result += '-';
  }
  while (!result.empty() && result.back() == '-')
    result.pop_back();
  if (result.size() > 40)
    result.resize(40);
  return result;
}

// One label per value of an axis: the value's "name" alone when the names
// tell the values apart (whole platform objects as values), else everything.
std::vector<std::string> axis_labels(const Axis& axis) {
  std::vector<std::string> names;
  std::vector<std::string> full;
  for (const nlohmann::json& value : axis.values) {
    full.push_back(sanitized(label(value)));
    bool named = value.is_object() && value.contains("name");
    names.push_back(named ? sanitized(label(value["name"])) : full.back());
  }
  const std::set<std::string> distinct(names.begin(), names.end());
  return distinct.size() == names.size() ? names : full;
}

} // namespace

std::string override_text(const nlohmann::json& value) {
  if (!value.is_string())
    return value.dump();
  const std::string& text = value.get<std::string>();
  // "16" as a string must not come back as the number 16, nor "[draft]"
  // as broken JSON (parse_override refuses what opens an array or object).
  const bool reads_as_json = !nlohmann::json::parse(text, nullptr, false).is_discarded();
  return reads_as_json || opens_json_container(text) ? value.dump() : text;
}

namespace {

// Each point is a `gcsim run` with a --set argument per value, and Linux
// takes no argument past MAX_ARG_STRLEN (32 pages, 131072 bytes with its
// NUL): such a value failed every point it was in, after the sweep began.
void check_argument_length(const std::string& key, const nlohmann::json& value,
                           const std::filesystem::path& file, const std::string& pointer) {
  constexpr size_t kLongestArgument = 131071;
  const size_t length = key.size() + 1 + override_text(value).size();
  if (length > kLongestArgument)
    throw InputError(file.string(), pointer,
                     "this value makes a --set argument of " + std::to_string(length) +
                         " bytes, more than the " + std::to_string(kLongestArgument) +
                         " a command-line argument may hold; put it in a file the scenario "
                         "names");
}

} // namespace

std::string value_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

SweepSpec load_sweep(const std::filesystem::path& file) {
  const nlohmann::json document = load_json_file(file);
  ObjectReader root(document, file.string(), "");
  root.string_or("description", "");
  root.string_or("comment", "");

  // A scenario given to `gcsim sweep` would be refused for its missing
  // base scenario, which says nothing of what the file is.
  if (!root.has("scenario") && root.has("platform"))
    root.fail("scenario", "required field is missing: this is a scenario (it has a \"platform\"), "
                          "which `gcsim run` runs; a sweep file names its base \"scenario\" and a "
                          "\"grid\"");

  SweepSpec spec;
  spec.file = file;
  std::string stem = file.stem().string();
  if (stem.size() > 6 && stem.compare(stem.size() - 6, 6, ".sweep") == 0)
    stem.resize(stem.size() - 6);
  spec.name = root.string_or("name", stem);
  if (!is_folder_name(spec.name))
    root.fail("name", folder_name_refusal("the sweep's folder", !root.has("name")));

  std::string scenario = root.string("scenario");
  spec.scenario = find_input_path(scenario, file, file.string(), root.path_of("scenario"));
  std::error_code error;
  if (!std::filesystem::is_regular_file(spec.scenario, error))
    root.fail("scenario", "\"" + scenario + "\" is not a regular file, expected a scenario JSON");

  const nlohmann::json& grid = root.require("grid");
  ObjectReader grid_reader(grid, file.string(), root.path_of("grid"));
  if (grid.empty())
    grid_reader.fail_here("the grid is empty; give at least one parameter and its values");
  for (const std::string& key : keys_in_file_order(file, "grid")) {
    const nlohmann::json& values = grid_reader.require(key);
    if (!valid_dotted_path(key))
      grid_reader.fail(key, "expected a dotted scenario path such as \"platform.nodes\"");
    if (!values.is_array() || values.empty())
      grid_reader.fail(key, "expected a non-empty array of values, got " + describe_json(values));
    Axis axis{key, {}};
    // Ordered as JSON orders them (1 and 1.0 are one value): comparing each
    // with every earlier one took hours for an axis of 10^6 values.
    std::map<nlohmann::json, size_t> seen;
    for (size_t i = 0; i < values.size(); ++i) {
      const auto [earlier, added] = seen.emplace(same_value_key(values[i]), i);
      if (!added && values[earlier->second] == values[i])
        throw InputError(file.string(), grid_reader.path_of(key) + "/" + std::to_string(i),
                         "duplicate value " + values[i].dump());
      if (!added)
        throw InputError(file.string(), grid_reader.path_of(key) + "/" + std::to_string(i),
                         values[i].dump() + " is " + values[earlier->second].dump() + " (value " +
                             std::to_string(earlier->second) +
                             ") written another way: the two points would be one run twice");
      if (values[i].is_null())
        throw InputError(file.string(), grid_reader.path_of(key) + "/" + std::to_string(i),
                         "null is not a value a scenario field can take");
      check_argument_length(key, values[i], file,
                            grid_reader.path_of(key) + "/" + std::to_string(i));
      axis.values.push_back(values[i]);
    }
    spec.axes.push_back(std::move(axis));
  }
  grid_reader.finish();
  // Counted in double, which cannot wrap (in size_t, 16 axes of 16 values
  // made 0 points) and is exact up to the cap.
  double product = 1;
  for (const Axis& axis : spec.axes)
    product *= static_cast<double>(axis.values.size());
  if (product > static_cast<double>(kMostPoints)) {
    char points[32];
    // Exact while a double holds the integer, then short: 100001, 1.845e+19.
    std::snprintf(points, sizeof points, product < 1e15 ? "%.0f" : "%.4g", product);
    grid_reader.fail_here(std::string("the grid has ") + points + " points, more than " +
                          std::to_string(kMostPoints) + "; split the sweep or give fewer values");
  }

  if (const nlohmann::json* set = root.find("set")) {
    ObjectReader set_reader(*set, file.string(), root.path_of("set"));
    for (const std::string& key : keys_in_file_order(file, "set")) {
      const nlohmann::json& value = set_reader.require(key);
      if (!valid_dotted_path(key))
        set_reader.fail(key, "expected a dotted scenario path such as \"training.iterations\"");
      if (grid.contains(key))
        set_reader.fail(key, "also a grid parameter; give it in one place only");
      check_argument_length(key, value, file, set_reader.path_of(key));
      spec.fixed.emplace_back(key, value);
    }
    set_reader.finish();
  }
  root.finish();
  return spec;
}

std::vector<Point> expand(const SweepSpec& spec) {
  size_t count = 1;
  for (const Axis& axis : spec.axes)
    count *= axis.values.size();
  const size_t width = std::max<size_t>(3, std::to_string(count - 1).size());

  std::vector<std::vector<std::string>> labels;
  for (const Axis& axis : spec.axes)
    labels.push_back(axis_labels(axis));

  std::vector<Point> points;
  points.reserve(count);
  for (size_t index = 0; index < count; ++index) {
    Point point;
    point.index = static_cast<int>(index);
    std::string number = std::to_string(index);
    point.id = "p" + std::string(width - number.size(), '0') + number;
    for (const auto& [key, value] : spec.fixed)
      point.set_arguments.push_back(key + "=" + override_text(value));
    // Mixed radix: the last axis is the fastest digit.
    size_t stride = count;
    for (size_t a = 0; a < spec.axes.size(); ++a) {
      const Axis& axis = spec.axes[a];
      stride /= axis.values.size();
      const size_t which = (index / stride) % axis.values.size();
      point.values.push_back(axis.values[which]);
      point.set_arguments.push_back(axis.key + "=" + override_text(axis.values[which]));
      const std::string& text = labels[a][which];
      point.id += "_" + sanitized(short_name(axis.key)) + (text.empty() ? "" : "-" + text);
    }
    // Refused here, before any point runs: the folder could not be made
    // while other points were running.
    if (point.id.size() > 255)
      throw InputError(spec.file.string(), "/grid",
                       "point " + point.id.substr(0, 1 + width) + "'s folder name would be " +
                           std::to_string(point.id.size()) +
                           " bytes, more than a file name may have (255): use fewer grid "
                           "parameters or shorter values");
    points.push_back(std::move(point));
  }
  return points;
}

} // namespace gcsim::sweep
