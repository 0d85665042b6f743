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

// A fresh folder of this test's own under the temporary directory.
std::filesystem::path test_folder(const std::string& name) {
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(folder);
  return folder;
}

// A platform file of one Full zone holding `body`.
std::string full_zone(const std::string& body) {
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
         "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">"
         "<zone id=\"w\" routing=\"Full\">\n" +
         body + "</zone></platform>\n";
}

// The spec of `nodes` workers of the platform file `xml`.
gcsim::net::PlatformSpec xml_spec(const std::filesystem::path& xml, int nodes) {
  gcsim::net::PlatformSpec spec;
  spec.topology = gcsim::net::Topology::simgrid_xml;
  spec.xml_file = xml.string();
  spec.source_file = (xml.parent_path() / "platform.json").string();
  spec.nodes = nodes;
  return spec;
}

const char* const kFourHosts =
    "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
    "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">\n"
    "<cluster id=\"c\" prefix=\"n-\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"10Gbps\" "
    "lat=\"10us\"/>\n</zone></platform>\n";

} // namespace

TEST_CASE("an XML platform that passed is not loaded again; another worker count is") {
  const std::filesystem::path folder = test_folder("gcsim-xml-check");
  const std::filesystem::path xml = folder / "four.xml";
  write(xml, kFourHosts);
  gcsim::net::PlatformSpec spec = xml_spec(xml, 4);
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
  const std::filesystem::path folder = test_folder("gcsim-xml-order");
  std::string body;
  for (int h = 0; h < 12; ++h)
    body += "<host id=\"h-" + std::to_string(h) + "\" speed=\"1Gf\"/>\n";
  body += "<link id=\"l\" bandwidth=\"1Gbps\" latency=\"10us\"/>\n";
  for (const char* route : {"h-0\" dst=\"h-1", "h-0\" dst=\"h-2", "h-1\" dst=\"h-2"})
    body += std::string("<route src=\"") + route + "\"><link_ctn id=\"l\"/></route>\n";
  write(folder / "twelve.xml", full_zone(body));
  gcsim::net::PlatformSpec spec = xml_spec(folder / "twelve.xml", 3);
  CHECK_NOTHROW(gcsim::net::check_xml_platform(spec));
  spec.nodes = 4; // h-3 has no route
  CHECK_THROWS_AS(gcsim::net::check_xml_platform(spec), gcsim::InputError);
  std::filesystem::remove_all(folder);
}

TEST_CASE("past 64 workers, a run's own pairs are looked up, with the file's or after them") {
  // 70 hosts routed pairwise, all but 5 <-> 8: neither ring neighbours, 2^k
  // apart, doubling partners nor worker 0, so the file's own check passes.
  const std::filesystem::path folder = test_folder("gcsim-xml-pairs");
  std::string body;
  constexpr int kHosts = 70;
  for (int h = 0; h < kHosts; ++h)
    body += "<host id=\"h" + std::to_string(h) + "\" speed=\"1Gf\"/><link id=\"l" +
            std::to_string(h) + "\" bandwidth=\"1Gbps\" latency=\"10us\"/>\n";
  for (int a = 0; a < kHosts; ++a)
    for (int b = a + 1; b < kHosts; ++b)
      if (!(a == 5 && b == 8))
        body += "<route src=\"h" + std::to_string(a) + "\" dst=\"h" + std::to_string(b) +
                "\"><link_ctn id=\"l" + std::to_string(a) + "\"/><link_ctn id=\"l" +
                std::to_string(b) + "\"/></route>\n";
  write(folder / "gap.xml", full_zone(body));
  gcsim::net::PlatformSpec spec = xml_spec(folder / "gap.xml", kHosts);
  // After the file passed: the run's pairs alone.
  CHECK_NOTHROW(gcsim::net::check_xml_platform(spec));
  CHECK_NOTHROW(gcsim::net::check_xml_platform(spec, {{0, 5}, {5, 0}}));
  CHECK_THROWS_WITH_AS(gcsim::net::check_xml_platform(spec, {{8, 5}}),
                       doctest::Contains("no route from host 'h8' to host 'h5'"),
                       gcsim::InputError);
  // A file not checked yet (another worker count): its pairs and the run's.
  spec.nodes = kHosts - 1;
  CHECK_THROWS_WITH_AS(gcsim::net::check_xml_platform(spec, {{5, 8}}),
                       doctest::Contains("no route from host 'h5' to host 'h8'"),
                       gcsim::InputError);
  CHECK_NOTHROW(gcsim::net::check_xml_platform(spec));
  std::filesystem::remove_all(folder);
}
