#include "sim/input/atomic_write.hpp"

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <system_error>
#include <unistd.h>

namespace gcsim {
namespace {

// The folders a signal removes, in storage its handler may read: a handler
// may only make async-signal-safe calls (rmdir, raise), so no std::string.
constexpr int kMaxSignalFolders = 16;
char signal_folders[kMaxSignalFolders][PATH_MAX];
volatile std::sig_atomic_t signal_folder_count = 0;
constexpr int kRemovingSignals[] = {SIGINT, SIGTERM, SIGHUP};
bool handler_installed[std::size(kRemovingSignals)] = {};

extern "C" void remove_folders_then_end(int signal) {
  for (int i = signal_folder_count - 1; i >= 0; --i)
    ::rmdir(signal_folders[i]); // fails, as it should, on a folder with files
  // SA_RESETHAND restored the default action: the process ends by the signal.
  std::raise(signal);
}

// Handles the signals whose action is still the default, so that one the
// process ignores (a background job's SIGINT) or handles stays so.
void install_signal_handlers() {
  for (std::size_t i = 0; i < std::size(kRemovingSignals); ++i) {
    struct sigaction current {};
    if (handler_installed[i] || ::sigaction(kRemovingSignals[i], nullptr, &current) != 0 ||
        current.sa_handler != SIG_DFL)
      continue;
    struct sigaction removing {};
    removing.sa_handler = remove_folders_then_end;
    sigemptyset(&removing.sa_mask);
    removing.sa_flags = SA_RESETHAND;
    handler_installed[i] = ::sigaction(kRemovingSignals[i], &removing, nullptr) == 0;
  }
}

void restore_signal_handlers() {
  signal_folder_count = 0;
  for (std::size_t i = 0; i < std::size(kRemovingSignals); ++i) {
    if (!handler_installed[i])
      continue;
    // Only our own handler goes: a library may have put its own there since.
    struct sigaction current {};
    if (::sigaction(kRemovingSignals[i], nullptr, &current) == 0 &&
        current.sa_handler == remove_folders_then_end)
      std::signal(kRemovingSignals[i], SIG_DFL);
    handler_installed[i] = false;
  }
}

// Removes `folder` if it is still an empty folder; never throws.
void remove_if_empty(const std::filesystem::path& folder) {
  std::error_code error;
  if (std::filesystem::is_directory(folder, error) && std::filesystem::is_empty(folder, error))
    std::filesystem::remove(folder, error);
}

// Refuses a path that is no place for a file, and makes its folder if
// missing, with the folders made recorded in `made`.
void prepare(const std::filesystem::path& file, MadeFolders* made = nullptr) {
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
}

// A new, empty file beside `file` that this call alone has made, open for
// writing. O_EXCL: a file or a link already there under that name (a user's
// "result.json.partial", another run's) is neither written through nor
// removed; the process id and a count keep runs and calls apart.
struct PartialFile {
  std::filesystem::path path;
  int descriptor = -1;
};

PartialFile create_partial(const std::filesystem::path& file) {
  static std::atomic<unsigned> count{0};
  for (int attempt = 0; attempt < 1000; ++attempt) {
    PartialFile partial;
    partial.path = file.string() + ".partial." + std::to_string(::getpid()) + "." +
                   std::to_string(count.fetch_add(1));
    partial.descriptor =
        ::open(partial.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (partial.descriptor >= 0)
      return partial;
    if (errno != EEXIST)
      throw WriteError("cannot write " + file.string() + ": " + std::strerror(errno));
  }
  throw WriteError("cannot write " + file.string() + ": no free name for its partial file");
}

// Writes all of `text`; false with errno set when the disk is full or the
// file may not grow.
bool write_all(int descriptor, const std::string& text) {
  const char* at = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t written = ::write(descriptor, at, left);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      if (written == 0)
        errno = ENOSPC;
      return false;
    }
    at += written;
    left -= static_cast<std::size_t>(written);
  }
  return true;
}

} // namespace

void write_file_atomically(const std::filesystem::path& file, const std::string& text) {
  prepare(file);
  const PartialFile partial = create_partial(file);
  bool written = write_all(partial.descriptor, text);
  int saved_errno = errno;
  // close() reports what a delayed write (NFS) could not do.
  if (::close(partial.descriptor) != 0 && written) {
    written = false;
    saved_errno = errno;
  }
  std::error_code error;
  if (written)
    std::filesystem::rename(partial.path, file, error);
  if (!written || error) {
    const std::string reason = error ? error.message() : std::strerror(saved_errno);
    std::filesystem::remove(partial.path, error);
    throw WriteError("cannot write " + file.string() + ": " + reason);
  }
}

MadeFolders::~MadeFolders() {
  restore_signal_handlers();
  for (auto folder = folders_.rbegin(); folder != folders_.rend(); ++folder)
    remove_if_empty(*folder);
}

void MadeFolders::add(const std::vector<std::filesystem::path>& folders) {
  for (const std::filesystem::path& folder : folders) {
    folders_.push_back(folder);
    const std::string& name = folder.native();
    // A folder the handler cannot hold is still removed on a refusal.
    if (signal_folder_count >= kMaxSignalFolders || name.size() >= PATH_MAX)
      continue;
    std::memcpy(signal_folders[signal_folder_count], name.c_str(), name.size() + 1);
    signal_folder_count = signal_folder_count + 1; // after the name: the handler may run now
  }
  if (!folders_.empty())
    install_signal_handlers();
}

void MadeFolders::keep() {
  restore_signal_handlers();
  folders_.clear();
}

void check_writable(const std::filesystem::path& file, MadeFolders* made) {
  std::error_code error;
  // The partial file beside it could be made, but not renamed onto a folder.
  if (std::filesystem::is_directory(file, error))
    throw WriteError("cannot write " + file.string() + ": " + std::strerror(EISDIR));
  prepare(file, made);
  const PartialFile partial = create_partial(file);
  ::close(partial.descriptor);
  std::filesystem::remove(partial.path, error);
}

} // namespace gcsim
