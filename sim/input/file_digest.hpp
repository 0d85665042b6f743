#pragma once
// A digest of an input file's bytes, for result.json: a scenario names its
// device profile and layer spec by path, and a path can resolve to another
// file from another folder (paths.hpp's lookup order), which the result
// would otherwise not show.

#include <filesystem>
#include <string>

namespace gcsim::input {

/// "fnv1a64:" and the 16 hex digits of the 64-bit FNV-1a hash of the file's
/// bytes: not a cryptographic hash, a fingerprint that two different files
/// give the same by chance about once in 2^64. Throws InputError naming the
/// file when it cannot be read.
std::string file_digest(const std::filesystem::path& file);

} // namespace gcsim::input
