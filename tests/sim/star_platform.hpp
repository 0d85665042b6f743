// The platform the iteration-model simtests run on: a star of `nodes`
// workers, each behind a NIC of `bandwidth` bytes/s and `latency` seconds.
#pragma once

#include "sim/network/platform.hpp"

#include <string>

namespace gcsim::testing {

inline net::PlatformSpec star_platform(std::string name, int nodes, double bandwidth,
                                       double latency) {
  net::PlatformSpec platform;
  platform.name = std::move(name);
  platform.topology = net::Topology::star;
  platform.nodes = nodes;
  platform.link = {bandwidth, latency};
  return platform;
}

} // namespace gcsim::testing
