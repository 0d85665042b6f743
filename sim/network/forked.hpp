#pragma once
// Work run in a forked child process. SimGrid allows one engine per process
// and aborts the process on some mistakes in its input, so work that needs an
// engine of its own, or that must not take gcsim down when it fails, runs in
// a child: the XML platform check, each simulation of `gcsim validate`.

#include <cstddef>
#include <functional>
#include <string>

namespace gcsim::net {

struct ForkedResult {
  int exit_code = -1; // the child's exit status; -1 when a signal ended it
  int signal = 0;     // the signal that ended it; 0 when it exited
  std::string output; // what the child wrote to its pipe, the first max_output bytes

  bool exited(int code) const { return signal == 0 && exit_code == code; }
};

/// Where the child's pipe is: handed to the work as a file descriptor, or in
/// place of the child's stderr (its stdout then goes to /dev/null), to keep
/// what a library prints as it dies.
enum class ChildPipe { argument, stderr_stream };

/// Forks, runs `work(fd)` in the child and ends the child with its return
/// value, without the parent's atexit handlers or static destructors; `fd`
/// is the write end of the pipe (-1 with ChildPipe::stderr_stream). An
/// exception that escapes `work` ends the child with status 70. Returns when
/// the child has ended. Throws std::runtime_error when it cannot fork.
ForkedResult run_forked(const std::function<int(int fd)>& work, ChildPipe pipe, size_t max_output);

} // namespace gcsim::net
