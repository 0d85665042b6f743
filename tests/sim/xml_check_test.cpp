// check_xml_platform loads a platform in a child process once per file,
// worker count and network model: a sweep's parent reads every point's
// scenario, and loading the same file again for each would repeat the work.

#include "sim/input/input_error.hpp"
#include "sim/network/platform.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <doctest/doctest.h>

namespace {

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

const char* const kFourHosts =
    "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
    "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">\n"
    "<cluster id=\"c\" prefix=\"n-\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"10Gbps\" "
    "lat=\"10us\"/>\n</zone></platform>\n";

} // namespace

TEST_CASE("an XML platform that passed is not loaded again; another worker count is") {
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("gcsim-xml-check-" + std::to_string(getpid()));
  std::filesystem::create_directories(folder);
  const std::filesystem::path xml = folder / "four.xml";
  write(xml, kFourHosts);
  gcsim::net::PlatformSpec spec;
  spec.topology = gcsim::net::Topology::simgrid_xml;
  spec.xml_file = xml.string();
  spec.source_file = (folder / "platform.json").string();
  spec.nodes = 4;
  CHECK_NOTHROW(gcsim::net::check_xml_platform(spec));

  // The file is broken now: only a check that loads it again can tell.
  write(xml, "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">\n");
  CHECK_NOTHROW(gcsim::net::check_xml_platform(spec));
  spec.nodes = 3;
  CHECK_THROWS_AS(gcsim::net::check_xml_platform(spec), gcsim::InputError);
  spec.nodes = 4;
  spec.network.bandwidth_factor = 0.5;
  CHECK_THROWS_AS(gcsim::net::check_xml_platform(spec), gcsim::InputError);
  std::filesystem::remove_all(folder);
}
