#include "sim/input/paths.hpp"

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

} // namespace gcsim
