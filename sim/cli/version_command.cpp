// `gcsim version`: the versions of gcsim (and the commit it was built from)
// and of the SimGrid it links.

#include "gcsim_commit.hpp"
#include "sim/cli/command.hpp"

#include <cstdio>
#include <xbt/base.h> // defines the macros simgrid/version.h uses

#include <CLI/CLI.hpp>
#include <simgrid/version.h>

namespace gcsim::cli {
namespace {

class VersionCommand final : public Command {
public:
  std::string name() const override { return "version"; }
  std::string description() const override {
    return "Print the versions of gcsim (and the commit it was built from) and of the SimGrid "
           "library it uses";
  }
  void configure(CLI::App&) override {}
  int run() override {
    // The library loaded now, which a Debian upgrade can move past the
    // headers gcsim was built with: said when it has.
    int major = 0, minor = 0, patch = 0;
    sg_version_get(&major, &minor, &patch);
    std::printf("gcsim %s (commit %s)\nSimGrid %d.%d.%d", GCSIM_VERSION, GCSIM_COMMIT, major, minor,
                patch);
    if (major != SIMGRID_VERSION_MAJOR || minor != SIMGRID_VERSION_MINOR ||
        patch != SIMGRID_VERSION_PATCH)
      std::printf(" (built against %d.%d.%d)", SIMGRID_VERSION_MAJOR, SIMGRID_VERSION_MINOR,
                  SIMGRID_VERSION_PATCH);
    std::printf("\n");
    return 0;
  }
};

const CommandRegistration registration{[] { return std::make_unique<VersionCommand>(); }};

} // namespace
} // namespace gcsim::cli
