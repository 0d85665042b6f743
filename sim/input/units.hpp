#pragma once
// Quantities with explicit units in input files: "1Gbps", "50us", "25MiB".
// Each parser returns SI (bytes per second, seconds, bytes) or nullopt when
// the text is not a number without a sign (0 included) followed by a known
// unit, or when the product overflows a double.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gcsim::units {

/// "10Gbps", "1.25GBps", "100Mbps" -> bytes per second. Bits ("bps") are /8.
std::optional<double> parse_bandwidth(std::string_view text);
/// "50us", "1ms", "0.5s", "20ns" -> seconds. Zero is allowed ("0s").
std::optional<double> parse_duration(std::string_view text);
/// "25MiB", "25MB", "1KiB", "4096B" -> bytes.
std::optional<double> parse_size(std::string_view text);
/// "14TFlops", "12.5Tf", "900Gflop/s" -> FLOP per second.
std::optional<double> parse_flop_rate(std::string_view text);

enum class Quantity { bandwidth, duration, size, flop_rate };
/// The parser of `quantity`'s kind (parse_bandwidth for bandwidth, ...).
std::optional<double> parse(std::string_view text, Quantity quantity);
/// What `text` may have meant where its unit is one of `quantity`'s but
/// for case, the units closest in case ("10gbps" -> {"10Gbps"}, not
/// "10GBps"; "1MBPS" -> {"1MBps"}), for a did-you-mean; empty where the
/// unit is known as written or matches none.
std::vector<std::string> spellings_ignoring_case(std::string_view text, Quantity quantity);
/// What a bandwidth written as a rate another common way may have meant:
/// "10Gb" and "10Gb/s" -> {"10Gbps"}, "10Gbits/s" -> {"10Gbit/s"}, "10G"
/// -> {"10Gbps", "10GBps"}; empty where it parses or none fits.
std::vector<std::string> rate_spellings(std::string_view text);
/// What a duration written another common way may have meant: "5µs" and
/// "5usec" -> {"5us"}, "2secs" -> {"2s"}, "3 hours" -> {"3h"}; empty where
/// it parses or none fits ("10m": minutes or milliseconds).
std::vector<std::string> duration_spellings(std::string_view text);
/// rate_spellings for a bandwidth, duration_spellings for a duration.
std::vector<std::string> other_spellings(std::string_view text, Quantity quantity);

/// A number in messages, six significant digits as printf's %g: 0.0001 ->
/// "0.0001", 1e-300 -> "1e-300", 262144 -> "262144".
std::string format_number(double value);
/// Human-readable rendering for summaries: 1.5e9 -> "1.50 GB".
std::string format_bytes(double bytes);
/// 0.02 -> "20.000 ms"; exactly zero is "0 s", not a rounded "0.000 s".
std::string format_seconds(double seconds);
/// A link's rate in bits, as links are sold: 1.25e9 bytes/s -> "10 Gbit/s".
std::string format_bit_rate(double bytes_per_second);

} // namespace gcsim::units
