#include "compressors/params.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>

namespace gcsim::compress {

ParamSpec ParamSpec::number(std::string name, double def, double min, double max, std::string desc,
                            bool min_exclusive) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = Type::number;
  s.default_value = def;
  s.description = std::move(desc);
  s.min = min;
  s.max = max;
  s.min_exclusive = min_exclusive;
  return s;
}

ParamSpec ParamSpec::integer(std::string name, long long def, long long min, long long max,
                             std::string desc) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = Type::integer;
  s.default_value = def;
  s.description = std::move(desc);
  s.min = static_cast<double>(min);
  s.max = static_cast<double>(max);
  return s;
}

ParamSpec ParamSpec::integer_of(std::string name, long long def, std::vector<long long> values,
                                std::string desc) {
  assert(!values.empty() && "integer_of: no accepted values");
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  ParamSpec s = integer(std::move(name), def, *lo, *hi, std::move(desc));
  s.values = std::move(values);
  return s;
}

ParamSpec ParamSpec::boolean(std::string name, bool def, std::string desc) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = Type::boolean;
  s.default_value = def;
  s.description = std::move(desc);
  return s;
}

ParamSpec ParamSpec::choice(std::string name, std::string def, std::vector<std::string> choices,
                            std::string desc) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = Type::choice;
  s.default_value = std::move(def);
  s.description = std::move(desc);
  s.choices = std::move(choices);
  return s;
}

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

nlohmann::json check_value(const std::string& compressor, const ParamSpec& s,
                           const nlohmann::json& v) {
  const std::string where = compressor + ": parameter '" + s.name + "': ";
  switch (s.type) {
  case ParamSpec::Type::boolean:
    if (!v.is_boolean()) {
      throw ParameterError(where + "expected true or false, got " + v.dump(), s.name);
    }
    return v;
  case ParamSpec::Type::choice: {
    if (!v.is_string()) {
      throw ParameterError(where + "expected a string, got " + v.dump(), s.name);
    }
    const auto value = v.get<std::string>();
    if (std::find(s.choices.begin(), s.choices.end(), value) == s.choices.end()) {
      throw ParameterError(where + "expected " + accepted_text(s) + ", got \"" + value + "\"",
                           s.name);
    }
    return v;
  }
  case ParamSpec::Type::integer:
  case ParamSpec::Type::number: {
    if (!v.is_number()) {
      throw ParameterError(where + "expected a number, got " + v.dump(), s.name);
    }
    const double x = v.get<double>();
    if (s.type == ParamSpec::Type::integer && (!std::isfinite(x) || std::floor(x) != x)) {
      throw ParameterError(where + "expected an integer, got " + v.dump(), s.name);
    }
    const bool low = s.min_exclusive ? !(x > s.min) : !(x >= s.min);
    bool accepted = std::isfinite(x) && !low && x <= s.max;
    if (accepted && !s.values.empty()) {
      accepted =
          std::find(s.values.begin(), s.values.end(), static_cast<long long>(x)) != s.values.end();
    }
    if (!accepted) {
      throw ParameterError(where + "expected " + accepted_text(s) + ", got " + v.dump(), s.name);
    }
    if (s.type == ParamSpec::Type::integer) {
      return nlohmann::json(static_cast<long long>(x));
    }
    return nlohmann::json(x);
  }
  }
  return v;
}

} // namespace

std::string accepted_text(const ParamSpec& spec) {
  const auto number_text = [](double value) {
    if (std::isinf(value)) {
      return std::string(value > 0 ? "inf" : "-inf");
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.10g", value);
    return std::string(text);
  };
  switch (spec.type) {
  case ParamSpec::Type::boolean:
    return "true or false";
  case ParamSpec::Type::choice: {
    std::string list;
    for (const auto& c : spec.choices) {
      list += (list.empty() ? "" : ", ") + c;
    }
    return "one of " + list;
  }
  case ParamSpec::Type::integer: {
    if (spec.values.empty()) {
      // Bounds come from long longs (ParamSpec::integer): printed whole, as
      // %g would print 2^40 as 1.099511628e+12.
      return "an integer in [" + std::to_string(static_cast<long long>(spec.min)) + ", " +
             std::to_string(static_cast<long long>(spec.max)) + "]";
    }
    std::string list;
    for (std::size_t i = 0; i < spec.values.size(); ++i) {
      list += (i == 0                        ? ""
               : i + 1 == spec.values.size() ? " or "
                                             : ", ") +
              std::to_string(spec.values[i]);
    }
    return list;
  }
  case ParamSpec::Type::number:
    break;
  }
  return std::string("a number in ") + (spec.min_exclusive ? "(" : "[") + number_text(spec.min) +
         ", " + number_text(spec.max) + (std::isinf(spec.max) ? ")" : "]");
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& options) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& option : options) {
    // The distance is at least the difference in length: a 50 MB key need
    // not be compared letter by letter with every name.
    const std::size_t apart =
        word.size() > option.size() ? word.size() - option.size() : option.size() - word.size();
    if (apart >= best_distance)
      continue;
    const std::size_t dist = edit_distance(word, option);
    if (dist < best_distance) {
      best_distance = dist;
      best = option;
    }
  }
  if (!best.empty() || word.size() < 3) {
    return best;
  }
  // A truncated name ("bucket" for "bucket_size") is a likely slip too, and
  // so is one made longer ("synthesis_method" for "synthesis"): the longest
  // name it starts with.
  for (const auto& option : options) {
    if (option.compare(0, word.size(), word) == 0) {
      return option;
    }
  }
  for (const auto& option : options) {
    if (option.size() >= 3 && option.size() > best.size() &&
        word.compare(0, option.size(), option) == 0) {
      best = option;
    }
  }
  return best;
}

nlohmann::json resolve_params(const std::string& compressor, const std::vector<ParamSpec>& specs,
                              const nlohmann::json& given) {
  if (!given.is_null() && !given.is_object()) {
    throw ParameterError(compressor + ": parameters must be a JSON object, got " + given.dump());
  }
  std::vector<std::string> names;
  for (const auto& s : specs) {
    names.push_back(s.name);
  }
  nlohmann::json resolved = nlohmann::json::object();
  for (const auto& s : specs) {
    resolved[s.name] = s.default_value;
  }
  if (given.is_null()) {
    return resolved;
  }
  for (const auto& [key, value] : given.items()) {
    const auto it = std::find_if(specs.begin(), specs.end(),
                                 [&key = key](const ParamSpec& s) { return s.name == key; });
    if (it == specs.end()) {
      std::string message = compressor + ": unknown parameter '" + key + "'";
      const std::string guess = did_you_mean(key, names);
      if (!guess.empty()) {
        message += "; did you mean '" + guess + "'?";
      }
      throw ParameterError(message, key);
    }
    resolved[key] = check_value(compressor, *it, value);
  }
  return resolved;
}

} // namespace gcsim::compress
