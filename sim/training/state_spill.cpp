#include "sim/training/state_spill.hpp"

#include "compressors/scratch_file.hpp"
#include "sim/input/input_error.hpp"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/sysinfo.h>
#include <unistd.h>

namespace gcsim::training {

std::string default_scratch_dir() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
}

void check_scratch_dir(const std::string& dir, bool named) {
  // The default is default_scratch_dir()'s, which the message names.
  const std::string where = named ? "--scratch-dir" : "the default --scratch-dir ($TMPDIR or /tmp)";
  if (dir.empty())
    throw InputError(where, "", "empty: name a directory for the scratch files");
  try {
    compress::ScratchFile::check_dir(dir);
  } catch (const std::runtime_error& error) {
    throw InputError(where, "", error.what());
  }
}

namespace {

// The limit in `file` (cgroup v1 memory.limit_in_bytes or v2 memory.max),
// if it holds a positive number ("max" and a missing file: none).
std::optional<double> limit_in(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string value;
  if (!(in >> value) || value == "max")
    return std::nullopt;
  char* end = nullptr;
  const double bytes = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || !(bytes > 0))
    return std::nullopt;
  return bytes;
}

} // namespace

std::optional<double> cgroup_memory_limit(const std::string& proc_self_cgroup,
                                          const std::filesystem::path& cgroup_root) {
  std::optional<double> lowest;
  auto consider = [&](const std::filesystem::path& file) {
    const std::optional<double> limit = limit_in(file);
    if (limit && (!lowest || *limit < *lowest))
      lowest = limit;
  };
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  // Lines are "id:controllers:/path"; v2's has no controllers, v1 names "memory".
  while (std::getline(lines, line)) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos || second + 1 >= line.size() || line[second + 1] != '/')
      continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 2);
    if (controllers.empty()) {
      // Pure v2 mounts at the root, a hybrid system under unified/.
      consider(cgroup_root / path / "memory.max");
      consider(cgroup_root / "unified" / path / "memory.max");
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      consider(cgroup_root / "memory" / path / "memory.limit_in_bytes");
    }
  }
  return lowest;
}

MemoryLimits memory_limits(double share) {
  assert(share > 0 && share <= 1 && "a memory share is in (0, 1]");
  MemoryLimits limits;
  const double pages = static_cast<double>(sysconf(_SC_PHYS_PAGES));
  const double page = static_cast<double>(sysconf(_SC_PAGE_SIZE));
  limits.physical_bytes = pages > 0 && page > 0 ? pages * page : 0;
  std::ifstream file("/proc/self/cgroup");
  std::stringstream text;
  text << file.rdbuf();
  limits.cgroup_bytes = cgroup_memory_limit(text.str(), "/sys/fs/cgroup");
  limits.physical_bytes *= share;
  if (limits.cgroup_bytes)
    *limits.cgroup_bytes *= share;
  struct sysinfo info {};
  if (::sysinfo(&info) == 0)
    limits.swap_bytes = share * static_cast<double>(info.totalswap) * info.mem_unit;
  return limits;
}

std::optional<std::string> state_past_memory(double state_bytes, const MemoryLimits& limits) {
  // The machine's memory and swap, and a cgroup's limit alone: its share of
  // the swap is its own setting (memory.swap.max), and counting the
  // machine's would let a run through that the cgroup then kills.
  const double machine = limits.physical_bytes + limits.swap_bytes;
  const bool past_machine = limits.physical_bytes > 0 && state_bytes > machine;
  const bool past_cgroup = limits.cgroup_bytes && state_bytes > *limits.cgroup_bytes;
  if (!past_machine && !past_cgroup)
    return std::nullopt;
  char bound[128];
  if (past_cgroup && (!past_machine || *limits.cgroup_bytes < machine))
    std::snprintf(bound, sizeof bound, "this cgroup's %.1f GB memory limit",
                  *limits.cgroup_bytes / 1e9);
  else if (limits.swap_bytes > 0)
    std::snprintf(bound, sizeof bound, "the machine's %.1f GB of memory and %.1f GB of swap",
                  limits.physical_bytes / 1e9, limits.swap_bytes / 1e9);
  else
    std::snprintf(bound, sizeof bound, "the machine's %.1f GB of memory and no swap",
                  limits.physical_bytes / 1e9);
  char message[256];
  std::snprintf(message, sizeof message,
                "--spill never keeps %.1f GB of per-worker state in memory, more than %s",
                state_bytes / 1e9, bound);
  return std::string(message);
}

bool state_fits(double state_floats, size_t d, const MemoryLimits& limits) {
  const double bytes = state_floats * sizeof(float);
  // Half the machine leaves room for everyone else on it.
  if (limits.physical_bytes > 0 && bytes > 0.5 * limits.physical_bytes)
    return false;
  // A cgroup's limit is this process's own: the state, plus about eight
  // gradient-sized buffers besides it (the two streaming buffers, momentum
  // rows in flight, selection scratch), must stay below it.
  const double besides = 8.0 * static_cast<double>(d) * sizeof(float);
  return !limits.cgroup_bytes || bytes + besides <= 0.95 * *limits.cgroup_bytes;
}

namespace {

// --spill never keeps the state in memory whatever its size. Linux
// overcommits: state past what the process can ever hold is allocated, and
// the process killed without a word when it is touched. Refused as out of
// memory before anything is allocated.
void refuse_state_past_memory(double state_floats) {
  if (const std::optional<std::string> why =
          state_past_memory(state_floats * sizeof(float), memory_limits()))
    throw StateTooLarge(*why);
}

} // namespace

bool should_spill(const StateSpill& policy, const compress::Compressor& compressor, size_t d,
                  int workers) {
  const size_t state = compressor.worker_state_floats(d);
  if (state == 0)
    return false;
  if (policy.mode == "never") {
    refuse_state_past_memory(static_cast<double>(workers) * static_cast<double>(d + state));
    return false;
  }
  if (policy.mode == "always")
    return true;
  return !state_fits(static_cast<double>(workers) * static_cast<double>(d + state), d,
                     memory_limits(policy.memory_share));
}

bool should_spill_residuals(const StateSpill& policy, size_t d, int workers) {
  if (policy.mode == "never") {
    refuse_state_past_memory(static_cast<double>(workers) * static_cast<double>(d));
    return false;
  }
  if (policy.mode == "always")
    return true;
  return !state_fits(static_cast<double>(workers) * static_cast<double>(d), d,
                     memory_limits(policy.memory_share));
}

} // namespace gcsim::training
