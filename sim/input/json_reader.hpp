#pragma once
// Reading JSON input files with errors that name the file and the JSON path.
//
// Every object is read through an ObjectReader: each field it asks for is
// marked as known, and finish() rejects the fields nobody asked for, with a
// did-you-mean. Typos in a scenario therefore never pass silently.

#include "sim/input/input_error.hpp"

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim {

/// Arrays and objects nested deeper than this are refused: no gcsim input
/// nests past a dozen levels, and nlohmann copies a value recursively, so a
/// value nested some 60,000 deep overflowed the stack.
constexpr int kMaxJsonNesting = 256;

/// The whole of an input file. A missing file, a folder, a pipe or device,
/// and a failed open or read are an InputError naming the file.
std::string read_input_text(const std::filesystem::path& file);

/// JSON text parsed as every input is: a key given twice in one object, a
/// string holding a NUL and nesting past kMaxJsonNesting are InputErrors
/// naming `source` and the JSON path; malformed text is nlohmann's
/// parse_error (or out_of_range, a number past a double), for the caller
/// to word. `pointer_prefix` goes before each path named (a --set value's
/// place in the scenario).
nlohmann::json parse_checked_json(const std::string& text, const std::string& source,
                                  const std::string& pointer_prefix = "");

/// Parses a JSON file (parse_checked_json); a missing, empty or binary file
/// and a syntax error are InputErrors too.
nlohmann::json load_json_file(const std::filesystem::path& file);

/// What a parse error says is wrong, after its tag and position ("syntax
/// error while parsing object - unexpected end of input; expected '}'").
std::string parse_error_problem(const nlohmann::json::parse_error& error);

/// "expected a number" style description of a JSON value's type, for messages.
std::string describe_json(const nlohmann::json& value);

/// The longest time an input may give or a model may produce (about 30
/// years): past it a figure is a typo, and SimGrid cannot run an infinite one.
/// Durations with a unit, seconds(), a trace's and a device profile's times
/// are read within it, and training::simulate() refuses a longer simulated
/// iteration (IterationTooLong: `gcsim run` and `gcsim validate` exit 2).
constexpr double kLongestSeconds = 1e9;

/// The shortest nonzero time an input may give: "ps" is the smallest unit,
/// a subnormal latency (1e-310 s) makes SimGrid's solver abort, and a
/// measured time of 1e-320 s made relative errors infinite.
constexpr double kShortestSeconds = 1e-12;

/// Whether `seconds` is a measured time an input may give: 0, or in
/// [kShortestSeconds, kLongestSeconds] (NaN is not).
inline bool is_measured_seconds(double seconds) {
  return seconds == 0 || (seconds >= kShortestSeconds && seconds <= kLongestSeconds);
}

/// Link bandwidths in bytes per second: 1 kbps to 1 Pbps (1000Tbps). The
/// slowest links in distributed-training studies (federated learning over
/// WANs) are about 1 Mbps and the fastest (NVLink 5, 1.8 TB/s) about 14 Tbps;
/// far outside that a figure is a typo ("1bps" for "1Gbps"). At 1e-300bps
/// SimGrid's solver loses the flow (a deadlock); an infinite one aborts it.
constexpr double kSlowestBandwidth = 1e3 / 8;
constexpr double kFastestBandwidth = 1e15 / 8;

/// The largest size an input may give: 2^53 bytes (8 PiB), far past any
/// model's gradients or TCP window, and every whole byte count up to it is
/// exact in a double and converts to uint64_t without overflow.
constexpr double kLargestBytes = 9007199254740992.0;

class ObjectReader {
public:
  /// Throws unless `value` is an object.
  ObjectReader(const nlohmann::json& value, std::string file, std::string path);

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  std::string path_of(std::string_view key) const;

  bool has(std::string_view key) const;
  /// Marks the key known and returns it, or nullptr when absent.
  const nlohmann::json* find(std::string_view key);
  const nlohmann::json& require(std::string_view key);

  std::string string(std::string_view key);
  std::string string_or(std::string_view key, std::string fallback);
  /// The file's "format" field, which must be `expected`; `kind` names such
  /// a file ("a measured run") for the user who passed another kind.
  void format(const std::string& expected, const std::string& kind);
  /// One of `allowed`, with a did-you-mean otherwise.
  std::string choice(std::string_view key, const std::vector<std::string>& allowed);
  std::string choice_or(std::string_view key, const std::vector<std::string>& allowed,
                        std::string fallback);
  /// One of `values`, read by the names `name_of` gives them (listed in
  /// that order when the value is none of them).
  template <typename Enum, typename NameOf>
  Enum named(std::string_view key, std::initializer_list<Enum> values, NameOf name_of) {
    return value_named(choice(key, names_of(values, name_of)), values, name_of);
  }
  template <typename Enum, typename NameOf>
  Enum named_or(std::string_view key, std::initializer_list<Enum> values, NameOf name_of,
                Enum fallback) {
    return value_named(choice_or(key, names_of(values, name_of), name_of(fallback)), values,
                       name_of);
  }
  double number(std::string_view key);
  double number_or(std::string_view key, double fallback);
  double positive_number(std::string_view key);
  int64_t integer(std::string_view key, int64_t min, int64_t max);
  int64_t integer_or(std::string_view key, int64_t min, int64_t max, int64_t fallback);
  /// An array of integers in [min, max]; a bad one is named by its index.
  std::vector<int64_t> integers(std::string_view key, int64_t min, int64_t max);
  bool boolean_or(std::string_view key, bool fallback);
  /// A measured time as a plain number of seconds: 0 or in
  /// [kShortestSeconds, kLongestSeconds].
  double seconds(std::string_view key);
  /// The same, for a time that cannot be 0 (a measured collective or
  /// iteration): in [kShortestSeconds, kLongestSeconds].
  double positive_seconds(std::string_view key);
  double seconds_or(std::string_view key, double fallback);

  /// Unit strings ("1Gbps", "50us", "25MiB", "10Tflops"). Bandwidths lie in
  /// [1kbps, 1000Tbps], durations are 0 or in [1ps, kLongestSeconds], sizes in
  /// [1B, kLargestBytes]; FLOP rates are positive and finite.
  double bandwidth(std::string_view key);
  double duration(std::string_view key);
  double duration_or(std::string_view key, double fallback);
  double size(std::string_view key);
  double size_or(std::string_view key, double fallback);
  double flop_rate(std::string_view key);

  ObjectReader object(std::string_view key);
  /// Ignores a key deliberately (one read elsewhere, a compressor's
  /// parameter a registry checks). A field only people read (a comment)
  /// is read for its type instead: string_or(key, "").
  void allow(std::string_view key);

  [[noreturn]] void fail(std::string_view key, const std::string& what) const;
  [[noreturn]] void fail_here(const std::string& what) const;

  /// Rejects every key that was not asked for.
  void finish() const;

private:
  template <typename Enum, typename NameOf>
  static std::vector<std::string> names_of(std::initializer_list<Enum> values, NameOf name_of) {
    std::vector<std::string> names;
    for (Enum value : values)
      names.emplace_back(name_of(value));
    return names;
  }
  template <typename Enum, typename NameOf>
  static Enum value_named(const std::string& name, std::initializer_list<Enum> values,
                          NameOf name_of) {
    for (Enum value : values)
      if (name == name_of(value))
        return value;
    throw std::logic_error("a choice outside its values: " + name);
  }

  const nlohmann::json& value_;
  std::string file_;
  std::string path_;
  std::set<std::string, std::less<>> known_;
};

/// JSON pointer escaping of one key ("a/b" -> "a~1b").
std::string json_pointer_token(std::string_view key);

} // namespace gcsim
