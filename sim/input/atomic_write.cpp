#include "sim/input/atomic_write.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

namespace gcsim {

void write_file_atomically(const std::filesystem::path& file, const std::string& text) {
  std::error_code error;
  if (file.has_parent_path()) {
    std::filesystem::create_directories(file.parent_path(), error);
    if (error)
      throw WriteError("cannot write " + file.string() + ": " + error.message());
  }
  const std::filesystem::path partial = file.string() + ".partial";
  errno = 0;
  std::ofstream stream(partial, std::ios::binary | std::ios::trunc);
  stream << text;
  stream.close(); // flushes; a full disk shows here at the latest
  const bool written = !stream.fail();
  const int saved_errno = errno;
  if (written)
    std::filesystem::rename(partial, file, error);
  if (!written || error) {
    const std::string reason = error              ? error.message()
                               : saved_errno != 0 ? std::strerror(saved_errno)
                                                  : "write failed";
    std::filesystem::remove(partial, error);
    throw WriteError("cannot write " + file.string() + ": " + reason);
  }
}

} // namespace gcsim
