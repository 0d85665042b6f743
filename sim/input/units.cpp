#include "sim/input/units.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace gcsim::units {
namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

// Splits "12.5Gbps" into 12.5 and "Gbps"; rejects signs, NaN and empties.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  size_t end = 0;
  bool seen_digit = false;
  bool seen_dot = false;
  bool seen_exp = false;
  while (end < text.size()) {
    char c = text[end];
    if (c >= '0' && c <= '9') {
      seen_digit = true;
    } else if (c == '.' && !seen_dot && !seen_exp) {
      seen_dot = true;
    } else if ((c == 'e' || c == 'E') && seen_digit && !seen_exp && end + 1 < text.size() &&
               ((text[end + 1] >= '0' && text[end + 1] <= '9') || text[end + 1] == '-' ||
                text[end + 1] == '+')) {
      seen_exp = true;
      if (text[end + 1] == '-' || text[end + 1] == '+')
        ++end;
    } else {
      break;
    }
    ++end;
  }
  if (!seen_digit)
    return std::nullopt;
  std::string number(text.substr(0, end));
  char* parse_end = nullptr;
  double value = std::strtod(number.c_str(), &parse_end);
  if (parse_end != number.c_str() + number.size() || !std::isfinite(value) || value < 0)
    return std::nullopt;
  // "1e-400s" reads as 0, which a duration may be: a figure written nonzero
  // is not taken for one.
  if (value == 0 &&
      number.substr(0, number.find_first_of("eE")).find_first_of("123456789") != std::string::npos)
    return std::nullopt;
  std::string_view unit = text.substr(end);
  while (!unit.empty() && unit.front() == ' ')
    unit.remove_prefix(1);
  return std::make_pair(value, unit);
}

template <size_t N>
std::optional<double> parse_with(std::string_view text, const std::array<Unit, N>& table) {
  auto split = split_number(text);
  if (!split)
    return std::nullopt;
  for (const Unit& unit : table) {
    if (unit.suffix != split->second)
      continue;
    // A finite number times its unit can still overflow ("1e300Tbps").
    const double value = split->first * unit.factor;
    return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
  }
  return std::nullopt;
}

constexpr std::array<Unit, 22> kBandwidthUnits{{
    {"bps", 1.0 / 8},
    {"kbps", 1e3 / 8},
    {"Kbps", 1e3 / 8},
    {"Mbps", 1e6 / 8},
    {"Gbps", 1e9 / 8},
    {"Tbps", 1e12 / 8},
    {"Bps", 1.0},
    {"kBps", 1e3},
    {"KBps", 1e3},
    {"MBps", 1e6},
    {"GBps", 1e9},
    {"TBps", 1e12},
    {"KiBps", 1024.0},
    {"MiBps", 1048576.0},
    {"GiBps", 1073741824.0},
    {"TiBps", 1099511627776.0},
    // As the summary prints a link ("10 Gbit/s"), so that it reads back.
    {"bit/s", 1.0 / 8},
    {"kbit/s", 1e3 / 8},
    {"Kbit/s", 1e3 / 8},
    {"Mbit/s", 1e6 / 8},
    {"Gbit/s", 1e9 / 8},
    {"Tbit/s", 1e12 / 8},
}};

// No "m" for minutes (SimGrid's XML has it): a latency of "5m" is far more
// likely "5ms" mistyped than five minutes, and was run as minutes.
constexpr std::array<Unit, 7> kDurationUnits{{
    {"s", 1.0},
    {"ms", 1e-3},
    {"us", 1e-6},
    {"ns", 1e-9},
    {"ps", 1e-12},
    {"min", 60.0},
    {"h", 3600.0},
}};

constexpr std::array<Unit, 10> kSizeUnits{{
    {"B", 1.0},
    {"kB", 1e3},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"KiB", 1024.0},
    {"MiB", 1048576.0},
    {"GiB", 1073741824.0},
    {"TiB", 1099511627776.0},
}};

constexpr std::array<Unit, 12> kFlopUnits{{
    {"flops", 1.0},
    {"Flops", 1.0},
    {"Gflops", 1e9},
    {"GFlops", 1e9},
    {"Tflops", 1e12},
    {"TFlops", 1e12},
    {"Pflops", 1e15},
    {"PFlops", 1e15},
    {"f", 1.0},
    {"Gf", 1e9},
    {"Tf", 1e12},
    {"Pf", 1e15},
}};

// The number of `text` as written, without its `unit` and the spaces around
// them: "1e3" of " 1e3 gbps ".
std::string_view number_as_written(std::string_view text, std::string_view unit) {
  std::string_view number = text.substr(0, text.rfind(unit));
  while (!number.empty() && number.front() == ' ')
    number.remove_prefix(1);
  while (!number.empty() && number.back() == ' ')
    number.remove_suffix(1);
  return number;
}

// `bits_apart`: a spelling that changes the case of the letter before "ps"
// (bits or bytes) is no suggestion, as it changes the rate eightfold:
// "10Gibps" is not "10GiBps".
template <size_t N>
std::vector<std::string> case_insensitive(std::string_view text, const std::array<Unit, N>& table,
                                          bool bits_apart) {
  const auto split = split_number(text);
  if (!split)
    return {};
  const std::string_view unit = split->second;
  // How many letters `suffix` changes in `unit` by case alone; none where
  // it differs otherwise.
  const auto case_changes = [unit, bits_apart](std::string_view suffix) -> std::optional<size_t> {
    if (suffix.size() != unit.size())
      return std::nullopt;
    size_t changes = 0;
    for (size_t i = 0; i < suffix.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(suffix[i])) !=
          std::tolower(static_cast<unsigned char>(unit[i])))
        return std::nullopt;
      if (bits_apart && suffix[i] != unit[i] && suffix.substr(i + 1) == "ps")
        return std::nullopt;
      changes += suffix[i] != unit[i];
    }
    return changes;
  };
  std::vector<std::pair<size_t, std::string_view>> matches;
  for (const Unit& known : table)
    if (const std::optional<size_t> changes = case_changes(known.suffix))
      matches.emplace_back(*changes, known.suffix);
  if (matches.empty())
    return {};
  // The units closest in case ("mbps" is more likely Mbps than MBps); none
  // when the unit is known as written.
  const size_t fewest = std::min_element(matches.begin(), matches.end())->first;
  if (fewest == 0)
    return {};
  const std::string_view number = number_as_written(text, unit);
  std::vector<std::string> spellings;
  for (const auto& [changes, suffix] : matches)
    if (changes == fewest)
      spellings.push_back(std::string(number) + std::string(suffix));
  return spellings;
}

std::string format_scaled(double value, const char* const* prefixes, int count, double base,
                          bool significant_digits, const char* unit) {
  int i = 0;
  while (i + 1 < count && std::fabs(value) >= base) {
    value /= base;
    ++i;
  }
  char buffer[64];
  // Two decimals ("78.22 MB"), or four significant digits without trailing
  // zeros ("10 Gbit/s").
  std::snprintf(buffer, sizeof buffer, significant_digits ? "%.4g" : "%.2f", value);
  return std::string(buffer) + " " + prefixes[i] + unit;
}

} // namespace

std::optional<double> parse_bandwidth(std::string_view text) {
  return parse_with(text, kBandwidthUnits);
}
std::optional<double> parse_duration(std::string_view text) {
  return parse_with(text, kDurationUnits);
}
std::optional<double> parse_size(std::string_view text) {
  return parse_with(text, kSizeUnits);
}
std::optional<double> parse_flop_rate(std::string_view text) {
  return parse_with(text, kFlopUnits);
}

std::optional<double> parse(std::string_view text, Quantity quantity) {
  switch (quantity) {
  case Quantity::bandwidth:
    return parse_bandwidth(text);
  case Quantity::duration:
    return parse_duration(text);
  case Quantity::size:
    return parse_size(text);
  case Quantity::flop_rate:
    return parse_flop_rate(text);
  }
  return std::nullopt;
}

std::vector<std::string> spellings_ignoring_case(std::string_view text, Quantity quantity) {
  switch (quantity) {
  case Quantity::bandwidth:
    return case_insensitive(text, kBandwidthUnits, true);
  case Quantity::duration:
    return case_insensitive(text, kDurationUnits, false);
  case Quantity::size:
    return case_insensitive(text, kSizeUnits, false);
  case Quantity::flop_rate:
    return case_insensitive(text, kFlopUnits, false);
  }
  return {};
}

std::vector<std::string> rate_spellings(std::string_view text) {
  const auto split = split_number(text);
  if (!split || parse_bandwidth(text))
    return {};
  const std::string unit(split->second);
  auto ends_with = [&unit](std::string_view tail) {
    return unit.size() >= tail.size() &&
           unit.compare(unit.size() - tail.size(), tail.size(), tail.data(), tail.size()) == 0;
  };
  auto without = [&unit](size_t tail) { return unit.substr(0, unit.size() - tail); };
  // The unit as a rate in the table's ways: "Gb" and "Gb/s" are "Gbps",
  // "Gbits/s" and "Gbit" are "Gbit/s", a bare "G" is bits or bytes.
  std::vector<std::string> forms;
  if (ends_with("bits/s"))
    forms.push_back(without(6) + "bit/s");
  else if (ends_with("bits"))
    forms.push_back(without(4) + "bit/s");
  else if (ends_with("bit"))
    forms.push_back(without(3) + "bit/s");
  else if (ends_with("/sec"))
    forms.push_back(without(4) + "ps");
  else if (ends_with("/s"))
    forms.push_back(without(2) + "ps");
  else if (ends_with("bs") || ends_with("Bs"))
    forms.push_back(without(1) + "ps");
  else if (ends_with("b") || ends_with("B"))
    forms.push_back(unit + "ps");
  else if (unit.size() == 1 && std::string_view("kKMGT").find(unit[0]) != std::string_view::npos)
    forms = {unit + "bps", unit + "Bps"};
  const std::string_view number = number_as_written(text, split->second);
  std::vector<std::string> spellings;
  for (const std::string& form : forms) {
    const std::string spelled = std::string(number) + form;
    if (parse_bandwidth(spelled)) {
      spellings.push_back(spelled);
      continue;
    }
    for (std::string& cased : case_insensitive(spelled, kBandwidthUnits, true))
      spellings.push_back(std::move(cased));
  }
  return spellings;
}

std::vector<std::string> duration_spellings(std::string_view text) {
  const auto split = split_number(text);
  if (!split || parse_duration(text))
    return {};
  std::string unit(split->second);
  // The micro signs (U+00B5, U+03BC in UTF-8) before any lowering.
  for (const std::string_view micro : {"\xC2\xB5", "\xCE\xBC"})
    if (unit.rfind(micro, 0) == 0)
      unit = "u" + unit.substr(micro.size());
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (unit.size() > 1 && unit.back() == 's' && unit != "ms" && unit != "us" && unit != "ns" &&
      unit != "ps")
    unit.pop_back(); // "secs", "usecs", "hrs", "minutes"
  // No bare "m" or "u": minutes and milliseconds are both read into "m".
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kNames{{
      {"sec", "s"},
      {"second", "s"},
      {"msec", "ms"},
      {"millisecond", "ms"},
      {"usec", "us"},
      {"microsecond", "us"},
      {"nsec", "ns"},
      {"nanosecond", "ns"},
      {"psec", "ps"},
      {"minute", "min"},
      {"hr", "h"},
      {"hour", "h"},
  }};
  for (const auto& [name, meant] : kNames)
    if (unit == name)
      return {std::string(number_as_written(text, split->second)) + std::string(meant)};
  // "5us" written with a micro sign lowers to a known unit as it is.
  for (const Unit& known : kDurationUnits)
    if (unit == known.suffix)
      return {std::string(number_as_written(text, split->second)) + unit};
  return {};
}

std::vector<std::string> other_spellings(std::string_view text, Quantity quantity) {
  switch (quantity) {
  case Quantity::bandwidth:
    return rate_spellings(text);
  case Quantity::duration:
    return duration_spellings(text);
  case Quantity::size:
  case Quantity::flop_rate:
    return {};
  }
  return {};
}

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string format_bytes(double bytes) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T", "P"};
  return format_scaled(bytes, prefixes, 6, 1000.0, false, "B");
}

std::string format_seconds(double seconds) {
  char buffer[64];
  if (seconds == 0.0)
    return "0 s";
  if (seconds >= 1.0)
    std::snprintf(buffer, sizeof buffer, "%.3f s", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(buffer, sizeof buffer, "%.3f ms", seconds * 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.3f us", seconds * 1e6);
  return buffer;
}

std::string format_bit_rate(double bytes_per_second) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T", "P"};
  return format_scaled(bytes_per_second * 8, prefixes, 6, 1000.0, true, "bit/s");
}

} // namespace gcsim::units
