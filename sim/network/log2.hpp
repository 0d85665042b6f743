#pragma once
// Integer base-2 logarithms for the tree and doubling algorithms.

namespace gcsim::net {

/// The largest l with 2^l <= value (value >= 1).
constexpr int floor_log2(int value) {
  int log = 0;
  while ((2 << log) <= value)
    ++log;
  return log;
}

/// The smallest l with 2^l >= value (value >= 1).
constexpr int ceil_log2(int value) {
  int log = 0;
  while ((1 << log) < value)
    ++log;
  return log;
}

static_assert(floor_log2(1) == 0 && floor_log2(96) == 6 && ceil_log2(96) == 7 &&
              ceil_log2(64) == 6);

} // namespace gcsim::net
