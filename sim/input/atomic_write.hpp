#pragma once
// Writing a result file whole or not at all: a reader never sees half of one,
// even when the disk fills up or the process is killed midway.

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace gcsim {

/// Writes all of `size` bytes to `descriptor`, again after a signal
/// (EINTR); false with errno set when it cannot (ENOSPC where the disk is
/// full or the file may not grow, EPIPE where a pipe's reader has gone).
bool write_all(int descriptor, const void* data, std::size_t size);

/// A file could not be written (disk full, no permission): the environment's
/// fault, not the input's, so the command exits 1 naming the file.
class WriteError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Writes `text` to `file` through a new file beside it (`file.partial.PID.N`,
/// never one that was there) and a rename, creating the parent folders. A
/// symbolic link is written through, as open() writes: it stays. On
/// failure removes the partial file, leaves any earlier `file` as it was, and
/// throws WriteError. SIGINT, SIGTERM or SIGHUP ending the process meanwhile
/// removes the partial file first (where the signal's action is the default).
void write_file_atomically(const std::filesystem::path& file, const std::string& text);

/// One file of a group written together.
struct OutputFile {
  std::filesystem::path path;
  std::string text;
};

/// Writes files that belong together (a run's result, its schedule and its
/// timeline) as write_file_atomically does, each to its partial file first,
/// then renames them all into place and removes `stale` (an earlier run's
/// file that would pass for this one's) with SIGINT, SIGTERM and SIGHUP held
/// back: a failed write or an interruption leaves all the new files or none.
/// At most 4 files.
void write_files_atomically(const std::vector<OutputFile>& files,
                            const std::vector<std::filesystem::path>& stale = {});

/// The folders a command made for its output. Unless kept, they are removed
/// again when it goes out of scope (those still empty, deepest first): a run
/// refused after it made its output folder leaves no empty folder behind,
/// and a folder that was there before is never touched. The same holds when
/// SIGINT, SIGTERM or SIGHUP ends the process meanwhile (a Ctrl-C, `kill`, a
/// closed terminal): while folders are held, those signals remove them (the
/// empty ones) and then end the process as they would have. A signal the
/// process ignores stays ignored, and one it handles is left to its handler.
/// One MadeFolders at a time.
class MadeFolders {
public:
  MadeFolders() = default;
  MadeFolders(const MadeFolders&) = delete;
  MadeFolders& operator=(const MadeFolders&) = delete;
  ~MadeFolders();

  /// Records folders this command made, outermost first.
  void add(const std::vector<std::filesystem::path>& folders);
  /// The output was written: the folders stay.
  void keep();

private:
  void stop_signal_removal();

  std::vector<std::filesystem::path> folders_; // outermost first; the handlers held while any
};

/// Throws WriteError now if `file` could not be written later (it is a
/// folder, its folder cannot be made, or a file cannot be created in it): for
/// commands that measure for minutes before they write. Leaves no file behind
/// (a missing folder is made, and recorded in `made` when given).
void check_writable(const std::filesystem::path& file, MadeFolders* made = nullptr);

} // namespace gcsim
