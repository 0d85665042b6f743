#pragma once
// When per-worker state leaves memory for scratch files (gcsim run --spill):
// the policy and the memory it judges by. Where the state then lives is
// compressors/scratch_file.hpp; run_compressor takes the residuals' directory.

#include "compressors/compressor.hpp"

#include <cstddef>
#include <filesystem>
#include <new>
#include <optional>
#include <string>

namespace gcsim::training {

/// Where the per-worker state lives: in memory, or in unlinked scratch
/// files in `dir` (same results, slower). Two kinds: the dense state a
/// compressor keeps besides the residuals (DGC's and Sketched-SGD's local
/// momentum, read and written a row per worker) and the error-feedback
/// residuals themselves (mapped from the file, paged by the kernel). "auto"
/// spills the momenta when residuals and momenta of all workers together
/// would not fit (state_fits, memory_limits()), and the residuals too when
/// they alone would not; "always" spills both, "never" neither.
struct StateSpill {
  std::string mode = "auto"; // "auto", "always" or "never"
  std::string dir;           // the scratch directory (default_scratch_dir())
  // The part of the memory limits this run counts on when "auto" judges:
  // gcsim sweep --jobs N runs N points at once and gives each 1/N.
  double memory_share = 1.0;
};

/// $TMPDIR when set and not empty, /tmp otherwise.
std::string default_scratch_dir();

/// Throws InputError unless a scratch file can be made in `dir` (an empty
/// name included): at --scratch-dir when `named` (the user gave it), else
/// at the default one ($TMPDIR or /tmp: default_scratch_dir()).
void check_scratch_dir(const std::string& dir, bool named);

/// The memory this process may use: the machine's, and the memory limit of
/// its cgroup if it has one (a container, a batch job, `systemd-run -p
/// MemoryMax=`).
struct MemoryLimits {
  double physical_bytes = 0;
  std::optional<double> cgroup_bytes;
  double swap_bytes = 0; // the machine's
};
/// `share` (in (0, 1]) of each: what one of several runs beside each other
/// may count on.
MemoryLimits memory_limits(double share = 1.0);
/// Whether `state_floats` floats of per-worker state (for a gradient of d
/// values) may stay in memory: at most half of the physical memory, and,
/// under a cgroup limit, with room for about eight gradient-sized buffers
/// besides it inside 95% of the limit. "auto" spills what does not fit.
bool state_fits(double state_floats, size_t d, const MemoryLimits& limits);
/// The lowest memory limit that `proc_self_cgroup` (the text of
/// /proc/self/cgroup) names under `cgroup_root` (/sys/fs/cgroup): v1's
/// memory.limit_in_bytes, v2's memory.max (pure or hybrid); none when
/// every one is "max" or missing.
std::optional<double> cgroup_memory_limit(const std::string& proc_self_cgroup,
                                          const std::filesystem::path& cgroup_root);

/// Why `state_bytes` can never be held in memory under `limits` (past the
/// machine's memory and swap, or past a cgroup's limit), naming the smaller
/// bound it passes; nullopt when it may fit.
std::optional<std::string> state_past_memory(double state_bytes, const MemoryLimits& limits);

/// Per-worker state that "never" would keep in memory and that cannot fit
/// there: out of memory, said before anything is allocated; what() says
/// how much and against what.
class StateTooLarge : public std::bad_alloc {
public:
  explicit StateTooLarge(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

private:
  std::string message_;
};

/// Whether `policy` spills the per-worker state of `compressor` for a
/// gradient of d values on `workers` workers (never when it keeps none).
/// Under "never", state past the memory (state_past_memory) throws
/// StateTooLarge: it could never be touched.
bool should_spill(const StateSpill& policy, const compress::Compressor& compressor, size_t d,
                  int workers);
/// Whether `policy` maps the residuals of `workers` workers (d values each)
/// from a scratch file; under "never", throws StateTooLarge as should_spill does.
bool should_spill_residuals(const StateSpill& policy, size_t d, int workers);

} // namespace gcsim::training
