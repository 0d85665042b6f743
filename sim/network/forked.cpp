#include "sim/network/forked.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gcsim::net {
namespace {

// sysexits' EX_SOFTWARE: the work threw instead of returning a status.
constexpr int kUncaughtException = 70;

std::runtime_error failure(const char* call, int error) {
  return std::runtime_error(std::string("cannot start a child process: ") + call + ": " +
                            std::strerror(error));
}

[[noreturn]] void run_child(const std::function<int(int)>& work, ChildPipe pipe, int write_fd) {
  int fd = write_fd;
  if (pipe == ChildPipe::stderr_stream) {
    dup2(write_fd, STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
      dup2(null, STDOUT_FILENO);
    fd = -1;
  }
  int status = kUncaughtException;
  try {
    status = work(fd);
  } catch (...) { // the parent learns of it by the status
  }
  std::fflush(nullptr);
  _exit(status);
}

} // namespace

ForkedResult run_forked(const std::function<int(int fd)>& work, ChildPipe pipe, size_t max_output) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw failure("pipe", errno);
  std::fflush(nullptr); // the child must not write the parent's buffered output again
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    const int error = errno;
    close(fds[0]);
    close(fds[1]);
    throw failure("fork", error);
  }
  if (child == 0) {
    // A parent ended by a signal (`kill PID`, a scheduler) would leave the
    // child computing on, an orphan; this thread waits for the child, so
    // it outlives it otherwise.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) // it ended before prctl
      _exit(kUncaughtException);
    close(fds[0]);
    run_child(work, pipe, fds[1]);
  }
  close(fds[1]);
  ForkedResult result;
  char buffer[4096];
  for (;;) { // until the child exits: keep reading so that it never blocks on a full pipe
    const ssize_t got = read(fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break;
    const size_t room = max_output - result.output.size();
    result.output.append(buffer, std::min(room, static_cast<size_t>(got)));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      throw failure("waitpid", errno);
  if (WIFSIGNALED(status))
    result.signal = WTERMSIG(status);
  else
    result.exit_code = WEXITSTATUS(status);
  return result;
}

} // namespace gcsim::net
