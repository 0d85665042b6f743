#pragma once
// Reading a platform description (platforms/*.json, or inline in a
// scenario). Format: platforms/README.md.

#include "sim/network/platform.hpp"

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace gcsim {

/// The most workers (or GPUs, or servers) a platform may have: 2^16.
constexpr int64_t kMaxWorkers = 1 << 16;

/// Validates and converts; every problem is an InputError naming `file`
/// and the JSON path under `path`.
net::PlatformSpec read_platform_spec(const nlohmann::json& json, const std::string& file,
                                     const std::string& path);

} // namespace gcsim
