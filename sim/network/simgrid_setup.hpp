#pragma once
// What building a platform and checking an XML one in a child process share
// (sim/network/platform.cpp, sim/network/xml_check.cpp); not for other
// folders.

#include "sim/network/platform.hpp"

#include <string>
#include <vector>

namespace gcsim::net::detail {

/// SimGrid's message as the tail of gcsim's one-line error.
std::string one_line(const std::string& message);

/// Applies the network model settings; must run before the platform is built.
void configure_network_model(const NetworkModelSpec& network);

/// Every host of the engine's platform in natural order of their names
/// ("n-2" before "n-10", input::natural_less): an XML
/// platform's workers are the first `nodes` of them.
std::vector<simgrid::s4u::Host*> hosts_by_name(const simgrid::s4u::Engine& engine);

/// The error at `nodes` for an XML platform with fewer hosts.
std::string too_few_hosts(const PlatformSpec& spec, size_t hosts);

} // namespace gcsim::net::detail
