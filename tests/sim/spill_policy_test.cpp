// When gcsim run spills per-worker state to scratch files (--spill).
#include "compressors/registry.hpp"
#include "sim/training/compression.hpp"

#include <cstdlib>
#include <string>
#include <unistd.h>

#include <doctest/doctest.h>

namespace gc = gcsim::compress;
namespace tr = gcsim::training;

namespace {

double physical_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

// Floats per worker so that P workers' residuals take `share` of the physical memory.
size_t floats_for(double share, int workers) {
  return static_cast<size_t>(share * physical_bytes() / (4.0 * workers));
}

} // namespace

TEST_CASE("--spill: auto spills the momenta first, then the residuals, at half the memory") {
  REQUIRE(physical_bytes() > 0);
  const auto dgc = gc::make_compressor("dgc", {{"density", 0.01}});
  const auto no_momentum = gc::make_compressor("dgc", {{"density", 0.01}, {"momentum", 0.0}});
  const auto topk = gc::make_compressor("topk", {{"density", 0.01}});
  const tr::StateSpill automatic{"auto", "/tmp"};
  const int P = 8;
  // Small: everything in memory.
  CHECK_FALSE(tr::should_spill(automatic, *dgc, 1000, P));
  CHECK_FALSE(tr::should_spill_residuals(automatic, 1000, P));
  // Residuals 30% of the memory, with the momenta 60%: the momenta go.
  const size_t middle = floats_for(0.3, P);
  CHECK(tr::should_spill(automatic, *dgc, middle, P));
  CHECK_FALSE(tr::should_spill_residuals(automatic, middle, P));
  CHECK_FALSE(tr::should_spill(automatic, *no_momentum, middle, P)); // nothing to spill
  CHECK_FALSE(tr::should_spill(automatic, *topk, middle, P));
  // Residuals alone 60%: they go too.
  const size_t large = floats_for(0.6, P);
  CHECK(tr::should_spill(automatic, *dgc, large, P));
  CHECK(tr::should_spill_residuals(automatic, large, P));
  CHECK_FALSE(tr::should_spill(automatic, *topk, large, P));
  // The threshold depends on P as much as on d.
  CHECK_FALSE(tr::should_spill_residuals(automatic, large, 1));
}

TEST_CASE("--spill: always and never override the size") {
  const auto sketched = gc::make_compressor("sketched_sgd", {{"density", 0.01}});
  const auto topk = gc::make_compressor("topk", {{"density", 0.01}});
  const tr::StateSpill always{"always", "/tmp"};
  const tr::StateSpill never{"never", "/tmp"};
  CHECK(tr::should_spill(always, *sketched, 10, 2));
  CHECK(tr::should_spill_residuals(always, 10, 2));
  CHECK_FALSE(tr::should_spill(always, *topk, 10, 2)); // keeps no momenta
  const size_t large = floats_for(0.6, 8);
  CHECK_FALSE(tr::should_spill(never, *sketched, large, 8));
  CHECK_FALSE(tr::should_spill_residuals(never, large, 8));
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
