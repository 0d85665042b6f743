#pragma once
// Reading a platform description (platforms/*.json, or inline in a
// scenario). Format: platforms/README.md.

#include "sim/network/platform.hpp"

#include <string>

#include <nlohmann/json.hpp>

namespace gcsim {

/// Validates and converts; every problem is an InputError naming `file`
/// and the JSON path under `path`.
net::PlatformSpec read_platform_spec(const nlohmann::json& json, const std::string& file,
                                     const std::string& path);

} // namespace gcsim
