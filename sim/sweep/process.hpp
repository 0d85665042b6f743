#pragma once
// Running child processes in parallel without a shell: posix_spawn, one log
// file per child for its stdout and stderr, waitpid for completion.

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace gcsim::sweep {

struct Job {
  std::vector<std::string> argv; // argv[0] is the executable's path
  std::filesystem::path log;     // the child's stdout and stderr are appended to it
};

struct ExitStatus {
  int code = 0;            // the exit status when the child exited
  int signal = 0;          // the signal that ended it, 0 when it exited
  bool passed_on = false;  // that signal was the sweep's own, passed on to stop it
  std::string spawn_error; // why it could not be started, empty when it was

  bool ok() const { return code == 0 && signal == 0 && spawn_error.empty(); }
  std::string describe() const;
};

/// How a log the caller opens with the command it runs starts its first line.
constexpr const char* kLogHeader = "# run as: ";

/// Called when job `index` ends; returning false starts no further jobs
/// (those running are still waited for).
using OnFinish = std::function<bool(size_t index, const ExitStatus& status)>;
using OnStart = std::function<void(size_t index)>;

/// Thrown by run_jobs, once every started job has ended, when SIGINT,
/// SIGTERM, SIGHUP or SIGPIPE stopped it (and was passed on to the jobs):
/// the callers' cleanup runs as it passes (validate's scratch folder), and
/// main then ends the process by that signal, as the signal would have.
/// Not a std::exception: no handler takes it for an error.
struct StoppedBySignal {
  int signal;
};

/// Runs `jobs` in list order, at most `parallel` at a time, and returns when
/// every started job has ended (throws StoppedBySignal if a signal stopped
/// them).
void run_jobs(const std::vector<Job>& jobs, int parallel, const OnStart& on_start,
              const OnFinish& on_finish);

/// The number of cores this process may run on.
int available_cores();

/// The --memory-share argument of each of `beside` runs at once ("0.5"):
/// what `gcsim run --spill auto` counts on.
std::string memory_share_argument(size_t beside);

/// The last non-empty line the child wrote to its log: where gcsim prints its
/// error ("(no output)" when there is none; a kLogHeader line is the caller's).
std::string last_line(const std::filesystem::path& log);

} // namespace gcsim::sweep
