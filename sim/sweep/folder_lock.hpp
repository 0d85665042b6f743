#pragma once
// One sweep at a time in an output folder: two sweeps into one --out each
// ran every point not yet done, twice the work, and each removed the
// sweep.csv the other was about to write.

#include <filesystem>

namespace gcsim::sweep {

/// Holds an exclusive flock(2) on `folder` itself (no lock file is left in
/// the results) until destroyed; the kernel drops it when the process ends,
/// however it ends. The descriptor is not inherited by the points. Where
/// the file system cannot lock a folder (NFS), it holds nothing.
class FolderLock {
public:
  /// Throws WriteError when another process holds the folder's lock, or
  /// the folder cannot be opened.
  explicit FolderLock(const std::filesystem::path& folder);
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock();

private:
  int descriptor_ = -1;
};

} // namespace gcsim::sweep
