// Result files are written whole or not at all: a failed write (here a full
// "disk", by a file-size limit) leaves neither half a file nor a .partial
// behind, any earlier file stays as it was, and no file already there under
// a partial file's name is touched; a signal that ends the process midway
// removes the partial file first.

#include "sim/input/atomic_write.hpp"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <doctest/doctest.h>

namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& file) {
  std::ifstream stream(file);
  std::stringstream text;
  text << stream.rdbuf();
  return text.str();
}

// The partial files left in `file`'s folder (`file.partial...`).
int partial_files(const fs::path& file) {
  int count = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(file.parent_path()))
    count += entry.path().filename().string().rfind(file.filename().string() + ".partial", 0) == 0;
  return count;
}

fs::path fresh_folder() {
  const fs::path folder =
      fs::temp_directory_path() / ("gcsim-atomic-write-" + std::to_string(::getpid()));
  fs::remove_all(folder);
  return folder;
}

} // namespace

TEST_CASE("a write creates the folders and leaves no partial file") {
  const fs::path folder = fresh_folder();
  const fs::path file = folder / "a" / "b" / "result.json";
  gcsim::write_file_atomically(file, "{}\n");
  CHECK(read(file) == "{}\n");
  gcsim::write_file_atomically(file, "{\"x\": 1}\n");
  CHECK(read(file) == "{\"x\": 1}\n");
  CHECK(partial_files(file) == 0);
  fs::remove_all(folder);
}

TEST_CASE("a name as long as the file system allows is written, its partial file named short") {
  // FILE.partial.PID.N would pass the limit: a 255-byte name was refused.
  const fs::path folder = fresh_folder();
  fs::create_directories(folder);
  const long limit = ::pathconf(folder.c_str(), _PC_NAME_MAX);
  const fs::path file = folder / std::string(limit > 0 ? limit : 255, 'n');
  gcsim::write_file_atomically(file, "{}\n");
  CHECK(read(file) == "{}\n");
  gcsim::check_writable(file);
  CHECK(std::distance(fs::directory_iterator(folder), fs::directory_iterator()) == 1);
  CHECK_THROWS_AS(gcsim::write_file_atomically(folder / (file.filename().string() + "n"), "{}"),
                  gcsim::WriteError);
  fs::remove_all(folder);
}

TEST_CASE("a file or a link under a partial file's name is left alone") {
  const fs::path folder = fresh_folder();
  const fs::path file = folder / "result.json";
  fs::create_directories(folder);
  // A user's file under the name the partial file once had: it was
  // truncated, written and renamed away.
  std::ofstream(file.string() + ".partial") << "mine\n";
  // Links under every name this process's next partial files could take:
  // writing through one would change the victim.
  const fs::path victim = folder / "victim.txt";
  std::ofstream(victim) << "victim\n";
  for (int n = 0; n < 100; ++n)
    fs::create_symlink(victim, file.string() + ".partial." + std::to_string(::getpid()) + "." +
                                   std::to_string(n));
  gcsim::check_writable(file);
  gcsim::write_file_atomically(file, "{}\n");
  CHECK(read(file) == "{}\n");
  CHECK(read(file.string() + ".partial") == "mine\n");
  CHECK(read(victim) == "victim\n");
  CHECK(partial_files(file) == 101);
  fs::remove_all(folder);
}

TEST_CASE("a link is written through, as open() writes: it stays, its file changes") {
  // As the scripts' atomic_write.py does; the rename replaced the link by a
  // file and left the file it pointed to as it was.
  const fs::path folder = fresh_folder();
  fs::create_directories(folder / "results");
  std::ofstream(folder / "results" / "timeline.json") << "old\n";
  const fs::path link = folder / "timeline.json";
  fs::create_symlink(fs::path("results") / "timeline.json", link);
  fs::create_symlink("timeline.json", folder / "link-to-link.json");
  gcsim::check_writable(folder / "link-to-link.json");
  gcsim::write_file_atomically(folder / "link-to-link.json", "new\n");
  CHECK(fs::is_symlink(link));
  CHECK(fs::is_symlink(folder / "link-to-link.json"));
  CHECK(read(folder / "results" / "timeline.json") == "new\n");
  CHECK(partial_files(folder / "results" / "timeline.json") == 0);
  CHECK(partial_files(link) == 0);
  // A link to a file not there yet makes it.
  fs::create_symlink(fs::path("results") / "new.json", folder / "dangling.json");
  gcsim::write_file_atomically(folder / "dangling.json", "made\n");
  CHECK(fs::is_symlink(folder / "dangling.json"));
  CHECK(read(folder / "results" / "new.json") == "made\n");
  // A folder that is a link to nowhere is said to be one (create_directories
  // says "File exists").
  fs::create_symlink("nowhere", folder / "gone");
  CHECK_THROWS_WITH_AS(gcsim::write_file_atomically(folder / "gone" / "result.json", "x\n"),
                       doctest::Contains("gone is a link to nowhere, which does not exist"),
                       gcsim::WriteError);
  // A loop of links is one error, not a hang.
  fs::create_symlink("loop-b.json", folder / "loop-a.json");
  fs::create_symlink("loop-a.json", folder / "loop-b.json");
  CHECK_THROWS_AS(gcsim::write_file_atomically(folder / "loop-a.json", "x\n"), gcsim::WriteError);
  fs::remove_all(folder);
}

TEST_CASE("a failed write throws WriteError and keeps the earlier file") {
  const fs::path folder = fresh_folder();
  const fs::path file = folder / "result.json";
  gcsim::write_file_atomically(file, "earlier\n");

  SUBCASE("the disk fills up midway") {
    // RLIMIT_FSIZE makes writes past 4 KiB fail as a full disk would (EFBIG;
    // SIGXFSZ ignored so that the process sees the error, not the signal).
    rlimit before{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
    const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = before;
    small.rlim_cur = 4096;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    bool thrown = false;
    try {
      gcsim::write_file_atomically(file, std::string(1 << 20, 'x'));
    } catch (const gcsim::WriteError& error) {
      thrown = std::string(error.what()).find(file.string()) != std::string::npos;
    }
    ::setrlimit(RLIMIT_FSIZE, &before);
    std::signal(SIGXFSZ, previous_handler);
    CHECK_MESSAGE(thrown, "a WriteError naming the file");
  }
  SUBCASE("the folder cannot be made") {
    const fs::path under_a_file = file / "inner.json";
    CHECK_THROWS_AS(gcsim::check_writable(under_a_file), gcsim::WriteError);
    CHECK_THROWS_AS(gcsim::write_file_atomically(under_a_file, "x"), gcsim::WriteError);
  }
  SUBCASE("a folder made before the failure goes again") {
    // The first folder can be made, the second's name is too long.
    const fs::path too_long = folder / "new" / std::string(300, 'x') / "result.json";
    CHECK_THROWS_AS(gcsim::check_writable(too_long), gcsim::WriteError);
    CHECK_FALSE(fs::exists(folder / "new"));
    CHECK_THROWS_AS(gcsim::write_file_atomically(too_long, "x"), gcsim::WriteError);
    CHECK_FALSE(fs::exists(folder / "new"));
  }
  SUBCASE("a folder where the file goes") {
    // The partial file beside it can be made; only the rename would fail.
    CHECK_THROWS_WITH_AS(gcsim::check_writable(folder), doctest::Contains("Is a directory"),
                         gcsim::WriteError);
  }
  SUBCASE("a writable place passes the check and is left as it was") {
    CHECK_NOTHROW(gcsim::check_writable(file));
    CHECK_NOTHROW(gcsim::check_writable(folder / "new" / "other.json"));
    CHECK_FALSE(fs::exists(folder / "new" / "other.json"));
  }
  CHECK(read(file) == "earlier\n");
  CHECK(partial_files(file) == 0);
  fs::remove_all(folder);
}

TEST_CASE("files written together: a failure leaves every earlier file, a success none") {
  const fs::path folder = fresh_folder();
  const fs::path result = folder / "result.json";
  const fs::path schedule = folder / "schedule.json";
  const fs::path stale = folder / "timeline.json";
  for (const fs::path& file : {result, schedule, stale})
    gcsim::write_file_atomically(file, "earlier\n");
  // The first is written whole beside its place, the second cannot be (its
  // folder would be under a file): neither is renamed, nothing is removed.
  CHECK_THROWS_AS(gcsim::write_files_atomically(
                      {{schedule, "new\n"}, {result / "inner.json", "new\n"}}, {stale}),
                  gcsim::WriteError);
  CHECK(read(schedule) == "earlier\n");
  CHECK(read(stale) == "earlier\n");
  CHECK(partial_files(schedule) == 0);
  gcsim::write_files_atomically({{schedule, "new\n"}, {result, "new\n"}}, {stale});
  CHECK(read(schedule) == "new\n");
  CHECK(read(result) == "new\n");
  CHECK_FALSE(fs::exists(stale));
  CHECK(partial_files(result) == 0);
  fs::remove_all(folder);
}

TEST_CASE("a signal ending the process during a write removes the partial file first") {
  const fs::path folder = fresh_folder();
  fs::create_directories(folder);
  const fs::path file = folder / "timeline.json";
  // A child writes; a second thread of it sends the signal as soon as the
  // partial file appears, to the writing thread (the second blocks it), as
  // in gcsim, which writes its outputs with one thread running. A write
  // that finishes first is tried again, larger.
  int signalled = 0;
  for (std::size_t size = std::size_t{64} << 20; signalled == 0 && size <= std::size_t{512} << 20;
       size *= 2) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      std::signal(SIGTERM, SIG_DFL); // doctest handles it in its own process
      try {                          // no exception may reach doctest in the child
        const std::string text(size, 'x');
        std::thread([&file] {
          sigset_t term;
          sigemptyset(&term);
          sigaddset(&term, SIGTERM);
          ::pthread_sigmask(SIG_BLOCK, &term, nullptr);
          try {
            while (partial_files(file) == 0) {
            }
          } catch (...) {
            ::_exit(3);
          }
          ::kill(::getpid(), SIGTERM);
        }).detach();
        gcsim::write_file_atomically(file, text);
      } catch (...) {
        ::_exit(2);
      }
      ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    if (WIFSIGNALED(status)) {
      ++signalled;
      CHECK_MESSAGE(WTERMSIG(status) == SIGTERM, "the process ends by the signal");
      CHECK(partial_files(file) == 0);
      CHECK_FALSE(fs::exists(file));
    } else {
      REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "the child wrote");
      fs::remove(file);
    }
  }
  CHECK_MESSAGE(signalled == 1, "no write was still under way when its signal came");
  fs::remove_all(folder);
}

TEST_CASE("the folders a check made go again unless kept, and only those") {
  const fs::path folder = fresh_folder();
  fs::create_directories(folder / "there");
  SUBCASE("not kept: the folders it made go, the one that was there stays") {
    {
      gcsim::MadeFolders made;
      gcsim::check_writable(folder / "there" / "a" / "b" / "result.json", &made);
      gcsim::check_writable(folder / "there" / "c" / "timeline.json", &made);
      CHECK(fs::is_directory(folder / "there" / "a" / "b"));
      CHECK(fs::is_directory(folder / "there" / "c"));
    }
    CHECK_FALSE(fs::exists(folder / "there" / "a"));
    CHECK_FALSE(fs::exists(folder / "there" / "c"));
    CHECK(fs::is_directory(folder / "there"));
  }
  SUBCASE("kept: they stay") {
    {
      gcsim::MadeFolders made;
      gcsim::check_writable(folder / "there" / "a" / "result.json", &made);
      made.keep();
    }
    CHECK(fs::is_directory(folder / "there" / "a"));
  }
  SUBCASE("a folder that is no longer empty stays") {
    {
      gcsim::MadeFolders made;
      gcsim::check_writable(folder / "there" / "a" / "b" / "result.json", &made);
      gcsim::write_file_atomically(folder / "there" / "a" / "schedule.json", "{}\n");
    }
    CHECK_FALSE(fs::exists(folder / "there" / "a" / "b"));
    CHECK(read(folder / "there" / "a" / "schedule.json") == "{}\n");
  }
  fs::remove_all(folder);
}
