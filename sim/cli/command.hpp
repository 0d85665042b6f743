#pragma once
// A gcsim subcommand. Each command lives in its own sim/cli/<name>_command.cpp
// and registers itself with a static CommandRegistration, so adding a command
// never touches main.cpp. The files are compiled into the executable itself
// (not a static library), which keeps the static registrations alive.

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
class Validator;
} // namespace CLI

namespace gcsim::cli {

class Command {
public:
  virtual ~Command() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  /// Declares options and positionals on the subcommand.
  virtual void configure(CLI::App& subcommand) = 0;
  /// Runs after parsing. Returns the exit status; bad input is reported by
  /// throwing gcsim::InputError (exit 2), never by calling exit().
  virtual int run() = 0;
  /// What a user can do when run() runs out of memory, said after
  /// "gcsim: out of memory: ..."; empty: nothing to add.
  virtual std::string out_of_memory_advice() const { return ""; }
};

/// out_of_memory_advice() of the commands that simulate training.
inline constexpr const char* kSimulationMemoryAdvice =
    "fewer workers or a smaller model need less; gcsim run --spill always keeps per-worker "
    "state in a scratch file";

using CommandFactory = std::function<std::unique_ptr<Command>()>;

/// Every registered factory, sorted by command name.
std::vector<CommandFactory> registered_commands();

struct CommandRegistration {
  explicit CommandRegistration(CommandFactory factory);
};

/// A CLI11 check for an option that names a file or folder: an empty one
/// (--out "") would silently mean the default, or nothing written.
std::string nonempty_path(const std::string& value);

/// A CLI11 transform for an integer option in [lowest, highest], read in
/// decimal ("050" is 50) and handed on as its plain digits. CLI::Range said
/// "Value abc not in range" of a word that is no number at all.
CLI::Validator integer_in(long lowest, long highest);

} // namespace gcsim::cli
