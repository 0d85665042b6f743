#pragma once
// `--set path=value` overrides: a study varies one field of a scenario
// without copying the file. The path is dotted ("platform.link.bandwidth",
// "platform.fat_tree.down.0"); the value is JSON if it parses as JSON
// (numbers, true/false, objects) and a plain string otherwise ("10Gbps").

#include <set>
#include <string>
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

/// Parses "a.b.c=value"; a malformed one is an InputError naming "--set".
Override parse_override(const std::string& text);

/// Sets the field, creating intermediate objects; an index into an array
/// must exist. Errors name "--set" and the path.
void apply_override(nlohmann::json& document, const Override& override_);

} // namespace gcsim
