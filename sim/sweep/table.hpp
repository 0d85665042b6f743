#pragma once
// sweep.csv: one row per point, one column per grid parameter and per
// numeric summary metric, readable by pandas.read_csv and Python's csv.
//
// Columns, in this order: `point`; the grid parameters in file order;
// `command` (the rerun command line); `compressor_name` (from the scenario
// as run); `gradients` (where the point's gradients came from: captured, the
// synthesis that made more workers, synthetic, replay); then every numeric
// field of result.json's `summary`, sorted by name in natural order ("stride
// 2" before "stride 16"), nested objects flattened with dots
// ("fidelity.cosine"), one named like a column above as `summary.<name>`. A metric a
// point lacks is an empty cell. Numbers are written in their shortest exact
// form, so the same results give a byte-identical file.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::sweep {

struct Row {
  std::string point;
  std::vector<nlohmann::json> values; // one per grid parameter
  std::string command;
  nlohmann::json result; // the point's result.json
};

/// Every number under `object`, keyed by its dotted path below it. Booleans,
/// strings and arrays are not metrics and are left out.
std::map<std::string, nlohmann::json> numeric_fields(const nlohmann::json& object);

/// One CSV field, quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text);

/// The whole sweep.csv text.
std::string make_csv(const std::vector<std::string>& grid_keys, const std::vector<Row>& rows);

} // namespace gcsim::sweep
