#include "sim/sweep/process.hpp"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sched.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace gcsim::sweep {
namespace {

// posix_spawn's file actions and attributes are C resources; these wrappers
// release them on every path.
class FileActions {
public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

private:
  posix_spawn_file_actions_t actions_;
};

// Returns the child's pid, or 0 with `error` set.
pid_t spawn(const Job& job, std::string& error) {
  FileActions actions;
  posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // Appended: the caller may have started the log with a header.
  posix_spawn_file_actions_addopen(actions.get(), STDOUT_FILENO, job.log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(actions.get(), STDOUT_FILENO, STDERR_FILENO);

  std::vector<char*> argv;
  for (const std::string& argument : job.argv)
    argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int status = posix_spawn(&pid, argv[0], actions.get(), nullptr, argv.data(), environ);
  if (status != 0) {
    error = "cannot start " + job.argv[0] + ": " + std::strerror(status);
    return 0;
  }
  return pid;
}

// The running children, for the signal handler: a sweep stopped by SIGINT
// or SIGTERM (kill PID, a scheduler, timeout) left them running on, orphans
// writing results after it. Slots hold 0 when free; --jobs is at most 4096.
constexpr size_t kMaxChildren = 4096;
volatile sig_atomic_t g_stop_signal = 0;
volatile pid_t g_children[kMaxChildren];

extern "C" void forward_to_children(int signal) {
  g_stop_signal = signal;
  for (size_t i = 0; i < kMaxChildren; ++i)
    if (g_children[i] > 0)
      kill(g_children[i], signal); // async-signal-safe
}

// Forwards SIGINT, SIGTERM, SIGHUP and SIGPIPE (a `| head` that closed the
// sweep's output) to the children while it lives; the children themselves
// start with the default actions (exec resets them). A signal the sweep was
// started ignoring stays ignored, by it and by its children: nohup's SIGHUP,
// a background job's SIGINT.
class ForwardSignals {
public:
  ForwardSignals() {
    g_stop_signal = 0;
    for (size_t i = 0; i < kMaxChildren; ++i)
      g_children[i] = 0;
    struct sigaction action {};
    action.sa_handler = forward_to_children;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) {
      sigaction(kSignals[i], nullptr, &previous_[i]);
      installed_[i] = previous_[i].sa_handler != SIG_IGN;
      if (installed_[i])
        sigaction(kSignals[i], &action, nullptr);
    }
  }
  ~ForwardSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i)
      if (installed_[i])
        sigaction(kSignals[i], &previous_[i], nullptr);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

  static void add(size_t slot, pid_t pid) { g_children[slot] = pid; }
  static void remove(size_t slot) { g_children[slot] = 0; }
  static int stop_signal() { return g_stop_signal; }

private:
  static constexpr std::array<int, 4> kSignals{SIGINT, SIGTERM, SIGHUP, SIGPIPE};
  std::array<struct sigaction, 4> previous_{};
  std::array<bool, 4> installed_{};
};

} // namespace

std::string ExitStatus::describe() const {
  if (!spawn_error.empty())
    return spawn_error;
  if (signal != 0)
    return std::string("killed by signal ") + std::to_string(signal) + " (" + strsignal(signal) +
           ")";
  return "exit status " + std::to_string(code);
}

std::string memory_share_argument(size_t beside) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", 1.0 / static_cast<double>(beside));
  return text;
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

void run_jobs(const std::vector<Job>& jobs, int parallel, const OnStart& on_start,
              const OnFinish& on_finish) {
  if (parallel < 1 || static_cast<size_t>(parallel) > kMaxChildren)
    throw std::invalid_argument("run_jobs takes 1 to 4096 job slots");
  std::map<pid_t, std::pair<size_t, size_t>> running; // pid -> job, signal slot
  std::vector<size_t> free_slots;
  for (size_t slot = static_cast<size_t>(parallel); slot-- > 0;)
    free_slots.push_back(slot);
  size_t next = 0;
  bool starting = true;
  ForwardSignals forwarding;
  try {
    while (true) {
      while (starting && ForwardSignals::stop_signal() == 0 && next < jobs.size() &&
             running.size() < static_cast<size_t>(parallel)) {
        size_t index = next++;
        on_start(index);
        ExitStatus status;
        pid_t pid = spawn(jobs[index], status.spawn_error);
        if (pid != 0) {
          const size_t slot = free_slots.back();
          free_slots.pop_back();
          ForwardSignals::add(slot, pid);
          running[pid] = {index, slot};
          // A signal between the spawn and the slot's filling missed this one.
          if (const int signal = ForwardSignals::stop_signal(); signal != 0)
            kill(pid, signal);
          continue;
        }
        starting = on_finish(index, status) && starting;
      }
      if (running.empty())
        break;
      // Which child ended, left unreaped until the signal handler no longer
      // knows it: reaped first, its pid could be reused and the handler
      // would signal a stranger.
      siginfo_t ended{};
      if (waitid(P_ALL, 0, &ended, WEXITED | WNOWAIT) < 0) {
        if (errno == EINTR)
          continue;
        throw std::runtime_error(std::string("waitid failed: ") + std::strerror(errno));
      }
      const pid_t pid = ended.si_pid;
      auto it = running.find(pid);
      if (it != running.end())
        ForwardSignals::remove(it->second.second);
      int raw = 0;
      while (waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
      }
      if (it == running.end())
        continue; // not one of ours
      const size_t index = it->second.first;
      free_slots.push_back(it->second.second);
      running.erase(it);
      ExitStatus status;
      if (WIFEXITED(raw))
        status.code = WEXITSTATUS(raw);
      else if (WIFSIGNALED(raw)) {
        status.signal = WTERMSIG(raw);
        status.passed_on = status.signal == ForwardSignals::stop_signal();
      }
      starting = on_finish(index, status) && starting;
    }
  } catch (...) {
    // A point that could not be prepared (its command.txt not written): the
    // running ones are stopped and reaped first, or they ran on as orphans
    // and wrote results after the sweep had failed.
    for (const auto& [pid, where] : running)
      kill(pid, SIGTERM);
    for (const auto& [pid, where] : running) {
      // Out of the handler's list before it is reaped, as in the loop above.
      siginfo_t ended{};
      while (waitid(P_PID, static_cast<id_t>(pid), &ended, WEXITED | WNOWAIT) < 0 &&
             errno == EINTR) {
      }
      ForwardSignals::remove(where.second);
      int raw = 0;
      while (waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
      }
    }
    throw;
  }
  // Every child has stopped: the caller ends as the signal would have ended it.
  if (const int signal = ForwardSignals::stop_signal(); signal != 0)
    throw StoppedBySignal{signal};
}

std::string last_line(const std::filesystem::path& log) {
  std::ifstream stream(log);
  std::string line;
  std::string last;
  while (std::getline(stream, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos && line.rfind(kLogHeader, 0) != 0)
      last = line;
  return last.empty() ? "(no output)" : last;
}

} // namespace gcsim::sweep
