#include "sim/input/atomic_write.hpp"
#include "sim/network/forked.hpp"

#include <csignal>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

using gcsim::write_all;
using gcsim::net::ChildPipe;
using gcsim::net::ForkedResult;
using gcsim::net::run_forked;

TEST_CASE("run_forked returns the child's status and what it wrote, all of it") {
  // More than a pipe holds (64 KiB): the parent must read while the child writes.
  const std::string sent(300000, 'x');
  const ForkedResult child =
      run_forked([&](int fd) { return write_all(fd, sent.data(), sent.size()) ? 7 : 1; },
                 ChildPipe::argument, sent.size());
  CHECK(child.exited(7));
  CHECK_FALSE(child.exited(0));
  CHECK(child.signal == 0);
  CHECK(child.output == sent);
}

TEST_CASE("run_forked keeps the first max_output bytes and still waits for the child") {
  const std::string sent(100000, 'y');
  const ForkedResult child =
      run_forked([&](int fd) { return write_all(fd, sent.data(), sent.size()) ? 0 : 1; },
                 ChildPipe::argument, 10);
  CHECK(child.exited(0));
  CHECK(child.output == std::string(10, 'y'));
}

TEST_CASE("run_forked names the signal that ended the child") {
  const ForkedResult child = run_forked(
      [](int) {
        std::raise(SIGTERM); // no core file, unlike an abort
        return 0;
      },
      ChildPipe::stderr_stream, 1000);
  CHECK(child.signal == SIGTERM);
  CHECK(child.exit_code == -1);
  CHECK_FALSE(child.exited(0));
}

TEST_CASE("run_forked with the pipe as stderr keeps what the child printed there, not stdout") {
  const ForkedResult child = run_forked(
      [](int fd) {
        std::printf("to stdout\n");
        std::fprintf(stderr, "dying words\n");
        return fd == -1 ? 3 : 4;
      },
      ChildPipe::stderr_stream, 1000);
  CHECK(child.exited(3));
  CHECK(child.output == "dying words\n");
}

namespace {

// What reaches this process's file descriptor 1 while `call` runs: the
// children inherit it, so it is where a child's stdout goes.
std::string parents_stdout_during(const std::function<void()>& call) {
  std::fflush(stdout);
  std::FILE* capture = std::tmpfile();
  REQUIRE(capture != nullptr);
  const int saved = dup(STDOUT_FILENO);
  REQUIRE(saved >= 0);
  dup2(fileno(capture), STDOUT_FILENO);
  call();
  std::fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  std::rewind(capture);
  std::string text;
  for (int c = std::fgetc(capture); c != EOF; c = std::fgetc(capture))
    text += static_cast<char>(c);
  std::fclose(capture);
  return text;
}

} // namespace

TEST_CASE("a child's stdout goes nowhere with the pipe as stderr, and is flushed otherwise") {
  ForkedResult streamed;
  const std::string silenced = parents_stdout_during([&] {
    streamed = run_forked(
        [](int) {
          std::printf("from a dying library\n");
          return 0;
        },
        ChildPipe::stderr_stream, 1000);
  });
  CHECK(streamed.exited(0));
  CHECK(silenced.empty());
  // With the pipe as an argument the child keeps the parent's stdout, and
  // what stdio still holds there when the work returns is written.
  ForkedResult kept;
  const std::string printed = parents_stdout_during([&] {
    kept = run_forked(
        [](int) {
          std::printf("buffered, never flushed by the work");
          return 0;
        },
        ChildPipe::argument, 1000);
  });
  CHECK(kept.exited(0));
  CHECK(printed == "buffered, never flushed by the work");
}

TEST_CASE("an exception out of the child's work ends it with status 70, not in the parent") {
  const ForkedResult child = run_forked(
      [](int) -> int { throw std::runtime_error("in the child"); }, ChildPipe::argument, 1000);
  CHECK(child.exited(70));
  CHECK(child.output.empty());
}

TEST_CASE("run_forked does not repeat the parent's buffered output in the child") {
  // A line still in stdio's buffer at fork would be written by both processes.
  std::vector<char> buffer(4096);
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  std::setvbuf(file, buffer.data(), _IOFBF, buffer.size());
  std::fputs("once\n", file);
  const ForkedResult child = run_forked([](int) { return 0; }, ChildPipe::argument, 10);
  CHECK(child.exited(0));
  std::rewind(file);
  char line[64] = {};
  std::string text;
  while (std::fgets(line, sizeof line, file) != nullptr)
    text += line;
  CHECK(text == "once\n");
  std::fclose(file);
}
