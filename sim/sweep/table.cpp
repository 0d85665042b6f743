#include "sim/sweep/table.hpp"

#include "sim/input/natural_order.hpp"
#include "sim/sweep/sweep_spec.hpp"
#include "sim/training/gradient_feed.hpp"

#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace gcsim::sweep {
namespace {

void collect(const nlohmann::json& object, const std::string& prefix,
             std::map<std::string, nlohmann::json>& out) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object())
      collect(*it, name, out);
    else if (it->is_number())
      out[name] = *it;
  }
}

void append_line(std::string& text, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i)
    text += (i == 0 ? "" : ",") + csv_field(fields[i]);
  text += '\n';
}

// The compressor the point ran, as the result records it ("" if it does not).
std::string compressor_name(const nlohmann::json& result) {
  const nlohmann::json::json_pointer pointer("/scenario/compressor/name");
  if (!result.contains(pointer) || !result[pointer].is_string())
    return "";
  return result[pointer].get<std::string>();
}

// Where the point's gradients came from: "captured" (a trace's own
// workers), the synthesis that made workers beyond them, "synthetic" and
// a layer spec's synthesis ("synthetic capture_fitted"; results from
// before the field were shared_heavy_signal's), "replay", or "" (dense
// runs none). A sweep over P mixes the first and the second, which the
// figures' densities depend on.
std::string gradient_source(const nlohmann::json& result) {
  const nlohmann::json::json_pointer pointer("/model/gradients");
  if (!result.contains(pointer) || !result[pointer].is_object())
    return "";
  const nlohmann::json& gradients = result[pointer];
  const std::string kind = gradients.value("kind", "");
  if (kind == "synthetic") {
    const std::string synthesis = gradients.value("synthesis", "shared_heavy_signal");
    // Parameters other than the fitted ones are no longer the capture's fit.
    const training::SyntheticGradients fitted;
    const double share = gradients.value("signal_share", fitted.signal_share);
    const double spread = gradients.value("spread", fitted.spread);
    if (share == fitted.signal_share && spread == fitted.spread)
      return "synthetic " + synthesis;
    return fmt::format("synthetic {} (signal_share {}, spread {})", synthesis, share, spread);
  }
  return kind == "trace" ? gradients.value("method", "") : kind;
}

// The build that made the point (`git describe` of its checkout), so that a
// sweep resumed with a newer build says which rows which build made; "" for
// results of builds before the field.
std::string source_commit(const nlohmann::json& result) {
  auto it = result.find("gcsim_commit");
  return it != result.end() && it->is_string() ? it->get<std::string>() : "";
}

} // namespace

std::map<std::string, nlohmann::json> numeric_fields(const nlohmann::json& object) {
  std::map<std::string, nlohmann::json> out;
  if (object.is_object())
    collect(object, "", out);
  return out;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos)
    return text;
  std::string quoted = "\"";
  for (char c : text)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string make_csv(const std::vector<std::string>& grid_keys, const std::vector<Row>& rows) {
  std::vector<std::string> header{"point"};
  header.insert(header.end(), grid_keys.begin(), grid_keys.end());
  // A grid over the scenario's "gradients" would give two columns of that
  // name, the second hiding the first from a reader by name: a result
  // column whose name a grid key has is headed "result.<name>".
  const std::set<std::string> grid(grid_keys.begin(), grid_keys.end());
  for (const char* name : {"command", "compressor_name", "gradients", "gcsim_commit"})
    header.push_back(grid.count(name) != 0 ? std::string("result.") + name : std::string(name));
  const std::set<std::string> taken(header.begin(), header.end());

  std::vector<std::map<std::string, nlohmann::json>> metrics;
  // Columns in natural order: "..., stride 2" before "..., stride 16".
  std::set<std::string, input::NaturalLess> metric_names;
  for (const Row& row : rows) {
    std::map<std::string, nlohmann::json> fields;
    for (auto& [name, value] :
         numeric_fields(row.result.value("summary", nlohmann::json::object())))
      fields[taken.count(name) != 0 ? "summary." + name : name] = value;
    for (const auto& field : fields)
      metric_names.insert(field.first);
    metrics.push_back(std::move(fields));
  }
  header.insert(header.end(), metric_names.begin(), metric_names.end());

  std::string text;
  append_line(text, header);
  for (size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    std::vector<std::string> fields{row.point};
    for (const nlohmann::json& value : row.values)
      fields.push_back(value_text(value));
    fields.push_back(row.command);
    fields.push_back(compressor_name(row.result));
    fields.push_back(gradient_source(row.result));
    fields.push_back(source_commit(row.result));
    for (const std::string& metric : metric_names) {
      auto it = metrics[r].find(metric);
      fields.push_back(it == metrics[r].end() ? "" : it->second.dump());
    }
    append_line(text, fields);
  }
  return text;
}

} // namespace gcsim::sweep
