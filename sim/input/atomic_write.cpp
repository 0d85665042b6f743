#include "sim/input/atomic_write.hpp"

#include <atomic>
#include <cassert>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <pthread.h>
#include <system_error>
#include <unistd.h>

namespace gcsim {
namespace {

// What a signal removes, in storage its handler may read: a handler may only
// make async-signal-safe calls (unlink, rmdir, raise), so no std::string.
constexpr int kMaxSignalFolders = 16;
char signal_folders[kMaxSignalFolders][PATH_MAX];
volatile std::sig_atomic_t signal_folder_count = 0;
constexpr int kMaxSignalPartials = 4;
char signal_partials[kMaxSignalPartials][PATH_MAX];
volatile std::sig_atomic_t signal_partial_held[kMaxSignalPartials] = {};
constexpr int kRemovingSignals[] = {SIGINT, SIGTERM, SIGHUP};
bool handler_installed[std::size(kRemovingSignals)] = {};
// MadeFolders holding folders, and PartialFile objects alive.
int signal_handler_users = 0;

extern "C" void remove_outputs_then_end(int signal) {
  for (int i = 0; i < kMaxSignalPartials; ++i)
    if (signal_partial_held[i])
      ::unlink(signal_partials[i]); // fails, harmlessly, once it is renamed into place
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
    removing.sa_handler = remove_outputs_then_end;
    sigemptyset(&removing.sa_mask);
    removing.sa_flags = SA_RESETHAND;
    handler_installed[i] = ::sigaction(kRemovingSignals[i], &removing, nullptr) == 0;
  }
}

void restore_signal_handlers() {
  for (std::size_t i = 0; i < std::size(kRemovingSignals); ++i) {
    if (!handler_installed[i])
      continue;
    // Only our own handler goes: a library may have put its own there since.
    struct sigaction current {};
    if (::sigaction(kRemovingSignals[i], nullptr, &current) == 0 &&
        current.sa_handler == remove_outputs_then_end)
      std::signal(kRemovingSignals[i], SIG_DFL);
    handler_installed[i] = false;
  }
}

// The handlers stay while anyone needs them.
void hold_signal_handlers() {
  if (signal_handler_users++ == 0)
    install_signal_handlers();
}

void release_signal_handlers() {
  assert(signal_handler_users > 0 && "released more often than held");
  if (--signal_handler_users == 0)
    restore_signal_handlers();
}

// Holds back the removing signals while it lives (those arriving meanwhile
// are delivered at its end) in this thread: a file and the handler's note of
// it are made together. gcsim writes its outputs with one thread running.
class SignalsDeferred {
public:
  SignalsDeferred() {
    sigset_t removing;
    sigemptyset(&removing);
    for (const int signal : kRemovingSignals)
      sigaddset(&removing, signal);
    ::pthread_sigmask(SIG_BLOCK, &removing, &before_);
  }
  SignalsDeferred(const SignalsDeferred&) = delete;
  SignalsDeferred& operator=(const SignalsDeferred&) = delete;
  ~SignalsDeferred() { ::pthread_sigmask(SIG_SETMASK, &before_, nullptr); }

private:
  sigset_t before_{};
};

// Removes `folder` if it is still an empty folder; never throws.
void remove_if_empty(const std::filesystem::path& folder) {
  std::error_code error;
  if (std::filesystem::is_directory(folder, error) && std::filesystem::is_empty(folder, error))
    std::filesystem::remove(folder, error);
}

// The file `file` names through symbolic links, as open() writes it: the
// link stays and the file it points to changes, as with the scripts'
// atomic_write.py (a link renamed over became a file, the target unchanged).
std::filesystem::path through_links(const std::filesystem::path& file) {
  constexpr int kMaxLinks = 40; // Linux's own limit on a path's links
  std::filesystem::path at = file;
  std::error_code error;
  for (int links = 0; std::filesystem::is_symlink(at, error); ++links) {
    if (links == kMaxLinks)
      throw WriteError("cannot write " + file.string() + ": " + std::strerror(ELOOP));
    const std::filesystem::path target = std::filesystem::read_symlink(at, error);
    if (error)
      break;
    at = target.is_absolute() ? target : at.parent_path() / target;
  }
  return at;
}

// Why a folder of `file` could not be made where one of them is a link to
// nowhere (create_directories says only "File exists"), or "".
std::string dangling_link_in(const std::filesystem::path& file) {
  std::error_code error;
  for (std::filesystem::path folder = file.parent_path(); !folder.empty();
       folder = folder.parent_path()) {
    if (std::filesystem::is_symlink(folder, error) && !std::filesystem::exists(folder, error))
      return folder.string() + " is a link to " +
             std::filesystem::read_symlink(folder, error).string() + ", which does not exist";
    if (folder == folder.parent_path())
      break;
  }
  return "";
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
      const std::string dangling = dangling_link_in(file);
      throw WriteError("cannot write " + file.string() + ": " +
                       (dangling.empty() ? error.message() : dangling));
    }
    if (made != nullptr)
      made->add({missing.rbegin(), missing.rend()});
  }
}

// FILE.partial.PID.N, or, where that name would pass the file system's limit
// on a name (a valid name of 236 to 255 bytes was refused), a short one of
// its own in FILE's folder.
std::string partial_name(const std::filesystem::path& file, unsigned count) {
  const std::string suffix = ".partial." + std::to_string(::getpid()) + "." + std::to_string(count);
  if (file.filename().native().size() + suffix.size() <= NAME_MAX)
    return file.native() + suffix;
  return (file.parent_path() / (".gcsim" + suffix)).native();
}

// A new, empty file beside `file` that this object alone has made, open for
// writing, and removed again unless renamed into place: when the object goes
// (a failed write), or first thing when SIGINT, SIGTERM or SIGHUP ends the
// process meanwhile (a large timeline takes seconds to write). O_EXCL: a file
// or a link already there under that name (a user's "result.json.partial",
// another run's) is neither written through nor removed; the process id and
// a count keep runs and calls apart. At most kMaxSignalPartials at a time.
class PartialFile {
public:
  explicit PartialFile(const std::filesystem::path& file) {
    static std::atomic<unsigned> count{0};
    hold_signal_handlers();
    // A signal between the file's creation and the handler's note of it
    // would leave the file behind.
    const SignalsDeferred deferred;
    std::string failure = "no free name for its partial file";
    for (int attempt = 0; attempt < 1000 && descriptor_ < 0; ++attempt) {
      path_ = partial_name(file, count.fetch_add(1));
      descriptor_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (descriptor_ < 0 && errno != EEXIST) {
        failure = std::strerror(errno);
        break;
      }
    }
    if (descriptor_ < 0) {
      release_signal_handlers();
      throw WriteError("cannot write " + file.string() + ": " + failure);
    }
    const std::string& name = path_.native();
    while (slot_ < kMaxSignalPartials && signal_partial_held[slot_])
      ++slot_;
    assert(slot_ < kMaxSignalPartials && "more partial files at once than the handler holds");
    // A longer name (or one past the slots) is still removed on a failed write.
    if (slot_ < kMaxSignalPartials && name.size() < PATH_MAX) {
      std::memcpy(signal_partials[slot_], name.c_str(), name.size() + 1);
      signal_partial_held[slot_] = 1;
    }
  }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;
  ~PartialFile() {
    close();
    std::error_code error;
    if (!renamed_)
      std::filesystem::remove(path_, error);
    if (slot_ < kMaxSignalPartials)
      signal_partial_held[slot_] = 0;
    release_signal_handlers();
  }

  int descriptor() const { return descriptor_; }

  /// Closes the file; false with errno set if a delayed write (NFS) failed.
  bool close() {
    const int descriptor = descriptor_;
    descriptor_ = -1;
    return descriptor < 0 || ::close(descriptor) == 0;
  }

  void rename_to(const std::filesystem::path& file, std::error_code& error) {
    std::filesystem::rename(path_, file, error);
    renamed_ = !error;
  }

private:
  std::filesystem::path path_;
  int descriptor_ = -1;
  bool renamed_ = false;
  int slot_ = 0; // in signal_partials
};

} // namespace

bool write_all(int descriptor, const void* data, std::size_t size) {
  const char* at = static_cast<const char*>(data);
  std::size_t left = size;
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

void write_file_atomically(const std::filesystem::path& file, const std::string& text) {
  write_files_atomically({{file, text}});
}

void write_files_atomically(const std::vector<OutputFile>& files,
                            const std::vector<std::filesystem::path>& stale) {
  assert(files.size() <= static_cast<size_t>(kMaxSignalPartials) && "at most 4 files at once");
  std::vector<std::unique_ptr<PartialFile>> partials;
  std::vector<std::filesystem::path> targets;
  for (const OutputFile& file : files) {
    targets.push_back(through_links(file.path));
    prepare(targets.back());
    partials.push_back(std::make_unique<PartialFile>(targets.back()));
    PartialFile& partial = *partials.back();
    bool written = write_all(partial.descriptor(), file.text.data(), file.text.size());
    int saved_errno = errno;
    if (!partial.close() && written) {
      written = false;
      saved_errno = errno;
    }
    if (!written) // the partial files go with `partials`
      throw WriteError("cannot write " + file.path.string() + ": " + std::strerror(saved_errno));
  }
  // Every file is whole beside its place: a signal now would leave some
  // renamed and others not.
  const SignalsDeferred deferred;
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code error;
    partials[i]->rename_to(targets[i], error);
    if (error)
      throw WriteError("cannot write " + files[i].path.string() + ": " + error.message());
  }
  for (const std::filesystem::path& file : stale) {
    std::error_code ignored;
    std::filesystem::remove(file, ignored);
  }
}

MadeFolders::~MadeFolders() {
  stop_signal_removal();
  for (auto folder = folders_.rbegin(); folder != folders_.rend(); ++folder)
    remove_if_empty(*folder);
}

void MadeFolders::add(const std::vector<std::filesystem::path>& folders) {
  const bool was_empty = folders_.empty();
  for (const std::filesystem::path& folder : folders) {
    folders_.push_back(folder);
    const std::string& name = folder.native();
    // A folder the handler cannot hold is still removed on a refusal.
    if (signal_folder_count >= kMaxSignalFolders || name.size() >= PATH_MAX)
      continue;
    std::memcpy(signal_folders[signal_folder_count], name.c_str(), name.size() + 1);
    signal_folder_count = signal_folder_count + 1; // after the name: the handler may run now
  }
  if (was_empty && !folders_.empty()) // the handlers are held while folders are
    hold_signal_handlers();
}

void MadeFolders::keep() {
  stop_signal_removal();
  folders_.clear();
}

void MadeFolders::stop_signal_removal() {
  signal_folder_count = 0;
  if (!folders_.empty())
    release_signal_handlers();
}

void check_writable(const std::filesystem::path& file, MadeFolders* made) {
  std::error_code error;
  // The partial file beside it could be made, but not renamed onto a folder.
  if (std::filesystem::is_directory(file, error))
    throw WriteError("cannot write " + file.string() + ": " + std::strerror(EISDIR));
  const std::filesystem::path target = through_links(file);
  prepare(target, made);
  const PartialFile partial(target); // and removed again
}

} // namespace gcsim
