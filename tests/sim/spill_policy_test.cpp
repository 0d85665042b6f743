// When gcsim run spills per-worker state to scratch files (--spill).
#include "compressors/registry.hpp"
#include "sim/training/state_spill.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <doctest/doctest.h>

namespace gc = gcsim::compress;
namespace tr = gcsim::training;
namespace fs = std::filesystem;

namespace {

// Floats per worker so that P workers' residuals take `share` of half the
// machine's memory, the limit "auto" judges by without a cgroup limit.
size_t floats_for(double share, int workers) {
  return static_cast<size_t>(share * 0.5 * tr::memory_limits().physical_bytes / (4.0 * workers));
}

} // namespace

TEST_CASE("--spill: auto spills the momenta first, then the residuals") {
  REQUIRE(tr::memory_limits().physical_bytes > 0);
  const auto dgc = gc::make_compressor("dgc", {{"density", 0.01}});
  const auto no_momentum = gc::make_compressor("dgc", {{"density", 0.01}, {"momentum", 0.0}});
  const auto topk = gc::make_compressor("topk", {{"density", 0.01}});
  const tr::StateSpill automatic{"auto", "/tmp"};
  const int P = 8;
  // Small: everything in memory.
  CHECK_FALSE(tr::should_spill(automatic, *dgc, 1000, P));
  CHECK_FALSE(tr::should_spill_residuals(automatic, 1000, P));
  // Nothing to spill, whatever the size.
  const size_t huge = floats_for(4.0, P);
  CHECK_FALSE(tr::should_spill(automatic, *no_momentum, huge, P));
  CHECK_FALSE(tr::should_spill(automatic, *topk, huge, P));
  // Far more than the machine: both go.
  CHECK(tr::should_spill(automatic, *dgc, huge, P));
  CHECK(tr::should_spill_residuals(automatic, huge, P));
}

TEST_CASE("state_fits: half the machine, and room inside a cgroup's limit") {
  const size_t d = 25'000'000; // 100 MB per worker
  const tr::MemoryLimits machine{24e9, std::nullopt};
  // Half the physical memory: 12 GB of state.
  CHECK(tr::state_fits(96.0 * d, d, machine));           // 9.6 GB of residuals
  CHECK_FALSE(tr::state_fits(2 * 96.0 * d, d, machine)); // and as many momenta
  // Under a 12 GB cgroup limit the residuals (9.6 GB) and eight buffers
  // (0.8 GB) fit in 95% of it; with the momenta they do not.
  const tr::MemoryLimits limited{64e9, 12e9};
  CHECK(tr::state_fits(96.0 * d, d, limited));
  CHECK_FALSE(tr::state_fits(2 * 96.0 * d, d, limited));
  // Under 1.5 GB, 8 workers' 0.8 GB of residuals leave too little room.
  const tr::MemoryLimits small{64e9, 1.5e9};
  CHECK_FALSE(tr::state_fits(8.0 * d, d, small));
  CHECK(tr::state_fits(4.0 * d, d, small)); // 0.4 GB + 0.8 GB < 1.425 GB
  // The lower of the two rules decides.
  CHECK_FALSE(tr::state_fits(96.0 * d, d, tr::MemoryLimits{16e9, 64e9}));
}

TEST_CASE("--memory-share: runs beside each other count on their share of the memory") {
  const tr::MemoryLimits whole = tr::memory_limits();
  const tr::MemoryLimits half = tr::memory_limits(0.5);
  CHECK(half.physical_bytes == doctest::Approx(whole.physical_bytes / 2).scale(0));
  REQUIRE(half.cgroup_bytes.has_value() == whole.cgroup_bytes.has_value());
  if (whole.cgroup_bytes)
    CHECK(*half.cgroup_bytes == doctest::Approx(*whole.cgroup_bytes / 2).scale(0));
  // The largest power-of-two gradient whose residuals still fit this
  // machine's "auto" limits: alone they stay in memory, on a quarter of the
  // memory they go to a scratch file.
  const int P = 8;
  size_t d = 1024;
  while (tr::state_fits(P * 2.0 * static_cast<double>(d), 2 * d, whole))
    d *= 2;
  CHECK_FALSE(tr::should_spill_residuals(tr::StateSpill{"auto", "/tmp", 1.0}, d, P));
  CHECK(tr::should_spill_residuals(tr::StateSpill{"auto", "/tmp", 0.25}, d, P));
}

TEST_CASE("--spill: always and never override the size, but never past the memory") {
  const auto sketched = gc::make_compressor("sketched_sgd", {{"density", 0.01}});
  const auto topk = gc::make_compressor("topk", {{"density", 0.01}});
  const tr::StateSpill always{"always", "/tmp"};
  const tr::StateSpill never{"never", "/tmp"};
  CHECK(tr::should_spill(always, *sketched, 10, 2));
  CHECK(tr::should_spill_residuals(always, 10, 2));
  CHECK_FALSE(tr::should_spill(always, *topk, 10, 2)); // keeps no momenta
  CHECK_FALSE(tr::should_spill(never, *sketched, 10, 2));
  CHECK_FALSE(tr::should_spill_residuals(never, 10, 2));
  // Past the memory and any swap (and any cgroup limit): Linux would
  // allocate it and kill the run once it is touched, so "never" says so first.
  const size_t past_memory = floats_for(1e4, 8);
  CHECK_THROWS_AS(tr::should_spill(never, *sketched, past_memory, 8), tr::StateTooLarge);
  CHECK_THROWS_WITH_AS(tr::should_spill_residuals(never, past_memory, 8),
                       doctest::Contains("--spill never keeps"), tr::StateTooLarge);
}

TEST_CASE("--scratch-dir defaults to $TMPDIR, else /tmp") {
  const char* saved = std::getenv("TMPDIR");
  const std::string previous = saved != nullptr ? saved : "";
  ::setenv("TMPDIR", "/var/somewhere", 1);
  CHECK(tr::default_scratch_dir() == "/var/somewhere");
  ::setenv("TMPDIR", "", 1);
  CHECK(tr::default_scratch_dir() == "/tmp");
  ::unsetenv("TMPDIR");
  CHECK(tr::default_scratch_dir() == "/tmp");
  if (saved != nullptr)
    ::setenv("TMPDIR", previous.c_str(), 1);
}

TEST_CASE("the budget follows a cgroup's memory limit, v1 or v2") {
  const fs::path root = fs::temp_directory_path() / ("gcsim-cgroup-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto write = [&](const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text << "\n";
  };
  write(root / "memory" / "batch" / "job" / "memory.limit_in_bytes", "12000000000");
  write(root / "unified" / "user" / "memory.max", "max");
  write(root / "app" / "memory.max", "8000000000");
  // v1 (hybrid system): the memory controller's limit.
  CHECK(tr::cgroup_memory_limit("9:cpu:/x\n5:memory:/batch/job\n0::/user\n", root) == 12e9);
  // v2: "max" is no limit; a number is.
  CHECK_FALSE(tr::cgroup_memory_limit("0::/user\n", root).has_value());
  CHECK(tr::cgroup_memory_limit("0::/app\n", root) == 8e9);
  // Both: the lower one; nothing readable: none.
  CHECK(tr::cgroup_memory_limit("5:memory:/batch/job\n0::/app\n", root) == 8e9);
  CHECK_FALSE(tr::cgroup_memory_limit("5:memory:/elsewhere\n", root).has_value());
  CHECK_FALSE(tr::cgroup_memory_limit("garbage\n", root).has_value());
  fs::remove_all(root);
}

TEST_CASE("--spill never: state past the memory and swap, or a cgroup's limit") {
  constexpr double GB = 1e9;
  tr::MemoryLimits machine;
  machine.physical_bytes = 8 * GB;
  // Past "auto"'s half, within the memory: "never" keeps it.
  CHECK_FALSE(tr::state_fits(6 * GB / 4, 1024, machine));
  CHECK_FALSE(tr::state_past_memory(6 * GB, machine));
  CHECK(tr::state_past_memory(9 * GB, machine) ==
        "--spill never keeps 9.0 GB of per-worker state in memory, more than the machine's 8.0 "
        "GB of memory and no swap");
  // Swap counts on the machine,
  machine.swap_bytes = 4 * GB;
  CHECK_FALSE(tr::state_past_memory(11 * GB, machine));
  CHECK(tr::state_past_memory(13 * GB, machine)->find("8.0 GB of memory and 4.0 GB of swap") !=
        std::string::npos);
  // not on a cgroup's limit (its share of the swap is its own setting), and
  // the smaller bound passed is the one named.
  machine.cgroup_bytes = 2 * GB;
  CHECK(tr::state_past_memory(3 * GB, machine)->find("this cgroup's 2.0 GB memory limit") !=
        std::string::npos);
  CHECK(tr::state_past_memory(20 * GB, machine)->find("this cgroup's 2.0 GB") != std::string::npos);
  machine.cgroup_bytes = 100 * GB; // above the machine's: the machine's is named
  CHECK(tr::state_past_memory(20 * GB, machine)->find("the machine's 8.0 GB") != std::string::npos);
  CHECK_FALSE(tr::state_past_memory(1 * GB, machine));
}
