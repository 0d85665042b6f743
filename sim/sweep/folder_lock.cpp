#include "sim/sweep/folder_lock.hpp"

#include "sim/input/atomic_write.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace gcsim::sweep {

FolderLock::FolderLock(const std::filesystem::path& folder) {
  descriptor_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (descriptor_ < 0)
    throw WriteError("cannot write into " + folder.string() + ": " + std::strerror(errno));
  if (::flock(descriptor_, LOCK_EX | LOCK_NB) == 0)
    return;
  const int error = errno;
  ::close(descriptor_);
  descriptor_ = -1;
  if (error == EWOULDBLOCK)
    throw WriteError("cannot write into " + folder.string() +
                     ": another gcsim sweep is writing into it; wait for it to end, or give "
                     "another --out");
  // A file system that cannot lock a folder (NFS emulates flock with locks
  // that need a file open for writing) runs the sweep unguarded: the lock
  // is a convenience, the results are written atomically either way.
}

FolderLock::~FolderLock() {
  if (descriptor_ >= 0)
    ::close(descriptor_);
}

} // namespace gcsim::sweep
