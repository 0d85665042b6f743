// The platforms the simtests run on.
#pragma once

#include "sim/network/platform.hpp"

#include <string>

namespace gcsim::testing {

/// A star of `nodes` workers, each behind a NIC of `bandwidth` bytes/s and
/// `latency` seconds.
inline net::PlatformSpec star_platform(std::string name, int nodes, double bandwidth,
                                       double latency) {
  net::PlatformSpec platform;
  platform.name = std::move(name);
  platform.topology = net::Topology::star;
  platform.nodes = nodes;
  platform.link = {bandwidth, latency};
  return platform;
}

/// `workers` workers and `servers` parameter servers, every one behind a NIC
/// of `bandwidth` bytes/s and `latency` seconds.
inline net::PlatformSpec parameter_server_platform(std::string name, int workers, int servers,
                                                   double bandwidth, double latency) {
  net::PlatformSpec platform = star_platform(std::move(name), workers, bandwidth, latency);
  platform.topology = net::Topology::parameter_server;
  platform.servers = servers;
  platform.server_link = {bandwidth, latency};
  return platform;
}

/// `nodes` machines of `per_node` GPUs, each GPU on `gpu_link`, each
/// machine behind one NIC of `nic`.
inline net::PlatformSpec machines_platform(std::string name, int nodes, int per_node,
                                           net::LinkSpec gpu_link, net::LinkSpec nic) {
  net::PlatformSpec platform;
  platform.name = std::move(name);
  platform.topology = net::Topology::multi_gpu;
  platform.nodes = nodes;
  platform.gpus_per_node = per_node;
  platform.gpu_link = gpu_link;
  platform.link = nic;
  return platform;
}

} // namespace gcsim::testing
