#include "sim/input/paths.hpp"

#include "sim/input/input_error.hpp"

#include <system_error>

#ifndef GCSIM_SOURCE_ROOT
#define GCSIM_SOURCE_ROOT "."
#endif

namespace gcsim {

std::filesystem::path source_root() {
  return GCSIM_SOURCE_ROOT;
}

bool is_folder_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

std::filesystem::path resolve_input_path(const std::string& value,
                                         const std::filesystem::path& referring_file) {
  std::filesystem::path path(value);
  if (path.is_absolute())
    return path;
  std::error_code error;
  std::filesystem::path beside = referring_file.parent_path() / path;
  for (const std::filesystem::path& candidate : {beside, path, source_root() / path})
    if (std::filesystem::exists(candidate, error))
      return candidate.lexically_normal();
  return beside.lexically_normal();
}

namespace {

// The path with its existing part's links and dots resolved: "a/../b.json"
// and a link to b.json name b.json.
std::filesystem::path resolved(const std::filesystem::path& path) {
  std::error_code error;
  // Absolute first: of a relative path whose first part does not exist yet,
  // weakly_canonical keeps it relative.
  const std::filesystem::path absolute = std::filesystem::absolute(path, error).lexically_normal();
  std::filesystem::path canonical = std::filesystem::weakly_canonical(absolute, error);
  return error ? absolute : canonical;
}

} // namespace

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  // Two existing files are compared by identity (a hard link under another
  // name too); a file still to be written by its resolved path.
  std::error_code error;
  const bool equivalent = std::filesystem::equivalent(a, b, error);
  return error ? resolved(a) == resolved(b) : equivalent;
}

void refuse_same_file(const NamedFile& output, const std::vector<NamedFile>& others) {
  if (output.path.empty())
    return;
  for (const NamedFile& other : others) {
    if (other.path.empty() || !same_file(output.path, other.path))
      continue;
    throw InputError(output.argument, "",
                     output.path.string() + " is also " + other.argument +
                         ": writing it would destroy that file; choose another path");
  }
}

} // namespace gcsim
