// An unlinked scratch file for state too large to keep in memory, read and
// written in whole rows at known offsets (pread/pwrite, no mapping).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace gcsim::compress {

/// A scratch file that cannot be made, reserved, read or written: the
/// folder's or the disk's fault (full, read-only, missing), not the caller's.
class ScratchError : public std::runtime_error {
public:
  ScratchError(const std::string& message, int error_number)
      : std::runtime_error(message), error_number_(error_number) {}
  /// The disk or the quota is full, or the file past the size limit.
  bool out_of_room() const;

private:
  int error_number_;
};

// The file is created in `dir` and unlinked at once, so it disappears with the
// process even when the process is killed; its disk space is used only where
// something was written (never-written ranges read as zeros). Rows a caller
// has finished with are written back and dropped from the page cache, so the
// cache holds at most a few rows and the memory a run uses stays bounded.
// Throws ScratchError (naming the directory and the system's reason)
// when the file cannot be created, read or written. A read and a write of
// different ranges may run on two threads at once; writes one at a time.
class ScratchFile {
public:
  explicit ScratchFile(const std::string& dir);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::string& dir() const { return dir_; }

  // Reads `count` floats at byte `offset` (zeros where nothing was written).
  void read(std::uint64_t offset, float* out, std::size_t count) const;
  // Writes `count` floats at byte `offset` and starts writing them to disk
  // without waiting. Then waits for the range written before this one and
  // drops it from the page cache.
  void write(std::uint64_t offset, const float* in, std::size_t count);
  // Empties the file.
  void clear();

  // Checks that a scratch file can be created in `dir`; throws as the
  // constructor does.
  static void check_dir(const std::string& dir);

private:
  void release(std::uint64_t offset, std::uint64_t bytes) const;

  std::string dir_;
  int fd_ = -1;
  std::uint64_t last_offset_ = 0; // the range written before, to release
  std::uint64_t last_bytes_ = 0;
};

// `floats` zeros in an unlinked scratch file in `dir`, mapped into memory,
// for state that is larger than memory and must be accessed in place (the P
// error-feedback residuals, which compressors read in whatever order their
// algorithm needs). The kernel reads pages in when they are touched and
// writes dirty ones back when memory is short, so the memory a process uses
// is what the kernel leaves cached, not the mapping's size. The disk space is
// reserved up front, so a full disk is an error here, not a crash later.
// Throws ScratchError naming the directory.
class ScratchMapping {
public:
  ScratchMapping(const std::string& dir, std::size_t floats);
  ~ScratchMapping();
  ScratchMapping(const ScratchMapping&) = delete;
  ScratchMapping& operator=(const ScratchMapping&) = delete;

  float* data() { return data_; }
  std::size_t size() const { return size_; }

private:
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

} // namespace gcsim::compress
