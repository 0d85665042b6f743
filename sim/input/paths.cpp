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
  // 255 bytes: the longest name Linux file systems take (NAME_MAX); a longer
  // one failed only when the result was written, after the simulation.
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
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

// Whether `inner` has every part of `outer` first, and more.
bool starts_with_folder(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  auto at = inner.begin();
  for (const std::filesystem::path& part : outer) {
    if (part.empty()) // the empty last part of a path that ends in '/'
      continue;
    if (at == inner.end() || *at != part)
      return false;
    ++at;
  }
  return at != inner.end();
}

} // namespace

std::string recorded_path(const std::filesystem::path& path) {
  const std::filesystem::path full = resolved(path);
  const std::filesystem::path root = resolved(source_root());
  if (starts_with_folder(full, root))
    return full.lexically_relative(root).string();
  return full.string();
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  // Two existing files are compared by identity (a hard link under another
  // name too); a file still to be written by its resolved path.
  std::error_code error;
  const bool equivalent = std::filesystem::equivalent(a, b, error);
  return error ? resolved(a) == resolved(b) : equivalent;
}

bool inside_folder(const std::filesystem::path& path, const std::filesystem::path& folder) {
  // Both as written and with links resolved: a trace's iterations/ may be a
  // link to another trace's, and its files are still this trace's.
  std::error_code error;
  const auto lexical = [&error](const std::filesystem::path& p) {
    return std::filesystem::absolute(p, error).lexically_normal();
  };
  return starts_with_folder(resolved(path), resolved(folder)) ||
         starts_with_folder(lexical(path), lexical(folder));
}

void refuse_same_file(const NamedFile& output, const std::vector<NamedFile>& others) {
  if (output.path.empty())
    return;
  for (const NamedFile& other : others) {
    if (other.path.empty())
      continue;
    std::error_code error;
    if (std::filesystem::is_directory(other.path, error)) {
      // A new file beside a trace's destroys nothing; one of its own would.
      if (inside_folder(output.path, other.path) && std::filesystem::exists(output.path, error))
        throw InputError(output.argument, "",
                         output.path.string() + " is a file of " + other.argument + " (" +
                             other.path.string() +
                             "): writing it would destroy that file; choose another path");
      continue;
    }
    if (!same_file(output.path, other.path))
      continue;
    throw InputError(output.argument, "",
                     output.path.string() + " is also " + other.argument +
                         ": writing it would destroy that file; choose another path");
  }
}

} // namespace gcsim
