#include "sim/scenario/overrides.hpp"

#include "sim/input/input_error.hpp"
#include "sim/input/json_reader.hpp"

namespace gcsim {
namespace {

bool is_index(const std::string& token) {
  return !token.empty() && token.size() < 10 &&
         token.find_first_not_of("0123456789") == std::string::npos;
}

} // namespace

std::string Override::pointer() const {
  std::string pointer;
  for (const std::string& token : path)
    pointer += "/" + json_pointer_token(token);
  return pointer;
}

bool opens_json_container(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  return first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
}

Override parse_override(const std::string& text) {
  size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0)
    throw InputError("--set " + text, "", "expected path=value, e.g. platform.nodes=16");
  Override result;
  result.text = text;
  std::string path = text.substr(0, equals);
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string token =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (token.empty())
      throw InputError("--set " + text, "", "empty component in the path \"" + path + "\"");
    result.path.push_back(token);
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  std::string value = text.substr(equals + 1);
  try {
    // A key twice ({"density": 0.01, "density": 0.02}) is refused, as in a file.
    result.value = parse_checked_json(value, "--set " + text.substr(0, equals), result.pointer());
  } catch (const nlohmann::json::parse_error& error) {
    // A value that opens an object or an array is JSON gone wrong (a missing
    // brace), not a string: as one, it was refused later for its type, and
    // the user never told why.
    if (opens_json_container(value))
      throw InputError(
          "--set " + text.substr(0, equals), "",
          "the value opens a JSON " +
              std::string(value[value.find_first_not_of(" \t")] == '{' ? "object" : "array") +
              " but is not valid JSON (" + parse_error_problem(error) +
              "); a string that starts so is given quoted, --set '" + text.substr(0, equals) +
              "=\"...\"'");
    result.value = value;
  } catch (const nlohmann::json::out_of_range&) {
    result.value = value; // a number past a double ("1e999"): a string, as before
  }
  // Taken as a string, the value is raw bytes; result.json must be UTF-8.
  try {
    (void)result.value.dump();
  } catch (const nlohmann::json::type_error&) {
    throw InputError("--set " + text.substr(0, equals), "", "the value is not valid UTF-8 text");
  }
  return result;
}

void apply_override(nlohmann::json& document, const Override& override_) {
  nlohmann::json* node = &document;
  std::string walked;
  for (size_t i = 0; i < override_.path.size(); ++i) {
    const std::string& token = override_.path[i];
    bool last = i + 1 == override_.path.size();
    if (node->is_array()) {
      if (!is_index(token) || std::stoul(token) >= node->size())
        throw InputError("--set " + override_.text, walked,
                         "\"" + token + "\" is not an index of this array of " +
                             std::to_string(node->size()));
      node = &(*node)[std::stoul(token)];
    } else {
      if (node->is_null())
        *node = nlohmann::json::object();
      if (!node->is_object())
        throw InputError("--set " + override_.text, walked.empty() ? "/" : walked,
                         "cannot set a field inside " + describe_json(*node));
      node = &(*node)[token];
    }
    walked += "/" + json_pointer_token(token);
    if (last)
      *node = override_.value;
  }
}

} // namespace gcsim
