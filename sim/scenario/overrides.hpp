#pragma once
// `--set path=value` overrides: a study varies one field of a scenario
// without copying the file. The path is dotted ("platform.link.bandwidth",
// "platform.fat_tree.down.0"); the value is JSON if it parses as JSON
// (numbers, true/false, objects) and a plain string otherwise ("10Gbps").

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim {

struct Override {
  std::vector<std::string> path; // the dotted path, split
  nlohmann::json value;
  std::string text; // as the user wrote it, for messages

  /// JSON pointer of the overridden field ("/platform/link/bandwidth").
  std::string pointer() const;
};

/// Parses "a.b.c=value"; a malformed one is an InputError naming "--set",
/// as is a value that opens a JSON object or array ('{', '[') and is not
/// valid JSON: a string that starts so is given quoted ("\"[draft]\"").
Override parse_override(const std::string& text);

/// Whether `text`, after spaces, opens a JSON object or array: such a
/// --set value must be JSON, and a string must be quoted to be one.
bool opens_json_container(std::string_view text);

/// Sets the field, creating intermediate objects; an index into an array
/// must exist. Errors name "--set" and the path.
void apply_override(nlohmann::json& document, const Override& override_);

} // namespace gcsim
