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

TEST_CASE("an XML platform's workers are its first hosts as a cluster numbers them") {
  // Twelve hosts with routes only between h-0, h-1 and h-2: three workers
  // are those three. Sorted as text, they were h-0, h-1 and h-10, which
  // have no route between them.
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("gcsim-xml-order-" + std::to_string(getpid()));
  std::filesystem::create_directories(folder);
  std::string xml = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
                    "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">"
                    "<zone id=\"w\" routing=\"Full\">\n";
  for (int h = 0; h < 12; ++h)
    xml += "<host id=\"h-" + std::to_string(h) + "\" speed=\"1Gf\"/>\n";
  xml += "<link id=\"l\" bandwidth=\"1Gbps\" latency=\"10us\"/>\n";
  for (const char* route : {"h-0\" dst=\"h-1", "h-0\" dst=\"h-2", "h-1\" dst=\"h-2"})
    xml += std::string("<route src=\"") + route + "\"><link_ctn id=\"l\"/></route>\n";
  xml += "</zone></platform>\n";
  write(folder / "twelve.xml", xml);
  gcsim::net::PlatformSpec spec;
  spec.topology = gcsim::net::Topology::simgrid_xml;
  spec.xml_file = (folder / "twelve.xml").string();
  spec.source_file = (folder / "platform.json").string();
  spec.nodes = 3;
  CHECK_NOTHROW(gcsim::net::check_xml_platform(spec));
  spec.nodes = 4; // h-3 has no route
  CHECK_THROWS_AS(gcsim::net::check_xml_platform(spec), gcsim::InputError);
  std::filesystem::remove_all(folder);
}
