#include "sim/input/json_reader.hpp"

#include "compressors/params.hpp"
#include "sim/input/paths.hpp"
#include "sim/input/units.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <vector>

namespace gcsim {
namespace {

std::string quoted(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 60)
    text = text.substr(0, 57) + "...";
  return text;
}

// Throws InputError at `source` when a parser callback's `event` opens an
// array or object `depth` levels deep, past kMaxJsonNesting.
void check_nesting(int depth, nlohmann::json::parse_event_t event, const std::string& source,
                   const std::string& where) {
  using Event = nlohmann::json::parse_event_t;
  if ((event == Event::object_start || event == Event::array_start) && depth >= kMaxJsonNesting)
    throw InputError(source, where,
                     "arrays and objects nested deeper than " + std::to_string(kMaxJsonNesting) +
                         " levels");
}

} // namespace

std::string read_input_text(const std::filesystem::path& file) {
  std::error_code error;
  const bool exists = std::filesystem::exists(file, error);
  // A link loop or a folder that may not be searched is not a missing file.
  if (error && error != std::errc::no_such_file_or_directory)
    throw InputError(file.string(), "", "cannot look it up: " + error.message());
  if (!exists)
    throw InputError(file.string(), "", "file not found" + not_found_hint(file));
  if (std::filesystem::is_directory(file, error))
    throw InputError(file.string(), "", "is a directory, expected a file");
  // A pipe or a device (/dev/zero) would be read until it ends, if ever.
  if (!std::filesystem::is_regular_file(file, error))
    throw InputError(file.string(), "", "not a regular file");
  // stdio, not a stream: a stream reports a failed read (EIO) as the end of
  // the file, which a parser then calls malformed.
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> stream(std::fopen(file.c_str(), "rb"),
                                                         &std::fclose);
  if (!stream)
    throw InputError(file.string(), "",
                     std::string("cannot open file for reading: ") + std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof chunk, stream.get())) > 0)
    text.append(chunk, got);
  if (std::ferror(stream.get()))
    throw InputError(file.string(), "",
                     std::string("cannot read the file: ") + std::strerror(errno));
  return text;
}

std::string parse_error_problem(const nlohmann::json::parse_error& error) {
  // It follows nlohmann's own position ("[json.exception.parse_error.101]
  // parse error at line 1, column 9: syntax error while parsing ...").
  const std::string what = error.what();
  const size_t position = what.find("column");
  const size_t detail = position == std::string::npos ? position : what.find(": ", position);
  return detail == std::string::npos ? std::string() : what.substr(detail + 2);
}

nlohmann::json parse_checked_json(const std::string& text, const std::string& source,
                                  const std::string& pointer_prefix) {
  // nlohmann keeps the last of two equal keys without a word; a scenario
  // that says "seed" twice is a mistake to report, at the second one.
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;
    long index = -1;
  };
  std::vector<Frame> frames;
  std::string duplicate; // the JSON pointer of the first repeated key
  // Where a string first holds a NUL (\u0000), which no input takes: an
  // error naming it stopped at it (a C string's end), path and all.
  std::optional<std::string> nul;
  bool nul_in_key = false;
  const auto enter_array_element = [&frames] {
    if (!frames.empty() && !frames.back().object)
      ++frames.back().index;
  };
  // The JSON pointer of where the parse is, its first `levels` levels ("/..."
  // marks the cut where `cut` says so).
  const auto pointer = [&frames, &pointer_prefix](size_t levels = SIZE_MAX, bool cut = true) {
    std::string path = pointer_prefix;
    for (size_t i = 0; i < frames.size() && i < levels; ++i)
      path += "/" + (frames[i].object ? json_pointer_token(frames[i].key)
                                      : std::to_string(frames[i].index));
    return cut && frames.size() > levels ? path + "/..." : path;
  };
  const nlohmann::json::parser_callback_t check =
      [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        using Event = nlohmann::json::parse_event_t;
        switch (event) {
        case Event::object_start:
        case Event::array_start:
          enter_array_element();
          check_nesting(static_cast<int>(frames.size()), event, source, pointer(8));
          frames.push_back({event == Event::object_start, {}, {}, -1});
          break;
        case Event::object_end:
        case Event::array_end:
          frames.pop_back();
          break;
        case Event::key:
          // Named by the object that holds it: the key itself is what is cut.
          if (!nul && parsed.get_ref<const std::string&>().find('\0') != std::string::npos) {
            nul = pointer(frames.size() - 1, /*cut=*/false);
            nul_in_key = true;
          }
          frames.back().key = parsed.get<std::string>();
          if (!frames.back().keys.insert(frames.back().key).second && duplicate.empty())
            duplicate = pointer();
          break;
        case Event::value:
          enter_array_element();
          if (!nul && parsed.is_string() &&
              parsed.get_ref<const std::string&>().find('\0') != std::string::npos)
            nul = pointer();
          break;
        }
        return true;
      };
  nlohmann::json document = nlohmann::json::parse(text, check);
  if (nul)
    throw InputError(source, *nul,
                     std::string(nul_in_key ? "a key" : "a string") +
                         " holds a NUL character (\\u0000), which no input takes");
  if (!duplicate.empty())
    throw InputError(source, duplicate, "this key appears twice in one object: keep one of them");
  return document;
}

nlohmann::json load_json_file(const std::filesystem::path& file) {
  const std::string text = read_input_text(file);
  // Said plainly: the parser's "unexpected end of input" at line 1, column 1
  // read as a broken file, not as an empty one or a binary one.
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(file.string(), "",
                     text.empty() ? "the file is empty, expected JSON"
                                  : "the file holds only white space, expected JSON");
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    throw InputError(file.string(), "",
                     "not a text file (a NUL byte at offset " + std::to_string(nul) +
                         "), expected JSON");
  try {
    return parse_checked_json(text, file.string());
  } catch (const nlohmann::json::parse_error& parse_error) {
    // nlohmann's byte is the 1-based position of the character it stopped
    // at (one past the end at the end of the text), turned into line:column.
    const size_t at =
        std::min<size_t>(parse_error.byte > 0 ? parse_error.byte - 1 : 0, text.size());
    const auto line =
        1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    const size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
    const size_t column = at - (newline == std::string::npos ? 0 : newline + 1) + 1;
    std::string message =
        "malformed JSON at line " + std::to_string(line) + ", column " + std::to_string(column);
    if (const std::string problem = parse_error_problem(parse_error); !problem.empty())
      message += ": " + problem;
    // JSON has no trailing comma, which other formats allow.
    const size_t before = at == 0 ? std::string::npos : text.find_last_not_of(" \t\r\n", at - 1);
    if (at < text.size() && (text[at] == '}' || text[at] == ']') && before != std::string::npos &&
        text[before] == ',')
      message += " (a comma before a closing bracket: JSON allows none)";
    throw InputError(file.string(), "", message);
  } catch (const nlohmann::json::out_of_range& out_of_range) {
    // A number beyond a double's range ("1e999"): nlohmann names it, not
    // where it is; its message follows the "[json.exception...] " tag.
    const std::string what = out_of_range.what();
    const size_t tag_end = what.find("] ");
    throw InputError(
        file.string(), "",
        "malformed JSON: " + (tag_end == std::string::npos ? what : what.substr(tag_end + 2)) +
            " (beyond a double's range)");
  }
}

std::string describe_json(const nlohmann::json& value) {
  switch (value.type()) {
  case nlohmann::json::value_t::null:
    return "null";
  case nlohmann::json::value_t::boolean:
    return std::string("boolean ") + quoted(value);
  case nlohmann::json::value_t::string:
    return "string " + quoted(value);
  case nlohmann::json::value_t::array:
    // The length is what most messages about an array are about.
    return value.empty() ? "an empty array"
                         : "an array of " + std::to_string(value.size()) +
                               (value.size() == 1 ? " element" : " elements");
  case nlohmann::json::value_t::object:
    return "an object";
  default:
    return "number " + quoted(value);
  }
}

std::string json_pointer_token(std::string_view key) {
  std::string token;
  for (char c : key) {
    if (c == '~')
      token += "~0";
    else if (c == '/')
      token += "~1";
    else
      token += c;
  }
  return token;
}

ObjectReader::ObjectReader(const nlohmann::json& value, std::string file, std::string path)
    : value_(value), file_(std::move(file)), path_(std::move(path)) {
  if (!value_.is_object())
    throw InputError(file_, path_.empty() ? "/" : path_,
                     "expected an object, got " + describe_json(value_));
}

std::string ObjectReader::path_of(std::string_view key) const {
  return path_ + "/" + json_pointer_token(key);
}

bool ObjectReader::has(std::string_view key) const {
  return value_.find(std::string(key)) != value_.end();
}

const nlohmann::json* ObjectReader::find(std::string_view key) {
  known_.emplace(key);
  auto it = value_.find(std::string(key));
  return it == value_.end() ? nullptr : &*it;
}

const nlohmann::json& ObjectReader::require(std::string_view key) {
  const nlohmann::json* value = find(key);
  if (value != nullptr)
    return *value;
  // A misspelt required field ("latancy") is missing too: name it, since
  // finish() would have, had the field been optional.
  std::vector<std::string> unasked;
  for (auto it = value_.begin(); it != value_.end(); ++it)
    if (known_.count(it.key()) == 0)
      unasked.push_back(it.key());
  const std::string near = compress::did_you_mean(std::string(key), unasked);
  fail(key, near.empty() ? "required field is missing"
                         : "required field is missing (is \"" + near + "\" a misspelling of it?)");
}

std::string ObjectReader::string(std::string_view key) {
  const nlohmann::json& value = require(key);
  if (!value.is_string())
    fail(key, "expected a string, got " + describe_json(value));
  return value.get<std::string>();
}

void ObjectReader::format(const std::string& expected, const std::string& kind) {
  const nlohmann::json* value = find("format");
  if (value != nullptr && value->is_string() && value->get<std::string>() == expected)
    return;
  const std::string wanted = "expected \"" + expected + "\" (" + kind + ")";
  fail("format", value == nullptr
                     ? "missing: not " + kind + ", which says \"format\": \"" + expected + "\""
                     : wanted + ", got " + describe_json(*value));
}

std::string ObjectReader::string_or(std::string_view key, std::string fallback) {
  return has(key) ? string(key) : (known_.emplace(key), std::move(fallback));
}

std::string ObjectReader::choice(std::string_view key, const std::vector<std::string>& allowed) {
  std::string value = string(key);
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end())
    return value;
  std::string message = "unknown value \"" + value + "\"";
  std::string suggestion = compress::did_you_mean(value, allowed);
  if (!suggestion.empty())
    message += " (did you mean \"" + suggestion + "\"?)";
  message += "; expected one of:";
  for (const std::string& option : allowed)
    message += " " + option;
  fail(key, message);
}

std::string ObjectReader::choice_or(std::string_view key, const std::vector<std::string>& allowed,
                                    std::string fallback) {
  return has(key) ? choice(key, allowed) : (known_.emplace(key), std::move(fallback));
}

double ObjectReader::number(std::string_view key) {
  const nlohmann::json& value = require(key);
  if (!value.is_number())
    fail(key, "expected a number, got " + describe_json(value));
  double number = value.get<double>();
  if (!std::isfinite(number))
    fail(key, "expected a finite number");
  return number;
}

double ObjectReader::number_or(std::string_view key, double fallback) {
  return has(key) ? number(key) : (known_.emplace(key), fallback);
}

double ObjectReader::positive_number(std::string_view key) {
  double value = number(key);
  if (!(value > 0))
    fail(key, "expected a positive number, got " + quoted(*find(key)));
  return value;
}

double ObjectReader::seconds(std::string_view key) {
  const double value = number(key);
  if (!is_measured_seconds(value))
    fail(key,
         "expected a time in seconds, 0 or in [1e-12, 1e9], got " + describe_json(require(key)));
  return value;
}

double ObjectReader::positive_seconds(std::string_view key) {
  const double value = number(key);
  if (!(value >= kShortestSeconds && value <= kLongestSeconds))
    fail(key, "expected a time in seconds in [1e-12, 1e9], got " + describe_json(require(key)));
  return value;
}

double ObjectReader::seconds_or(std::string_view key, double fallback) {
  return has(key) ? seconds(key) : (known_.emplace(key), fallback);
}

int64_t ObjectReader::integer(std::string_view key, int64_t min, int64_t max) {
  const nlohmann::json& value = require(key);
  auto out_of_range = [&] {
    fail(key, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                  "], got " + quoted(value));
  };
  // By the value's own type: compared in double, 2^63 passed a bound of
  // INT64_MAX, and converting it is undefined.
  int64_t result = 0;
  if (value.is_number_unsigned()) {
    const uint64_t whole = value.get<uint64_t>();
    if (whole > static_cast<uint64_t>(INT64_MAX))
      out_of_range();
    result = static_cast<int64_t>(whole);
  } else if (value.is_number_integer()) {
    result = value.get<int64_t>();
  } else if (value.is_number_float()) {
    const double number = value.get<double>();
    if (!std::isfinite(number) || std::floor(number) != number)
      fail(key, "expected an integer, got " + describe_json(value));
    // [-2^63, 2^63) is exactly what int64_t holds; both ends are doubles.
    if (!(number >= -0x1p63 && number < 0x1p63))
      out_of_range();
    result = static_cast<int64_t>(number);
  } else {
    fail(key, "expected an integer, got " + describe_json(value));
  }
  if (result < min || result > max)
    out_of_range();
  return result;
}

int64_t ObjectReader::integer_or(std::string_view key, int64_t min, int64_t max, int64_t fallback) {
  return has(key) ? integer(key, min, max) : (known_.emplace(key), fallback);
}

std::vector<int64_t> ObjectReader::integers(std::string_view key, int64_t min, int64_t max) {
  const nlohmann::json& array = require(key);
  if (!array.is_array())
    fail(key, "expected an array of integers, got " + describe_json(array));
  std::vector<int64_t> values;
  values.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    // Each element read as a one-key object, so that a bad one is
    // refused as integer() refuses it, at KEY/i.
    const std::string index = std::to_string(i);
    const nlohmann::json item{{index, array[i]}};
    ObjectReader element(item, file_, path_of(key));
    values.push_back(element.integer(index, min, max));
  }
  return values;
}

bool ObjectReader::boolean_or(std::string_view key, bool fallback) {
  const nlohmann::json* value = find(key);
  if (value == nullptr)
    return fallback;
  if (!value->is_boolean())
    fail(key, "expected true or false, got " + describe_json(*value));
  return value->get<bool>();
}

namespace {

// What a unit field accepts: zero when `zero`, else [lowest, highest];
// `wanted` says so in messages.
struct UnitRange {
  bool zero;
  double lowest;
  double highest;
  const char* wanted;
};

double parse_unit_field(ObjectReader& reader, std::string_view key, units::Quantity quantity,
                        const char* example, const UnitRange& accepted) {
  const nlohmann::json& value = reader.require(key);
  std::optional<double> parsed;
  if (value.is_string())
    parsed = units::parse(value.get<std::string>(), quantity);
  const auto taken = [&accepted](const std::optional<double>& number) {
    return number && ((accepted.zero && *number == 0) ||
                      (*number >= accepted.lowest && *number <= accepted.highest));
  };
  if (taken(parsed))
    return *parsed;
  // Spellings of values it would take: "2000Tb" is no hint to 2000Tbps.
  const auto in_range = [&](std::vector<std::string> spellings) {
    spellings.erase(std::remove_if(spellings.begin(), spellings.end(),
                                   [&](const std::string& spelled) {
                                     return !taken(units::parse(spelled, quantity));
                                   }),
                    spellings.end());
    return spellings;
  };
  const std::vector<std::string> meant =
      value.is_string()
          ? in_range(units::spellings_ignoring_case(value.get<std::string>(), quantity))
          : std::vector<std::string>{};
  std::string hint;
  for (size_t i = 0; i < meant.size(); ++i)
    hint += (i == 0 ? " (units are case-sensitive: did you mean \"" : "\" or \"") + meant[i];
  const std::vector<std::string> others =
      meant.empty() && value.is_string()
          ? in_range(units::other_spellings(value.get<std::string>(), quantity))
          : std::vector<std::string>{};
  for (size_t i = 0; i < others.size(); ++i)
    hint += (i == 0 ? " (did you mean \"" : "\" or \"") + others[i];
  if (!hint.empty())
    hint += "\"?)";
  reader.fail(key, std::string("expected ") + accepted.wanted + " (e.g. \"" + example +
                       "\"), got " + quoted(value) + hint);
}

} // namespace

double ObjectReader::bandwidth(std::string_view key) {
  return parse_unit_field(*this, key, units::Quantity::bandwidth, "10Gbps",
                          {false, kSlowestBandwidth, kFastestBandwidth,
                           "a bandwidth with a unit in [1kbps, 1000Tbps]"});
}
double ObjectReader::duration(std::string_view key) {
  return parse_unit_field(
      *this, key, units::Quantity::duration, "50us",
      {true, kShortestSeconds, kLongestSeconds, "a duration with a unit, 0s or in [1ps, 1e9s]"});
}
double ObjectReader::duration_or(std::string_view key, double fallback) {
  return has(key) ? duration(key) : (known_.emplace(key), fallback);
}
double ObjectReader::size(std::string_view key) {
  return parse_unit_field(
      *this, key, units::Quantity::size, "25MiB",
      {false, 1.0, kLargestBytes, "a size with a unit in [1B, 8192TiB] (8192TiB = 2^53 bytes)"});
}
double ObjectReader::size_or(std::string_view key, double fallback) {
  return has(key) ? size(key) : (known_.emplace(key), fallback);
}
double ObjectReader::flop_rate(std::string_view key) {
  return parse_unit_field(*this, key, units::Quantity::flop_rate, "10Tflops",
                          {false, std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::max(), "a positive FLOP rate with a unit"});
}

ObjectReader ObjectReader::object(std::string_view key) {
  return ObjectReader(require(key), file_, path_of(key));
}

void ObjectReader::allow(std::string_view key) {
  known_.emplace(key);
}

void ObjectReader::fail(std::string_view key, const std::string& what) const {
  throw InputError(file_, path_of(key), what);
}

void ObjectReader::fail_here(const std::string& what) const {
  throw InputError(file_, path_.empty() ? "/" : path_, what);
}

void ObjectReader::finish() const {
  std::vector<std::string> known(known_.begin(), known_.end());
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (known_.count(it.key()) != 0)
      continue;
    std::string message = "unknown field";
    std::string suggestion = compress::did_you_mean(it.key(), known);
    if (!suggestion.empty()) {
      message += " (did you mean \"" + suggestion + "\"?)";
    } else if (!known.empty()) {
      // No near name ("batch_size" for "batch_per_worker"): the names this
      // object takes, so that one line still says what to write.
      message += " (this object's fields: ";
      for (size_t i = 0; i < known.size(); ++i)
        message += (i == 0 ? "" : ", ") + known[i];
      message += ")";
    }
    throw InputError(file_, path_of(it.key()), message);
  }
}

} // namespace gcsim
