#include "sim/input/atomic_write.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

namespace gcsim {
namespace {

// Removes `folder` if it is still an empty folder; never throws.
void remove_if_empty(const std::filesystem::path& folder) {
  std::error_code error;
  if (std::filesystem::is_directory(folder, error) && std::filesystem::is_empty(folder, error))
    std::filesystem::remove(folder, error);
}

// The file's folder, made if missing, with the folders made recorded in
// `made`; returns where the text goes first.
std::filesystem::path prepare(const std::filesystem::path& file, MadeFolders* made = nullptr) {
  std::error_code error;
  // The finished file is renamed onto the path: a device or a pipe there
  // (as root, --timeline /dev/null) would be replaced by a regular file.
  const std::filesystem::file_type type = std::filesystem::symlink_status(file, error).type();
  if (type == std::filesystem::file_type::character || type == std::filesystem::file_type::block ||
      type == std::filesystem::file_type::fifo || type == std::filesystem::file_type::socket)
    throw WriteError("cannot write " + file.string() +
                     ": not a regular file (a device or a pipe), which gcsim would replace with "
                     "one: its outputs are written whole and renamed into place");
  if (file.has_parent_path()) {
    // The missing folders, deepest first.
    std::vector<std::filesystem::path> missing;
    for (std::filesystem::path folder = file.parent_path(); !folder.empty();
         folder = folder.parent_path()) {
      if (std::filesystem::exists(folder, error) || error || folder == folder.parent_path())
        break;
      missing.push_back(folder);
    }
    std::filesystem::create_directories(file.parent_path(), error);
    if (error) {
      for (const std::filesystem::path& folder : missing)
        remove_if_empty(folder);
      throw WriteError("cannot write " + file.string() + ": " + error.message());
    }
    if (made != nullptr)
      made->add({missing.rbegin(), missing.rend()});
  }
  return file.string() + ".partial";
}

} // namespace

void write_file_atomically(const std::filesystem::path& file, const std::string& text) {
  const std::filesystem::path partial = prepare(file);
  std::error_code error;
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

MadeFolders::~MadeFolders() {
  for (auto folder = folders_.rbegin(); folder != folders_.rend(); ++folder)
    remove_if_empty(*folder);
}

void MadeFolders::add(const std::vector<std::filesystem::path>& folders) {
  folders_.insert(folders_.end(), folders.begin(), folders.end());
}

void check_writable(const std::filesystem::path& file, MadeFolders* made) {
  std::error_code error;
  // The partial file beside it could be made, but not renamed onto a folder.
  if (std::filesystem::is_directory(file, error))
    throw WriteError("cannot write " + file.string() + ": " + std::strerror(EISDIR));
  const std::filesystem::path partial = prepare(file, made);
  errno = 0;
  const bool opened = std::ofstream(partial, std::ios::binary | std::ios::app).is_open();
  const int saved_errno = errno;
  std::filesystem::remove(partial, error);
  if (!opened)
    throw WriteError(
        "cannot write " + file.string() + ": " +
        (saved_errno != 0 ? std::strerror(saved_errno) : "cannot create a file there"));
}

} // namespace gcsim
