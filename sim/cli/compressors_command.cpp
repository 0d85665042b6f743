// `gcsim compressors [NAME] [--markdown]`: the compressors a scenario can
// name, and each one's parameters with their defaults and accepted values,
// from the registry itself, so that what it prints is what `gcsim run`
// accepts. compressors/README.md's parameter tables are its --markdown.

#include "compressors/params.hpp"
#include "compressors/registry.hpp"
#include "sim/cli/command.hpp"
#include "sim/input/input_error.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace gcsim::cli {
namespace {

using compress::CompressorInfo;
using compress::ParamSpec;

// "a, b, c", each between `quote`s.
std::string joined(const std::vector<std::string>& words, const std::string& quote) {
  std::string list;
  for (const std::string& word : words)
    list += (list.empty() ? "" : ", ") + quote + word + quote;
  return list;
}

// A table cell's text: a '|' would end the cell.
std::string cell(const std::string& text) {
  std::string escaped;
  for (char c : text)
    escaped += c == '|' ? std::string("\\|") : std::string(1, c);
  return escaped;
}

// One compressor's section of compressors/README.md.
std::string markdown(const CompressorInfo& info) {
  std::string text =
      "#### `" + info.name + "`\n\n" + info.summary + ".\n\nSource: " + info.source + ".\n\n";
  if (info.params.empty())
    return text + "No parameters.\n";
  text += "| parameter | default | meaning |\n|---|---|---|\n";
  for (const ParamSpec& spec : info.params) {
    std::string meaning = spec.description;
    if (spec.type == ParamSpec::Type::choice)
      meaning += " (one of " + joined(spec.choices, "`") + ")";
    text +=
        "| `" + spec.name + "` | `" + spec.default_value.dump() + "` | " + cell(meaning) + " |\n";
  }
  return text;
}

// One compressor for a terminal: what it does, where from, and each
// parameter's default and accepted values.
std::string described(const CompressorInfo& info) {
  std::string text = info.name + ": " + info.summary + "\n  source: " + info.source + "\n";
  if (info.params.empty())
    return text + "  no parameters\n";
  size_t width = 0;
  for (const ParamSpec& spec : info.params)
    width = std::max(width, spec.name.size() + 3 + spec.default_value.dump().size());
  text += "  parameters (default; accepted values: meaning):\n";
  for (const ParamSpec& spec : info.params) {
    const std::string setting = spec.name + " = " + spec.default_value.dump();
    text += "    " + setting + std::string(width - setting.size() + 2, ' ') +
            compress::accepted_text(spec) + ": " + spec.description + "\n";
  }
  return text;
}

class CompressorsCommand final : public Command {
public:
  std::string name() const override { return "compressors"; }
  std::string description() const override {
    return "List the compressors a scenario can name, or one compressor's parameters with their "
           "defaults and accepted values";
  }
  void configure(CLI::App& app) override {
    app.add_option("name", name_, "A compressor: its parameters (default: list them all)");
    app.add_flag("--markdown", markdown_,
                 "Print the parameter tables of compressors/README.md (all, or NAME's)");
  }
  int run() override {
    std::vector<CompressorInfo> chosen;
    try {
      chosen = name_.empty() ? compress::list_compressors()
                             : std::vector<CompressorInfo>{compress::compressor_info(name_)};
    } catch (const compress::ParameterError& error) {
      throw InputError("gcsim compressors", "", error.what());
    }
    std::string text;
    for (const CompressorInfo& info : chosen) {
      if (markdown_)
        text += (text.empty() ? "" : "\n") + markdown(info);
      else if (name_.empty())
        text += info.name + std::string(14 - std::min<size_t>(info.name.size(), 13), ' ') +
                info.summary + "\n";
      else
        text += described(info);
    }
    if (name_.empty() && !markdown_)
      text += "\ngcsim compressors NAME: its parameters; a scenario names one as "
              "\"compressor\": {\"name\": NAME, PARAMETER: VALUE, ...}\n";
    std::fputs(text.c_str(), stdout);
    return 0;
  }

private:
  std::string name_;
  bool markdown_ = false;
};

const CommandRegistration registration{[] { return std::make_unique<CompressorsCommand>(); }};

} // namespace
} // namespace gcsim::cli
