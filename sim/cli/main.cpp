// gcsim: a discrete-event cluster simulator for gradient compression.

#include "compressors/scratch_file.hpp"
#include "gcsim_commit.hpp"
#include "sim/cli/command.hpp"
#include "sim/input/atomic_write.hpp"
#include "sim/input/input_error.hpp"
#include "sim/sweep/process.hpp"
#include "sim/training/state_spill.hpp"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <string>
#include <system_error>

#include <CLI/CLI.hpp>

namespace gcsim::cli {
namespace {
std::vector<CommandFactory>& factories() {
  static std::vector<CommandFactory> list;
  return list;
}
// The length of the well-formed UTF-8 sequence at line[at] (a lead byte
// and its continuation bytes, no overlong form, no surrogate), or 0.
size_t utf8_sequence(const std::string& line, size_t at) {
  const auto byte = [&line](size_t i) { return static_cast<unsigned char>(line[i]); };
  const unsigned char lead = byte(at);
  const size_t length = lead >= 0xF0 && lead <= 0xF4   ? 4
                        : lead >= 0xE0 && lead <= 0xEF ? 3
                        : lead >= 0xC2 && lead <= 0xDF ? 2
                                                       : 0;
  if (length == 0 || at + length > line.size())
    return 0;
  for (size_t i = 1; i < length; ++i)
    if ((byte(at + i) & 0xC0) != 0x80)
      return 0;
  const unsigned char second = byte(at + 1);
  if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second > 0x9F) ||
      (lead == 0xF0 && second < 0x90) || (lead == 0xF4 && second > 0x8F))
    return 0;
  return length;
}

// Writes `line` and a line break to stderr with its control characters
// written out ("\\n" for a line break): one given in a value (--set
// 'name=a<newline>b', a key of a sweep's grid, an --out path) split the
// error's one line in two. Bytes that are no UTF-8 (a byte-order mark cut
// short, a file name in another encoding) are written as \xNN too.
void print_error_line(const std::string& line) {
  static const char kHex[] = "0123456789abcdef";
  std::string written;
  written.reserve(line.size() + 1);
  for (size_t at = 0; at < line.size(); ++at) {
    const char c = line[at];
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      written += "\\n";
    } else if (c == '\r') {
      written += "\\r";
    } else if (byte >= 0x80) {
      if (const size_t length = utf8_sequence(line, at); length > 0) {
        written.append(line, at, length);
        at += length - 1;
      } else {
        written += std::string("\\x") + kHex[byte >> 4] + kHex[byte & 15];
      }
    } else if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
      written += std::string("\\x") + kHex[byte >> 4] + kHex[byte & 15];
    } else {
      written += c;
    }
  }
  // A line stays a line a reader can take in: a 50 MB key or path echoed
  // whole is not. Its start names the file and field, its end the reason;
  // the cut falls between characters.
  constexpr size_t kHead = 3000;
  constexpr size_t kTail = 1000;
  if (written.size() > kHead + kTail + 100) {
    const auto continuation = [&written](size_t i) {
      return (static_cast<unsigned char>(written[i]) & 0xC0) == 0x80;
    };
    size_t head = kHead;
    while (continuation(head))
      --head;
    size_t tail = written.size() - kTail;
    while (continuation(tail))
      ++tail;
    written = written.substr(0, head) + " [... " + std::to_string(tail - head) +
              " bytes cut ...] " + written.substr(tail);
  }
  written += '\n';
  std::fputs(written.c_str(), stderr);
}

} // namespace

CommandRegistration::CommandRegistration(CommandFactory factory) {
  factories().push_back(std::move(factory));
}

std::string nonempty_path(const std::string& value) {
  return value.empty() ? "empty: name a file or folder" : "";
}

CLI::Validator integer_in(long lowest, long highest) {
  return CLI::Validator(
      [lowest, highest](std::string& value) -> std::string {
        long number = 0;
        const char* end = value.data() + value.size();
        const auto [stop, error] = std::from_chars(value.data(), end, number);
        if (error == std::errc() && stop == end && number >= lowest && number <= highest) {
          // Handed on as read: CLI11's own conversion reads "050" as octal.
          value = std::to_string(number);
          return "";
        }
        return "expected an integer in [" + std::to_string(lowest) + ", " +
               std::to_string(highest) + "], got '" + value + "'";
      },
      "INT in [" + std::to_string(lowest) + " - " + std::to_string(highest) + "]");
}

std::vector<CommandFactory> registered_commands() {
  return factories();
}

namespace {

// A command's report lost on the way out (stdout onto a full disk) was a
// success: exit 1 instead, as for any file gcsim cannot write.
int with_stdout_written(int status) {
  if (std::fflush(stdout) == 0 && std::ferror(stdout) == 0)
    return status;
  std::fprintf(stderr, "gcsim: cannot write the standard output: %s\n", std::strerror(errno));
  return status == 0 ? 1 : status;
}

} // namespace

} // namespace gcsim::cli

int main(int argc, char** argv) {
  using namespace gcsim::cli;
  CLI::App app{"gcsim " GCSIM_VERSION
               " - discrete-event cluster simulator for gradient compression in data-parallel "
               "training (SimGrid network model, real compressors on real gradient traces)",
               "gcsim"};
  app.set_version_flag("--version", "gcsim " GCSIM_VERSION " (commit " GCSIM_COMMIT ")");
  app.require_subcommand(1);
  // Bad input is one line (CLI11's own adds "Run with --help..." as a
  // second); subcommands made after this inherit it.
  // Every line names the command it is about: `gcsim run: ...`.
  app.failure_message([](const CLI::App* failed, const CLI::Error& error) {
    // The deepest command parsed: `gcsim profile show`.
    const CLI::App* command = failed;
    std::string who = "gcsim";
    while (!command->get_subcommands().empty()) {
      command = command->get_subcommands().back();
      who += " " + command->get_name();
    }
    // CLI11 lists unexpected arguments last first ("a=b --set" for
    // `--set a=b`), and without saying which command did not expect them.
    if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
      std::vector<std::string> extras = failed->remaining(true);
      std::string listed;
      for (const std::string& word : extras)
        listed += (listed.empty() ? "" : " ") + word;
      const bool option = !extras.empty() && extras.front().rfind("-", 0) == 0;
      return who + ": " +
             (option ? "unknown option " + extras.front()
                     : std::string(extras.size() == 1 ? "unexpected argument"
                                                      : "unexpected arguments")) +
             " (given: " + listed + "; see " + who + " --help)\n";
    }
    // CLI11 says only "A subcommand is required" for `gcsim profile frob`.
    const std::vector<const CLI::App*> subcommands =
        command->get_subcommands([](const CLI::App*) { return true; });
    if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr && command != failed &&
        !subcommands.empty() && command->get_subcommands().empty()) {
      std::string names;
      for (const CLI::App* sub : subcommands)
        names += (names.empty() ? "" : ", ") + sub->get_name();
      const std::vector<std::string> words = failed->remaining(true);
      const std::string what = words.empty() ? "no subcommand given"
                               : words.front().rfind("-", 0) == 0
                                   ? "unknown option " + words.front() + " before a subcommand"
                                   : "unknown subcommand '" + words.front() + "'";
      return who + ": " + what + " (subcommands: " + names + "; see " + who + " --help)\n";
    }
    // A file named like an option (`gcsim run -dash.json`) is taken for one,
    // and CLI11 says only that the scenario is required.
    if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
      for (const std::string& word : failed->remaining(true))
        if (word.size() > 1 && word[0] == '-')
          return who + ": " + error.what() + "; " + word + " is no option of " + who +
                 " (a file whose name starts with '-' is given as ./" + word +
                 " or after --; see " + who + " --help)\n";
    }
    // CLI11's "--seed: At Most 1 required but received 2".
    std::string what = error.what();
    if (const size_t at = what.find(": At Most 1 required but received ");
        at != std::string::npos && dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr)
      what = what.substr(0, at) + ": given more than once; give it once";
    return who + ": " + what + " (see " + who + " --help)\n";
  });

  std::vector<std::unique_ptr<Command>> commands;
  for (const CommandFactory& factory : registered_commands())
    commands.push_back(factory());
  std::sort(commands.begin(), commands.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  std::map<CLI::App*, Command*> by_subcommand;
  for (auto& command : commands) {
    CLI::App* subcommand = app.add_subcommand(command->name(), command->description());
    command->configure(*subcommand);
    by_subcommand[subcommand] = command.get();
  }

  // CLI11 says only "A subcommand is required" for a misspelt command, for
  // none at all and for an unknown option before it.
  std::string known;
  for (const auto& command : commands)
    known += (known.empty() ? "" : ", ") + command->name();
  const std::string first = argc > 1 ? argv[1] : "";
  const bool top_level_flag = first == "-h" || first == "--help" || first == "--version";
  if (first.empty()) {
    std::fprintf(stderr, "gcsim: no command given (commands: %s; see --help)\n", known.c_str());
    return 2;
  }
  if (first[0] == '-' && !top_level_flag) {
    print_error_line("gcsim: unknown option '" + first + "' before the command (commands: " +
                     known + "; an option goes after its command; see --help)");
    return 2;
  }
  if (first[0] != '-' && std::none_of(commands.begin(), commands.end(), [&](const auto& command) {
        return command->name() == first;
      })) {
    print_error_line("gcsim: unknown command '" + first + "' (commands: " + known +
                     "; see --help)");
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // CLI11 uses exit code 0 for --help/--version; any other parse error is
    // bad input (2).
    int code = app.exit(error);
    return code == 0 ? 0 : 2;
  }

  Command* parsed = nullptr;
  for (const auto& [subcommand, command] : by_subcommand)
    if (subcommand->parsed())
      parsed = command;
  if (parsed == nullptr) {
    // Not reached: the first argument was checked to be a command, and
    // parse() ran it. Should that change, a line rather than silence.
    assert(false && "the first argument was checked to be a command, and parse() ran it");
    std::fprintf(stderr, "gcsim: no command ran; see gcsim --help\n");
    return 2;
  }
  try {
    return with_stdout_written(parsed->run());
  } catch (const gcsim::sweep::StoppedBySignal& stopped) {
    // Its jobs stopped and its cleanup done, the command ends by the signal.
    std::fflush(nullptr);
    std::signal(stopped.signal, SIG_DFL);
    std::raise(stopped.signal);
    return 128 + stopped.signal; // only if the signal is blocked
  } catch (const gcsim::InputError& error) {
    print_error_line(error.what());
    return 2;
  } catch (const gcsim::WriteError& error) {
    // Not the input's fault (a full disk, a read-only folder): exit 1.
    print_error_line(std::string("gcsim: ") + error.what());
    return 1;
  } catch (const std::bad_alloc& error) {
    // The machine's (or the cgroup's, or ulimit -v's) fault, not gcsim's.
    // What the command that ran out can do about it. --spill never's
    // refusal says how much, against what.
    const auto* too_large = dynamic_cast<const gcsim::training::StateTooLarge*>(&error);
    const std::string advice = parsed->out_of_memory_advice();
    print_error_line(
        std::string("gcsim: out of memory: ") +
        (too_large ? too_large->what() : "this run needs more than the process may take") +
        (advice.empty() ? "" : " (" + advice + ")"));
    return 1;
  } catch (const gcsim::compress::ScratchError& error) {
    // Per-worker state spilled to a folder that cannot take it: the disk's
    // fault, and where the files go; out of room, what helps.
    print_error_line(std::string("gcsim: ") + error.what() +
                     " (scratch files go to --scratch-dir, default $TMPDIR or /tmp" +
                     (error.out_of_room() ? ": name a folder with room; fewer workers or a "
                                            "smaller model need less)"
                                          : ")"));
    return 1;
  } catch (const std::exception& error) {
    print_error_line(std::string("gcsim: internal error: ") + error.what());
    return 1;
  }
}
