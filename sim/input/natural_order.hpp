#pragma once

#include <string_view>

namespace gcsim::input {

/// Whether `a` comes before `b` in natural order: character by character,
/// but a run of digits by its value, so that "n-2" comes before "n-10" (as a
/// SimGrid <cluster>'s radical numbers hosts) and "stride 2" before
/// "stride 16". A strict weak order: names equal but for leading zeros
/// ("n-01", "n-1") still get one order.
bool natural_less(std::string_view a, std::string_view b);

/// natural_less as a comparator for ordered containers and std::sort.
struct NaturalLess {
  bool operator()(std::string_view a, std::string_view b) const { return natural_less(a, b); }
};

} // namespace gcsim::input
