#include "sim/scenario/platform_spec.hpp"

#include "sim/input/json_reader.hpp"
#include "sim/input/paths.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace gcsim {
namespace {

// SimGrid holds about 1.5 KB per fat-tree link (a split-duplex pair): a
// million is some 1.5 GB and 8 s to build, five times the links of a
// non-blocking three-level tree of 65536 leaves.
constexpr double kMaxTreeLinks = 1e6;

net::LinkSpec read_link(ObjectReader& parent, std::string_view key) {
  ObjectReader reader = parent.object(key);
  reader.string_or("comment", "");
  net::LinkSpec link;
  link.bandwidth_Bps = reader.bandwidth("bandwidth");
  link.latency_s = reader.duration("latency");
  reader.finish();
  return link;
}

std::vector<unsigned> read_levels(ObjectReader& reader, std::string_view key) {
  const nlohmann::json& value = reader.require(key);
  if (!value.is_array() || value.empty())
    reader.fail(key,
                "expected a non-empty array of positive integers, got " + describe_json(value));
  std::vector<unsigned> levels;
  for (size_t i = 0; i < value.size(); ++i) {
    const nlohmann::json& item = value[i];
    if (!item.is_number_integer() || item.get<int64_t>() < 1 || item.get<int64_t>() > 4096)
      throw InputError(reader.file(), reader.path_of(key) + "/" + std::to_string(i),
                       "expected a positive integer (at most 4096), got " + describe_json(item));
    levels.push_back(item.get<unsigned>());
  }
  return levels;
}

// SimGrid's calibrated factors (LV08: 13.01 and 0.97; SMPI's per message
// size: 0.34 to 11.6) are far inside [0.001, 1000]: outside it a factor is a
// typo, and at 1e-300 or 1e308 SimGrid loses flows or overflows its clock.
double read_factor(ObjectReader& reader, std::string_view key) {
  const double factor = reader.positive_number(key);
  if (factor < 1e-3 || factor > 1e3)
    reader.fail(key, "expected a factor in [0.001, 1000], got " + describe_json(*reader.find(key)));
  return factor;
}

// A count in full while it is readable, else as 1.2e+34.
std::string count_text(double count) {
  return count < 1e12 ? fmt::format("{:.0f}", count) : fmt::format("{:.2g}", count);
}

// Leaves and links of SimGrid's fat-tree (its FatTreeZone's counts): level
// i+1 has up[0..i] x down[i+1..] switches, and each element of level i has
// up[i] x links[i] links to the level above. Doubles, not integers: a few
// levels of 4096 overflow any integer, and such a tree is refused anyway.
struct TreeSize {
  double leaves = 1;
  double links = 0;
};
TreeSize tree_size(const net::FatTreeSpec& tree) {
  TreeSize size;
  for (unsigned down : tree.down)
    size.leaves *= down;
  double elements = size.leaves; // of the current level
  for (size_t i = 0; i < tree.down.size(); ++i) {
    size.links += elements * tree.up[i] * tree.links[i];
    elements = elements / tree.down[i] * tree.up[i];
  }
  return size;
}

// A machine's GPUs: `gpus_per_node`, and the `gpu_link` each GPU reaches
// the machine's switch on. Required on a multi_gpu platform; a fat tree's
// leaf is one GPU unless it gives them, and then a machine even of one GPU,
// as on multi_gpu (a sweep over gpus_per_node keeps the GPU's link).
void read_gpu_machine(ObjectReader& reader, net::PlatformSpec& spec, bool required) {
  if (!required && !reader.has("gpus_per_node")) {
    if (reader.has("gpu_link"))
      reader.fail("gpu_link", "is the link of a machine's GPUs: give \"gpus_per_node\" too");
    reader.allow("gpus_per_node");
    reader.allow("gpu_link");
    return;
  }
  spec.gpus_per_node = static_cast<int>(reader.integer("gpus_per_node", 1, 64));
  spec.gpu_link = read_link(reader, "gpu_link");
  spec.machine_leaves = spec.topology == net::Topology::fat_tree;
}

net::NetworkModelSpec read_network(ObjectReader& parent) {
  net::NetworkModelSpec network;
  if (!parent.has("network")) {
    parent.allow("network");
    return network;
  }
  ObjectReader reader = parent.object("network");
  reader.string_or("comment", "");
  network.model = reader.choice_or("model", {"CM02", "LV08", "SMPI"}, "CM02");
  network.crosstraffic = reader.boolean_or("crosstraffic", false);
  if (network.model == "LV08") {
    // SimGrid's own LV08 defaults unless the file says otherwise.
    network.latency_factor = 13.01;
    network.bandwidth_factor = 0.97;
  } else if (network.model == "SMPI") {
    // SimGrid's SMPI table unless the file gives a factor.
    network.latency_factor.reset();
    network.bandwidth_factor.reset();
  }
  for (auto [key, factor] : {std::pair{"latency_factor", &network.latency_factor},
                             std::pair{"bandwidth_factor", &network.bandwidth_factor}})
    if (reader.has(key))
      *factor = read_factor(reader, key);
    else
      reader.allow(key);
  if (reader.has("tcp_window"))
    network.tcp_window_bytes = reader.size("tcp_window");
  else
    reader.allow("tcp_window");
  network.solver = reader.named_or(
      "solver", {net::SharingSolver::automatic, net::SharingSolver::lazy, net::SharingSolver::full},
      net::solver_name, net::SharingSolver::automatic);
  reader.finish();
  return network;
}

} // namespace

net::PlatformSpec read_platform_spec(const nlohmann::json& json, const std::string& file,
                                     const std::string& path) {
  ObjectReader reader(json, file, path);
  reader.string_or("comment", "");
  reader.string_or("description", "");
  reader.string_or("source", "");
  net::PlatformSpec spec;
  spec.source_file = file;
  spec.source_path = path;
  spec.name = reader.string_or("name", "platform");
  using net::Topology;
  spec.topology = reader.named("topology",
                               {Topology::star, Topology::ring, Topology::parameter_server,
                                Topology::fat_tree, Topology::multi_gpu, Topology::simgrid_xml},
                               net::topology_name);
  spec.network = read_network(reader);
  // A field of another topology ("--set platform.servers=2" on a star) was
  // "unknown field", which sends one looking for a typo.
  // A fat tree's leaves may be multi-GPU machines: their fields are its too.
  static const std::pair<const char*, std::vector<Topology>> kOwnFields[] = {
      {"shared_cores", {Topology::star}},
      {"backbone", {Topology::star}},
      {"float16_sum", {Topology::star}},
      {"servers", {Topology::parameter_server}},
      {"server_link", {Topology::parameter_server}},
      {"fat_tree", {Topology::fat_tree}},
      {"gpus_per_node", {Topology::multi_gpu, Topology::fat_tree}},
      {"gpu_link", {Topology::multi_gpu, Topology::fat_tree}},
      {"xml", {Topology::simgrid_xml}}};
  for (const auto& [field, owners] : kOwnFields) {
    if (!reader.has(field) ||
        std::find(owners.begin(), owners.end(), spec.topology) != owners.end())
      continue;
    std::string owned_by = net::topology_name(owners.front());
    for (size_t o = 1; o < owners.size(); ++o)
      owned_by += std::string(" or ") + net::topology_name(owners[o]);
    reader.fail(field, "is a field of a " + owned_by + " platform, not of a " +
                           std::string(net::topology_name(spec.topology)) +
                           " one (set \"topology\" to " + net::topology_name(owners.front()) + ")");
  }

  if (spec.topology == Topology::simgrid_xml) {
    std::string xml = reader.string("xml");
    spec.xml_file = find_input_path(xml, file, file, reader.path_of("xml")).string();
    std::error_code error;
    // SimGrid's XML scanner exits the process on a read error (a folder),
    // and SimGrid loads a .so or .dylib as C++ code, aborting on a bad one.
    if (!std::filesystem::is_regular_file(spec.xml_file, error))
      reader.fail("xml", "not a regular file: " + spec.xml_file);
    const std::filesystem::path extension = std::filesystem::path(spec.xml_file).extension();
    if (extension == ".so" || extension == ".dylib")
      reader.fail("xml",
                  "expected a SimGrid XML platform file, not a shared library: " + spec.xml_file);
    // The worker count must be known before the platform is built (the
    // compressors run first), so an XML platform says how many hosts to use.
    spec.nodes = static_cast<int>(reader.integer("nodes", 1, kMaxWorkers));
    reader.finish();
    // Before anything runs: SimGrid aborts the process on some bad files.
    net::check_xml_platform(spec);
    return spec;
  }

  if (spec.topology == Topology::fat_tree) {
    ObjectReader tree = reader.object("fat_tree");
    tree.string_or("comment", "");
    spec.fat_tree.down = read_levels(tree, "down");
    spec.fat_tree.up = read_levels(tree, "up");
    if (tree.has("links")) {
      spec.fat_tree.links = read_levels(tree, "links");
    } else {
      tree.allow("links");
      spec.fat_tree.links.assign(spec.fat_tree.down.size(), 1);
    }
    if (spec.fat_tree.up.size() != spec.fat_tree.down.size())
      tree.fail("up", "expected as many levels as \"down\" (" +
                          std::to_string(spec.fat_tree.down.size()) + ")");
    if (spec.fat_tree.links.size() != spec.fat_tree.down.size())
      tree.fail("links", "expected as many levels as \"down\" (" +
                             std::to_string(spec.fat_tree.down.size()) + ")");
    tree.finish();
    const TreeSize size = tree_size(spec.fat_tree);
    // The leaves are the product of "down": blamed there, so that a --set
    // of it is named rather than the file it overrides.
    if (size.leaves > kMaxWorkers)
      tree.fail("down", "gives the tree " + count_text(size.leaves) + " leaves, more than " +
                            std::to_string(kMaxWorkers));
    if (size.links > kMaxTreeLinks)
      reader.fail("fat_tree", "the tree has " + count_text(size.links) +
                                  " links (elements x up x links, summed over the levels), more "
                                  "than " +
                                  count_text(kMaxTreeLinks) +
                                  " (SimGrid needs about 1.5 KB of memory per link)");
    const auto leaves = static_cast<int64_t>(size.leaves);
    // A leaf may be a machine of GPUs, each on its gpu_link, the leaf's link
    // its NIC; SimGrid builds every leaf, used or not.
    read_gpu_machine(reader, spec, /*required=*/false);
    if (leaves * spec.gpus_per_node > kMaxWorkers)
      reader.fail("gpus_per_node", std::to_string(spec.gpus_per_node) + " GPUs on each of the " +
                                       count_text(size.leaves) + " leaves are more than " +
                                       std::to_string(kMaxWorkers) + " hosts");
    spec.nodes = static_cast<int>(reader.integer_or("nodes", 1, kMaxWorkers, leaves));
    // The bound is the tree's, which a --set of the nodes alone does not show.
    if (spec.nodes > leaves)
      reader.fail("nodes", std::to_string(spec.nodes) +
                               (spec.has_gpu_machines() ? " machines" : " workers") +
                               ", more than the tree's " + std::to_string(leaves) +
                               " leaves (the product of fat_tree.down): give fewer, or a larger "
                               "\"down\"");
    spec.link = read_link(reader, "link");
    reader.finish();
    return spec;
  }

  spec.nodes = static_cast<int>(reader.integer("nodes", 1, kMaxWorkers));
  spec.link = read_link(reader, "link");
  if (spec.topology == Topology::star) {
    if (reader.has("backbone"))
      spec.backbone = read_link(reader, "backbone");
    else
      reader.allow("backbone");
    spec.shared_cores = static_cast<int>(reader.integer_or("shared_cores", 1, 4096, 0));
    spec.float16_sum_s = reader.duration_or("float16_sum", 0);
  } else if (spec.topology == Topology::parameter_server) {
    spec.servers = static_cast<int>(reader.integer("servers", 1, kMaxWorkers));
    spec.server_link = reader.has("server_link") ? read_link(reader, "server_link") : spec.link;
    reader.allow("server_link");
  } else if (spec.topology == Topology::multi_gpu) {
    read_gpu_machine(reader, spec, /*required=*/true);
    if (static_cast<int64_t>(spec.nodes) * spec.gpus_per_node > kMaxWorkers)
      reader.fail("nodes", "nodes x gpus_per_node exceeds " + std::to_string(kMaxWorkers));
  }
  reader.finish();
  return spec;
}

} // namespace gcsim
