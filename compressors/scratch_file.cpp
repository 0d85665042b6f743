#include "compressors/scratch_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace gcsim::compress {
namespace {

ScratchError system_error(const std::string& dir, const std::string& what, int error) {
  return ScratchError(dir + ": " + what + ": " + std::strerror(error), error);
}

int open_unlinked(const std::string& dir) {
  std::string pattern = (dir.empty() ? std::string(".") : dir) + "/gcsim-scratch-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0)
    throw system_error(dir, "cannot create a scratch file there", errno);
  ::unlink(name.data());
  return fd;
}

// Moves `left` bytes at file offset `at` with `io` (pread or pwrite, as a
// lambda of (buffer, count, offset)), retrying short and interrupted calls.
// Returns the bytes not moved because the file ended first (reads only).
template <typename Bytes, typename Io>
std::size_t transfer(Bytes* bytes, std::size_t left, off_t at, Io io, const std::string& dir,
                     const char* what) {
  while (left > 0) {
    const ssize_t moved = io(bytes, left, at);
    if (moved < 0 && errno == EINTR)
      continue;
    if (moved < 0)
      throw system_error(dir, what, errno);
    if (moved == 0)
      return left;
    bytes += moved;
    left -= static_cast<std::size_t>(moved);
    at += moved;
  }
  return 0;
}

} // namespace

bool ScratchError::out_of_room() const {
  return error_number_ == ENOSPC || error_number_ == EDQUOT || error_number_ == EFBIG;
}

ScratchFile::ScratchFile(const std::string& dir) : dir_(dir), fd_(open_unlinked(dir)) {}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

void ScratchFile::check_dir(const std::string& dir) {
  const int fd = open_unlinked(dir);
  // A directory that lets us create but not write (a full disk shows later).
  const char byte = 0;
  const bool written = ::pwrite(fd, &byte, 1, 0) == 1;
  const int error = errno;
  ::close(fd);
  if (!written)
    throw system_error(dir, "cannot write a scratch file there", error);
}

void ScratchFile::read(std::uint64_t offset, float* out, std::size_t count) const {
  auto* bytes = reinterpret_cast<char*>(out);
  const std::size_t total = count * sizeof(float);
  const std::size_t unread = transfer(
      bytes, total, static_cast<off_t>(offset),
      [this](char* to, std::size_t n, off_t at) { return ::pread(fd_, to, n, at); }, dir_,
      "cannot read the scratch file");
  std::memset(bytes + (total - unread), 0, unread); // past the end: never written
}

void ScratchFile::write(std::uint64_t offset, const float* in, std::size_t count) {
  const std::uint64_t total = count * sizeof(float);
  const std::size_t unwritten = transfer(
      reinterpret_cast<const char*>(in), total, static_cast<off_t>(offset),
      [this](const char* from, std::size_t n, off_t at) { return ::pwrite(fd_, from, n, at); },
      dir_, "cannot write the scratch file");
  if (unwritten > 0) // pwrite makes no progress only when the disk is full
    throw system_error(dir_, "cannot write the scratch file", ENOSPC);
#ifdef __linux__
  // Start writing this range back now; the previous range should be on disk
  // by the time it is released below.
  ::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(total),
                    SYNC_FILE_RANGE_WRITE);
#endif
  if (last_bytes_ > 0)
    release(last_offset_, last_bytes_);
  last_offset_ = offset;
  last_bytes_ = total;
}

void ScratchFile::release(std::uint64_t offset, std::uint64_t bytes) const {
#ifdef __linux__
  ::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(bytes),
                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                        SYNC_FILE_RANGE_WAIT_AFTER);
#else
  ::fdatasync(fd_);
#endif
  ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(bytes), POSIX_FADV_DONTNEED);
}

void ScratchFile::clear() {
  if (::ftruncate(fd_, 0) != 0)
    throw system_error(dir_, "cannot empty the scratch file", errno);
  last_bytes_ = 0;
}

ScratchMapping::ScratchMapping(const std::string& dir, std::size_t floats) : size_(floats) {
  if (floats == 0)
    return;
  const int fd = open_unlinked(dir);
  const auto bytes = static_cast<off_t>(floats * sizeof(float));
  const int reserved = ::posix_fallocate(fd, 0, bytes);
  if (reserved != 0) {
    ::close(fd);
    throw system_error(dir, "cannot reserve " + std::to_string(bytes) + " bytes for a scratch file",
                       reserved);
  }
  void* mapped =
      ::mmap(nullptr, static_cast<std::size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  ::close(fd); // the mapping keeps the file
  // Out of address space (ulimit -v) is out of memory, not the folder's fault.
  if (mapped == MAP_FAILED && error == ENOMEM)
    throw std::bad_alloc();
  if (mapped == MAP_FAILED)
    throw system_error(dir, "cannot map a scratch file", error);
  // Passes over the residuals go worker by worker: read ahead, and let the
  // pages just used go first when memory is short.
  ::madvise(mapped, static_cast<std::size_t>(bytes), MADV_SEQUENTIAL);
  data_ = static_cast<float*>(mapped);
}

ScratchMapping::~ScratchMapping() {
  if (data_ != nullptr)
    ::munmap(data_, size_ * sizeof(float));
}

} // namespace gcsim::compress
