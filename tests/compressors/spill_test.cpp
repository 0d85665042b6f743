// Local momentum kept in a scratch file instead of memory: the same results,
// bit for bit, and really out of memory.
#include "compressors/registry.hpp"
#include "compressors/scratch_file.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

namespace gc = gcsim::compress;
namespace fs = std::filesystem;

namespace {

// A fresh directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "gcsim-spill-test-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() { fs::remove_all(path); }
};

// Open files of this process that were created in `dir` and are unlinked.
int unlinked_files_in(const fs::path& dir) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const std::string target = fs::read_symlink(entry.path(), error).string();
    if (!error && target.rfind((dir / "gcsim-scratch-").string(), 0) == 0 &&
        target.find("(deleted)") != std::string::npos)
      ++count;
  }
  return count;
}

bool same_bits(const float* a, std::size_t na, const float* b, std::size_t nb) {
  return na == nb && std::memcmp(a, b, na * sizeof(float)) == 0;
}
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return same_bits(a.data(), a.size(), b.data(), b.size());
}
bool same_bits(const gc::ResidualView& a, const gc::ResidualView& b) {
  return same_bits(a.data(), a.size(), b.data(), b.size());
}

} // namespace

TEST_CASE("scratch file: unwritten rows read as zeros, written rows read back") {
  TempDir dir;
  gc::ScratchFile file(dir.path.string());
  CHECK(unlinked_files_in(dir.path) == 1);
  CHECK(fs::is_empty(dir.path)); // unlinked at once: nothing left behind
  std::vector<float> row(1000, 7.0f);
  file.read(4000, row.data(), row.size());
  CHECK(same_bits(row, std::vector<float>(1000, 0.0f)));
  const std::vector<float> a = gc::test::heavy_tailed(1000, 1);
  const std::vector<float> b = gc::test::heavy_tailed(1000, 2);
  file.write(4000, b.data(), b.size()); // row 1 before row 0
  file.write(0, a.data(), a.size());
  file.write(8000, a.data(), a.size());
  std::vector<float> back(1000);
  file.read(0, back.data(), back.size());
  CHECK(same_bits(back, a));
  file.read(4000, back.data(), back.size());
  CHECK(same_bits(back, b));
  file.clear();
  file.read(4000, back.data(), back.size());
  CHECK(same_bits(back, std::vector<float>(1000, 0.0f)));
}

TEST_CASE("scratch file: a directory that cannot hold one is refused, naming it") {
  TempDir dir;
  const std::string missing = (dir.path / "missing").string();
  const std::string message = missing + ": cannot create a scratch file there";
  CHECK_THROWS_WITH_AS(gc::ScratchFile::check_dir(missing), doctest::Contains(message.c_str()),
                       std::runtime_error);
  CHECK_THROWS_AS(gc::ScratchFile file(missing), gc::ScratchError);
  CHECK_NOTHROW(gc::ScratchFile::check_dir(dir.path.string()));
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("local momentum in a scratch file gives the in-memory results bit for bit") {
  // Momentum 0.9 and several iterations, so that a momentum read back wrong,
  // a clear applied late, to the wrong worker or not at all changes the
  // updates and residuals. DGC clears each worker's own selection,
  // Sketched-SGD the common top-k.
  const std::vector<std::pair<std::string, nlohmann::json>> cases{
      {"dgc", {{"density", 0.02}, {"momentum", 0.9}}},
      {"dgc", {{"density", 0.02}, {"momentum", 0.9}, {"resample", false}}},
      {"sketched_sgd", {{"density", 0.02}, {"momentum", 0.9}}},
      {"sketched_sgd", {{"density", 0.02}, {"momentum", 0.9}, {"second_round", false}}},
  };
  const std::vector<std::size_t> layers{700, 64, 1500, 10};
  for (const std::size_t P : {std::size_t{5}, std::size_t{1}})
    for (const auto& [name, params] : cases) {
      CAPTURE(P);
      CAPTURE(name);
      CAPTURE(params.dump());
      TempDir dir;
      auto in_memory = gc::make_compressor(name, params);
      auto spilled = gc::make_compressor(name, params);
      CHECK(spilled->worker_state_floats(2274) == 2274);
      spilled->spill_worker_state(dir.path.string());
      CHECK(unlinked_files_in(dir.path) == 1);
      std::vector<gc::ErrorFeedback> memory_a(P);
      std::vector<gc::ErrorFeedback> memory_b(P);
      for (std::uint64_t t = 0; t < 6; ++t) {
        CAPTURE(t);
        const gc::test::SyntheticWorkers workers(layers, P, 11, t);
        const gc::IterationContext ctx{t, P, 5};
        const gc::IterationResult a =
            in_memory->run_iteration(workers.views(), nullptr, ctx, memory_a);
        const gc::IterationResult b =
            spilled->run_iteration(workers.views(), nullptr, ctx, memory_b);
        CHECK(same_bits(a.update, b.update));
        CHECK(a.support == b.support);
        CHECK(a.info == b.info);
        for (std::size_t w = 0; w < P; ++w)
          CHECK(same_bits(memory_a[w].residual(), memory_b[w].residual()));
      }
      spilled.reset();
      CHECK(unlinked_files_in(dir.path) == 0); // the file goes with its compressor
      CHECK(fs::is_empty(dir.path));
    }
}

TEST_CASE("local momentum matters, so the bit-for-bit comparison above can fail") {
  // The same runs with momentum 0.9 and 0 must differ after a few
  // iterations; otherwise comparing spilled and in-memory momenta would prove
  // nothing.
  const std::size_t P = 5;
  const std::vector<std::size_t> layers{700, 64, 1500, 10};
  for (const std::string name : {"dgc", "sketched_sgd"}) {
    CAPTURE(name);
    auto with = gc::make_compressor(name, {{"density", 0.02}, {"momentum", 0.9}});
    auto without = gc::make_compressor(name, {{"density", 0.02}, {"momentum", 0.0}});
    CHECK(without->worker_state_floats(2274) == 0);
    std::vector<gc::ErrorFeedback> memory_a(P);
    std::vector<gc::ErrorFeedback> memory_b(P);
    bool differ = false;
    for (std::uint64_t t = 0; t < 3; ++t) {
      const gc::test::SyntheticWorkers workers(layers, P, 11, t);
      const gc::IterationContext ctx{t, P, 5};
      const gc::IterationResult a = with->run_iteration(workers.views(), nullptr, ctx, memory_a);
      const gc::IterationResult b = without->run_iteration(workers.views(), nullptr, ctx, memory_b);
      differ = differ || !same_bits(a.update, b.update);
    }
    CHECK(differ);
  }
}

TEST_CASE("scratch mapping: zeros, in an unlinked file; an impossible size is refused") {
  TempDir dir;
  {
    gc::ScratchMapping mapping(dir.path.string(), 3000);
    CHECK(mapping.size() == 3000);
    CHECK(unlinked_files_in(dir.path) == 0); // the mapping, not a descriptor, holds it
    CHECK(fs::is_empty(dir.path));
    CHECK(same_bits(mapping.data(), 3000, std::vector<float>(3000, 0.0f).data(), 3000));
    mapping.data()[2999] = 1.5f;
    CHECK(mapping.data()[2999] == 1.5f);
  }
  const std::string missing = (dir.path / "missing").string();
  CHECK_THROWS_AS(gc::ScratchMapping(missing, 10), gc::ScratchError);
  // More than any disk holds: refused up front, not a crash on first touch.
  CHECK_THROWS_WITH_AS(gc::ScratchMapping(dir.path.string(), std::size_t{1} << 60),
                       doctest::Contains("cannot reserve"), std::runtime_error);
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("error feedback in borrowed storage: the results of memories that own theirs") {
  // Every compressor, several iterations with error feedback: the residuals
  // live in one mapped scratch file (worker w's at w*d, as the simulator
  // lays them out) or in each memory's own vector; updates and residuals
  // must agree bit for bit, and the residuals must really be in the file.
  const std::size_t P = 4;
  const std::vector<std::size_t> layers{700, 64, 1500, 10};
  const std::size_t d = 2274;
  const gc::test::SyntheticWorkers weights_source(layers, 1, 99);
  const gc::WeightsView weights{weights_source.grads.front().data(), &weights_source.layout};
  const std::vector<std::pair<std::string, nlohmann::json>> cases{
      {"topk", {{"density", 0.02}}},
      {"gtopk", {{"density", 0.02}}},
      {"dgc", {{"density", 0.02}}},
      {"sketched_sgd", {{"density", 0.02}}},
      {"iwp", {{"density", 0.02}, {"warmup_iterations", 1}}},
  };
  for (const auto& [name, params] : cases) {
    CAPTURE(name);
    TempDir dir;
    gc::ScratchMapping mapping(dir.path.string(), P * d);
    auto owning = gc::make_compressor(name, params);
    auto borrowing = gc::make_compressor(name, params);
    std::vector<gc::ErrorFeedback> own(P);
    std::vector<gc::ErrorFeedback> borrowed(P);
    for (std::size_t w = 0; w < P; ++w)
      borrowed[w].use_storage(mapping.data() + w * d, d);
    for (std::uint64_t t = 0; t < 4; ++t) {
      CAPTURE(t);
      const gc::test::SyntheticWorkers workers(layers, P, 17, t);
      const gc::IterationContext ctx{t, P, 5};
      const gc::IterationResult a = owning->run_iteration(workers.views(), &weights, ctx, own);
      const gc::IterationResult b =
          borrowing->run_iteration(workers.views(), &weights, ctx, borrowed);
      CHECK(same_bits(a.update, b.update));
      CHECK(a.info == b.info);
      for (std::size_t w = 0; w < P; ++w) {
        CHECK(same_bits(own[w].residual(), borrowed[w].residual()));
        CHECK(borrowed[w].residual().data() == mapping.data() + w * d);
      }
    }
    // Not all zeros: the comparison above compared something.
    CHECK(std::any_of(mapping.data(), mapping.data() + P * d, [](float v) { return v != 0.0f; }));
    // A copy owns its values.
    const gc::ErrorFeedback copy = borrowed[1];
    CHECK(copy.residual().data() != borrowed[1].residual().data());
    CHECK(copy.residual() == borrowed[1].residual());
  }
}
