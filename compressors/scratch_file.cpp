#include "compressors/scratch_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace gcsim::compress {
namespace {

std::runtime_error system_error(const std::string& dir, const std::string& what, int error) {
  return std::runtime_error(dir + ": " + what + ": " + std::strerror(error));
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

} // namespace

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
  std::size_t left = count * sizeof(float);
  auto at = static_cast<off_t>(offset);
  while (left > 0) {
    const ssize_t got = ::pread(fd_, bytes, left, at);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      throw system_error(dir_, "cannot read the scratch file", errno);
    if (got == 0) { // past the end: never written
      std::memset(bytes, 0, left);
      return;
    }
    bytes += got;
    left -= static_cast<std::size_t>(got);
    at += got;
  }
}

void ScratchFile::write(std::uint64_t offset, const float* in, std::size_t count) {
  const auto* bytes = reinterpret_cast<const char*>(in);
  const std::uint64_t total = count * sizeof(float);
  std::size_t left = total;
  auto at = static_cast<off_t>(offset);
  while (left > 0) {
    const ssize_t put = ::pwrite(fd_, bytes, left, at);
    if (put < 0 && errno == EINTR)
      continue;
    if (put < 0)
      throw system_error(dir_, "cannot write the scratch file", errno);
    bytes += put;
    left -= static_cast<std::size_t>(put);
    at += put;
  }
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
