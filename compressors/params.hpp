// Compressor parameters: specifications, validation, defaults.
#pragma once

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::compress {

// Unknown compressor or parameter, or a value of the wrong type or range. The
// message names the parameter (and suggests the closest known name).
class ParameterError : public std::invalid_argument {
public:
  explicit ParameterError(const std::string& message, std::string parameter = {})
      : std::invalid_argument(message), parameter_(std::move(parameter)) {}
  // The parameter at fault; empty when it is the compressor's name or the
  // parameter object as a whole.
  const std::string& parameter() const { return parameter_; }

private:
  std::string parameter_;
};

struct ParamSpec {
  enum class Type { number, integer, boolean, choice };
  std::string name;
  Type type = Type::number;
  nlohmann::json default_value;
  std::string description;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  std::vector<std::string> choices; // Type::choice only
  std::vector<long long> values;    // Type::integer: the only ones accepted, when not empty

  static ParamSpec number(std::string name, double def, double min, double max, std::string desc,
                          bool min_exclusive = false);
  static ParamSpec integer(std::string name, long long def, long long min, long long max,
                           std::string desc);
  // An integer that takes only `values` ("4 or 8"), not a whole range.
  static ParamSpec integer_of(std::string name, long long def, std::vector<long long> values,
                              std::string desc);
  static ParamSpec boolean(std::string name, bool def, std::string desc);
  static ParamSpec choice(std::string name, std::string def, std::vector<std::string> choices,
                          std::string desc);
};

// What a parameter accepts, as its check's message and `gcsim compressors` say it:
// "true or false", "one of a, b", "4 or 8", "an integer in [1, 64]", "a number in (0, 1]".
std::string accepted_text(const ParamSpec& spec);

// The name of the option closest to `word` by edit distance, or one that
// starts with `word` (3 characters or more), or "" if none is close. Also
// what the simulator's input reader suggests for misspelt fields and values.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& options);

// Checks `given` (a JSON object, or null for "all defaults") against the specs
// and returns an object with every parameter, defaults filled in.
// Throws ParameterError on an unknown name or a bad value.
nlohmann::json resolve_params(const std::string& compressor, const std::vector<ParamSpec>& specs,
                              const nlohmann::json& given);

} // namespace gcsim::compress
