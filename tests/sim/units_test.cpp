#include "sim/input/units.hpp"

#include <doctest/doctest.h>

using namespace gcsim::units;

TEST_CASE("bandwidths are bytes per second; bits are divided by eight") {
  CHECK(*parse_bandwidth("1Gbps") == doctest::Approx(125e6).scale(0));
  CHECK(*parse_bandwidth("10Gbps") == doctest::Approx(1.25e9).scale(0));
  CHECK(*parse_bandwidth("100MBps") == doctest::Approx(100e6).scale(0));
  CHECK(*parse_bandwidth("1GiBps") == doctest::Approx(1073741824.0).scale(0));
  CHECK(*parse_bandwidth("2.5e1Mbps") == doctest::Approx(25e6 / 8).scale(0));
}

TEST_CASE("unit-less, negative and unknown-unit quantities are rejected") {
  CHECK_FALSE(parse_bandwidth("1000"));
  CHECK_FALSE(parse_bandwidth("-1Gbps"));
  CHECK_FALSE(parse_bandwidth("1 Gbit"));
  CHECK_FALSE(parse_bandwidth("Gbps"));
  CHECK_FALSE(parse_duration("5"));
  CHECK_FALSE(parse_size("12 apples"));
  CHECK_FALSE(parse_size("nanMB"));
  CHECK_FALSE(parse_bandwidth("1e300Tbps")); // finite number, infinite product
  CHECK_FALSE(parse_duration("1e308h"));
  CHECK_FALSE(parse_duration("1e-400s")); // underflows to 0, which is not what it says
  CHECK(*parse_duration("0e5s") == 0.0);
}

TEST_CASE("durations and sizes") {
  CHECK(*parse_duration("50us") == doctest::Approx(50e-6).scale(0));
  CHECK(*parse_duration("1.5ms") == doctest::Approx(1.5e-3).scale(0));
  CHECK(*parse_duration("0s") == 0.0);
  CHECK(*parse_duration("2min") == 120.0);
  CHECK(*parse_duration("1h") == 3600.0);
  // Minutes are "min" only: "5m" was five minutes where "5ms" was meant.
  CHECK_FALSE(parse_duration("5m"));
  CHECK(*parse_size("25MiB") == doctest::Approx(25.0 * 1048576).scale(0));
  CHECK(*parse_size("25MB") == doctest::Approx(25e6).scale(0));
  CHECK(*parse_size("4096B") == 4096.0);
  CHECK(*parse_flop_rate("11.3Tflops") == doctest::Approx(11.3e12).scale(0));
}

TEST_CASE("formatting for summaries") {
  CHECK(format_number(0.0001) == "0.0001");
  CHECK(format_number(1e-300) == "1e-300");
  CHECK(format_number(262144) == "262144");
  CHECK(format_number(1234567) == "1.23457e+06");
  CHECK(format_bytes(1.5e9) == "1.50 GB");
  CHECK(format_bytes(512) == "512.00 B");
  CHECK(format_seconds(0.0123) == "12.300 ms");
  CHECK(format_seconds(2.5) == "2.500 s");
  CHECK(format_seconds(4e-5) == "40.000 us");
  // Exactly nothing, not a rounded "0.000 s" among milliseconds.
  CHECK(format_seconds(0.0) == "0 s");
}

TEST_CASE("link rates are shown in bits, as they are written on a link") {
  CHECK(format_bit_rate(*parse_bandwidth("10Gbps")) == "10 Gbit/s");
  // What the summary prints reads back.
  CHECK(*parse_bandwidth("10 Gbit/s") == *parse_bandwidth("10Gbps"));
  CHECK(*parse_bandwidth("100Mbit/s") == *parse_bandwidth("100Mbps"));
  CHECK(format_bit_rate(*parse_bandwidth("2.5Gbps")) == "2.5 Gbit/s");
  CHECK(format_bit_rate(*parse_bandwidth("100Mbps")) == "100 Mbit/s");
  // A rate written in bytes is eight times the bits.
  CHECK(format_bit_rate(*parse_bandwidth("10GBps")) == "80 Gbit/s");
  CHECK(format_bit_rate(*parse_bandwidth("1GiBps")) == "8.59 Gbit/s");
}

TEST_CASE("a unit wrong only in case: the spellings closest in case") {
  using V = std::vector<std::string>;
  CHECK(spellings_ignoring_case("10gbps", Quantity::bandwidth) == V{"10Gbps"});
  // Bits or bytes: the fewest letters changed (MBPS is MBps, mbps Mbps).
  CHECK(spellings_ignoring_case("100MBPS", Quantity::bandwidth) == V{"100MBps"});
  CHECK(spellings_ignoring_case("100mbps", Quantity::bandwidth) == V{"100Mbps"});
  // Where kB and KB are one size written two ways, the one nearer as typed.
  CHECK(spellings_ignoring_case("1KBPS", Quantity::bandwidth) == V{"1KBps"});
  CHECK(spellings_ignoring_case("1kBPS", Quantity::bandwidth) == V{"1kBps"});
  // The number as written, exponent and all, without the spaces around it.
  CHECK(spellings_ignoring_case(" 1e3gbps ", Quantity::bandwidth) == V{"1e3Gbps"});
  CHECK(spellings_ignoring_case("25 mib", Quantity::size) == V{"25MiB"});
  CHECK(spellings_ignoring_case("50US", Quantity::duration) == V{"50us"});
  CHECK(spellings_ignoring_case("10tflops", Quantity::flop_rate) == V{"10Tflops"});
  // A unit known as written, one of another quantity, none at all: nothing.
  CHECK(spellings_ignoring_case("10Gbps", Quantity::bandwidth).empty());
  CHECK(spellings_ignoring_case("10gib", Quantity::bandwidth).empty());
  // Bits and bytes are eight apart: a b is not a B by case alone.
  CHECK(spellings_ignoring_case("10Gibps", Quantity::bandwidth).empty());
  CHECK(spellings_ignoring_case("10gibps", Quantity::bandwidth).empty());
  CHECK(spellings_ignoring_case("10GBPS", Quantity::bandwidth) == V{"10GBps"});
  CHECK(spellings_ignoring_case("10GBIT/S", Quantity::bandwidth) == V{"10Gbit/s"});
  CHECK(spellings_ignoring_case("10furlongs", Quantity::bandwidth).empty());
  CHECK(spellings_ignoring_case("fast", Quantity::bandwidth).empty());
}

TEST_CASE("a bandwidth written as a rate another common way: the table's spelling of it") {
  using V = std::vector<std::string>;
  CHECK(rate_spellings("10Gb") == V{"10Gbps"});
  CHECK(rate_spellings("10GB") == V{"10GBps"});
  CHECK(rate_spellings("10GiB") == V{"10GiBps"});
  CHECK(rate_spellings("10 Gb/s") == V{"10Gbps"});
  CHECK(rate_spellings("10GB/s") == V{"10GBps"});
  CHECK(rate_spellings("100Mbits/s") == V{"100Mbit/s"});
  CHECK(rate_spellings("100Mbit") == V{"100Mbit/s"});
  CHECK(rate_spellings("100mbit") == V{"100Mbit/s"}); // and the case, as for the others
  CHECK(rate_spellings("10G") == V{"10Gbps", "10GBps"});
  CHECK(rate_spellings("1e3b") == V{"1e3bps"});
  // Nothing where the text parses or no rate fits.
  CHECK(rate_spellings("10Gbps").empty());
  CHECK(rate_spellings("10Gbit/s").empty());
  CHECK(rate_spellings("10Q").empty());
  CHECK(rate_spellings("10furlongs/s").empty());
  CHECK(rate_spellings("fast").empty());
  CHECK(rate_spellings("10Gib").empty()); // "Gibps" is no unit: GiBps is eight times the rate
}

TEST_CASE("a duration written another common way: the table's spelling of it") {
  using V = std::vector<std::string>;
  CHECK(duration_spellings("5\xC2\xB5s") == V{"5us"}); // the micro sign
  CHECK(duration_spellings("5\xCE\xBCs") == V{"5us"}); // the Greek mu
  CHECK(duration_spellings("5usec") == V{"5us"});
  CHECK(duration_spellings("5 usecs") == V{"5us"});
  CHECK(duration_spellings("1.5msec") == V{"1.5ms"});
  CHECK(duration_spellings("2secs") == V{"2s"});
  CHECK(duration_spellings("2 Seconds") == V{"2s"});
  CHECK(duration_spellings("3 hours") == V{"3h"});
  CHECK(duration_spellings("3hrs") == V{"3h"});
  CHECK(duration_spellings("10mins") == V{"10min"});
  CHECK(duration_spellings("1e2nanoseconds") == V{"1e2ns"});
  // Nothing where the text parses or the unit is ambiguous or unknown.
  CHECK(duration_spellings("5us").empty());
  CHECK(duration_spellings("10m").empty()); // minutes or milliseconds
  CHECK(duration_spellings("5u").empty());
  CHECK(duration_spellings("5 fortnights").empty());
  CHECK(duration_spellings("soon").empty());
  // other_spellings picks by quantity.
  CHECK(other_spellings("5usec", Quantity::duration) == V{"5us"});
  CHECK(other_spellings("10Gb", Quantity::bandwidth) == V{"10Gbps"});
  CHECK(other_spellings("5usec", Quantity::size).empty());
}
