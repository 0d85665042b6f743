#include "sim/input/natural_order.hpp"

#include <algorithm>

namespace gcsim::input {

bool natural_less(std::string_view a, std::string_view b) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (!digit(a[i]) || !digit(b[j])) {
      if (a[i] != b[j])
        return a[i] < b[j];
      ++i;
      ++j;
      continue;
    }
    // Two numbers: by value, whatever their length or leading zeros.
    size_t a_end = i;
    size_t b_end = j;
    while (a_end < a.size() && digit(a[a_end]))
      ++a_end;
    while (b_end < b.size() && digit(b[b_end]))
      ++b_end;
    const size_t a_first = std::min(a.find_first_not_of('0', i), a_end);
    const size_t b_first = std::min(b.find_first_not_of('0', j), b_end);
    if (a_end - a_first != b_end - b_first)
      return a_end - a_first < b_end - b_first;
    const int order =
        a.substr(a_first, a_end - a_first).compare(b.substr(b_first, b_end - b_first));
    if (order != 0)
      return order < 0;
    i = a_end;
    j = b_end;
  }
  if (i < a.size() || j < b.size())
    return j < b.size();
  return a < b;
}

} // namespace gcsim::input
