#include "sim/network/platform.hpp"

#include "sim/input/input_error.hpp"
#include "sim/input/natural_order.hpp"
#include "sim/network/simgrid_setup.hpp"

#include <algorithm>
#include <cassert>
#include <csignal>
#include <fstream>
#include <limits>
#include <malloc.h>
#include <stdexcept>
#include <string>
#include <xbt/log.h>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace gcsim::net {
namespace detail {

// SimGrid's message as the tail of gcsim's one-line error: its line breaks
// become spaces, and a list of every host in a large file is cut short.
std::string one_line(const std::string& message) {
  constexpr size_t kMaxLength = 400;
  std::string line;
  for (size_t i = 0; i < message.size() && line.size() < kMaxLength; ++i) {
    if (message[i] != '\n') {
      line += message[i];
      continue;
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    while (i + 1 < message.size() && (message[i + 1] == ' ' || message[i + 1] == '\n'))
      ++i;
    line += ' ';
  }
  return line.size() < kMaxLength ? line : line + "...";
}

// Applies the network model settings; must run before the platform is built.
void configure_network_model(const NetworkModelSpec& network) {
  sg4::Engine::set_config("network/model:" + network.model);
  sg4::Engine::set_config(std::string("network/crosstraffic:") +
                          (network.crosstraffic ? "1" : "0"));
  if (network.model == "SMPI") {
    // SMPI's factors are tables of "message size:factor"; one entry from
    // size 0 is a constant.
    if (network.latency_factor)
      sg4::Engine::set_config("smpi/lat-factor:0:" + fmt::format("{}", *network.latency_factor));
    if (network.bandwidth_factor)
      sg4::Engine::set_config("smpi/bw-factor:0:" + fmt::format("{}", *network.bandwidth_factor));
  } else {
    sg4::Engine::set_config("network/latency-factor:" +
                            fmt::format("{}", network.latency_factor.value()));
    sg4::Engine::set_config("network/bandwidth-factor:" +
                            fmt::format("{}", network.bandwidth_factor.value()));
  }
  // SimGrid bounds a flow at gamma / (2 latency); a huge gamma removes the
  // bound so that CM02 is exactly latency + size / bandwidth.
  double gamma = network.tcp_window_bytes.value_or(1e30);
  // SimGrid's default timing precision (1e-5 s) would round small messages
  // visibly; gcsim wants closed forms reproduced to 1e-6 relative. The
  // sharing solver keeps its default precision: tighter ones make it fail on
  // contended fat-trees.
  sg4::Engine::set_config("surf/precision:1e-11");
  sg4::Engine::set_config("network/TCP-gamma:" + fmt::format("{}", gamma));
  sg4::Engine::set_config(std::string("network/optim:") +
                          (network.solver == SharingSolver::full ? "Full" : "Lazy"));
}

std::vector<sg4::Host*> hosts_by_name(const sg4::Engine& engine) {
  std::vector<sg4::Host*> hosts = engine.get_all_hosts();
  std::sort(hosts.begin(), hosts.end(), [](const sg4::Host* a, const sg4::Host* b) {
    return input::natural_less(a->get_name(), b->get_name());
  });
  return hosts;
}

std::string too_few_hosts(const PlatformSpec& spec, size_t hosts) {
  return std::to_string(spec.nodes) + " workers asked for, but the XML platform " + spec.xml_file +
         " has " + std::to_string(hosts) + " hosts";
}

} // namespace detail

namespace {

// Host speed only converts seconds to flops: compute time comes from the cost
// model and is charged with sleep_for, or, on a machine whose cores the
// workers share, as executions of seconds x speed on that machine.
constexpr double kHostSpeed = 1e9;

sg4::SplitDuplexLink* make_duplex(sg4::NetZone* zone, const std::string& name,
                                  const LinkSpec& link) {
  auto* created = zone->create_split_duplex_link(name, link.bandwidth_Bps);
  created->set_latency(link.latency_s)->seal();
  return created;
}

sg4::LinkInRoute up(const sg4::Link* link) {
  return sg4::LinkInRoute{link, sg4::LinkInRoute::Direction::UP};
}

// A switched cluster: every host has a private full-duplex link to a
// non-blocking switch, optionally behind a shared backbone.
Platform build_star(const PlatformSpec& spec) {
  auto* zone = sg4::create_star_zone(spec.name);
  Platform platform;
  std::vector<sg4::LinkInRoute> backbone;
  if (spec.backbone) {
    const sg4::Link* shared =
        zone->create_link(spec.name + "-backbone", spec.backbone->bandwidth_Bps)
            ->set_latency(spec.backbone->latency_s)
            ->seal();
    backbone.emplace_back(shared);
  }
  auto add_host = [&](const std::string& name, const LinkSpec& link) {
    sg4::Host* host = zone->create_host(name, kHostSpeed)->seal();
    std::vector<sg4::LinkInRoute> route{up(make_duplex(zone, name + "-nic", link))};
    route.insert(route.end(), backbone.begin(), backbone.end());
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, route, true);
    return host;
  };
  for (int s = 0; s < spec.servers; ++s)
    platform.servers.push_back(add_host("server-" + std::to_string(s), spec.server_link));
  for (int w = 0; w < spec.nodes; ++w)
    platform.workers.push_back(add_host("gpu-" + std::to_string(w), spec.link));
  // SimGrid shares a multi-core host's cores among its executions, each at
  // most one core's speed: the time slicing of P single-threaded processes.
  if (spec.shared_cores > 0)
    platform.shared_cpu = zone->create_host(spec.name + "-shared-cpu", kHostSpeed)
                              ->set_core_count(spec.shared_cores)
                              ->seal();
  zone->seal();
  return platform;
}

// A physical ring: host i is cabled to host i+1 only. Routes between
// non-neighbours follow the ring (shortest way), computed lazily by Dijkstra.
Platform build_ring(const PlatformSpec& spec) {
  auto* zone = sg4::create_dijkstra_zone(spec.name, true);
  Platform platform;
  for (int w = 0; w < spec.nodes; ++w)
    platform.workers.push_back(zone->create_host("gpu-" + std::to_string(w), kHostSpeed)->seal());
  // Two hosts share one cable, not two; one host has no neighbour to cable
  // to (SimGrid crashes on a route from a host to itself).
  const int cables = spec.nodes <= 2 ? spec.nodes - 1 : spec.nodes;
  for (int w = 0; w < cables; ++w) {
    int next = (w + 1) % spec.nodes;
    auto* cable = make_duplex(zone, "ring-" + std::to_string(w), spec.link);
    zone->add_route(platform.workers[static_cast<size_t>(w)]->get_netpoint(),
                    platform.workers[static_cast<size_t>(next)]->get_netpoint(), nullptr, nullptr,
                    {up(cable)}, true);
  }
  zone->seal();
  return platform;
}

// A machine of `spec.gpus_per_node` GPUs inside `parent`, each GPU on its
// NVLink-class link to the machine's switch, which reaches the outside
// through the router returned (the machine's NIC; its link is the
// parent's). GPU ranks are first_rank onwards.
std::pair<sg4::NetZone*, simgrid::kernel::routing::NetPoint*>
make_gpu_machine(sg4::NetZone* parent, const PlatformSpec& spec, const std::string& name,
                 int first_rank, std::vector<sg4::Host*>& gpus) {
  auto* machine = sg4::create_star_zone(name);
  machine->set_parent(parent);
  auto* nic_router = machine->create_router(name + "-nic");
  machine->add_route(nic_router, nullptr, nullptr, nullptr, {}, true);
  for (int gpu = 0; gpu < spec.gpus_per_node; ++gpu) {
    const std::string gpu_name = "gpu-" + std::to_string(first_rank + gpu);
    sg4::Host* host = machine->create_host(gpu_name, kHostSpeed)->seal();
    auto* nvlink = make_duplex(machine, gpu_name + "-nvlink", spec.gpu_link);
    machine->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {up(nvlink)}, true);
    gpus.push_back(host);
  }
  machine->seal();
  return {machine, nic_router};
}

// SimGrid's fat tree; a leaf is a worker's host, or a machine of GPUs
// (make_gpu_machine) where the spec gives gpus_per_node (machine_leaves).
Platform build_fat_tree(const PlatformSpec& spec) {
  Platform platform;
  std::vector<sg4::Host*> hosts;
  const bool machines = spec.has_gpu_machines();
  auto make_leaf = [&hosts, &spec, machines](sg4::NetZone* zone, const std::vector<unsigned long>&,
                                             unsigned long id) {
    using NetPoint = simgrid::kernel::routing::NetPoint;
    if (machines) {
      const auto [machine, gateway] =
          make_gpu_machine(zone, spec, spec.name + "-node" + std::to_string(id),
                           static_cast<int>(id) * spec.gpus_per_node, hosts);
      return std::make_pair(machine->get_netpoint(), gateway);
    }
    sg4::Host* host = zone->create_host("gpu-" + std::to_string(id), kHostSpeed)->seal();
    hosts.push_back(host);
    return std::make_pair(host->get_netpoint(), static_cast<NetPoint*>(nullptr));
  };
  const auto& tree = spec.fat_tree;
  sg4::FatTreeParams params(static_cast<unsigned>(tree.down.size()), tree.down, tree.up,
                            tree.links);
  sg4::create_fatTree_zone(spec.name, nullptr, params, sg4::ClusterCallbacks(make_leaf),
                           spec.link.bandwidth_Bps, spec.link.latency_s,
                           sg4::Link::SharingPolicy::SPLITDUPLEX)
      ->seal();
  std::sort(hosts.begin(), hosts.end(), [](const sg4::Host* a, const sg4::Host* b) {
    return std::stoi(a->get_name().substr(4)) < std::stoi(b->get_name().substr(4));
  });
  platform.workers.assign(hosts.begin(), hosts.begin() + spec.worker_count());
  return platform;
}

// Multi-GPU machines: inside a machine, GPUs meet on NVLink-class links; a
// machine reaches the others through one NIC on a switched network.
Platform build_multi_gpu(const PlatformSpec& spec) {
  auto* network = sg4::create_star_zone(spec.name);
  Platform platform;
  for (int node = 0; node < spec.nodes; ++node) {
    std::string node_name = spec.name + "-node" + std::to_string(node);
    const auto [machine, nic_router] =
        make_gpu_machine(network, spec, node_name, node * spec.gpus_per_node, platform.workers);
    auto* nic = make_duplex(network, node_name + "-nic-link", spec.link);
    network->add_route(machine->get_netpoint(), nullptr, nic_router, nullptr, {up(nic)}, true);
  }
  network->seal();
  return platform;
}

Platform build_from_xml(sg4::Engine& engine, const PlatformSpec& spec) {
  // SimGrid reports a malformed file or a platform it refuses (a parse
  // error, an unknown link in a route) by exceptions: the file's fault. Not
  // std::bad_alloc and the like, which are not. Some errors it still aborts
  // on (a duplicate link, an unknown routing model); see platforms/README.md.
  auto refuse = [&spec](const std::exception& error) {
    return InputError(spec.source_file, spec.source_path + "/xml",
                      "SimGrid cannot load " + spec.xml_file + ": " +
                          detail::one_line(error.what()));
  };
  try {
    engine.load_platform(spec.xml_file);
  } catch (const std::runtime_error& error) {
    throw refuse(error);
  } catch (const std::logic_error& error) {
    throw refuse(error);
  }
  std::vector<sg4::Host*> hosts = detail::hosts_by_name(engine);
  if (spec.nodes > 0 && static_cast<size_t>(spec.nodes) > hosts.size())
    throw InputError(spec.source_file, spec.source_path + "/nodes",
                     detail::too_few_hosts(spec, hosts.size()));
  Platform platform;
  size_t count = spec.nodes > 0 ? static_cast<size_t>(spec.nodes) : hosts.size();
  platform.workers.assign(hosts.begin(), hosts.begin() + static_cast<std::ptrdiff_t>(count));
  return platform;
}

} // namespace

const char* solver_name(SharingSolver solver) {
  switch (solver) {
  case SharingSolver::automatic:
    return "auto";
  case SharingSolver::lazy:
    return "lazy";
  case SharingSolver::full:
    return "full";
  }
  return "unknown";
}

const char* topology_name(Topology topology) {
  switch (topology) {
  case Topology::star:
    return "star";
  case Topology::ring:
    return "ring";
  case Topology::parameter_server:
    return "parameter_server";
  case Topology::fat_tree:
    return "fat_tree";
  case Topology::multi_gpu:
    return "multi_gpu";
  case Topology::simgrid_xml:
    return "simgrid_xml";
  }
  return "unknown";
}

namespace {

Platform build_platform(sg4::Engine& engine, const PlatformSpec& spec) {
  switch (spec.topology) {
  case Topology::star:
  case Topology::parameter_server:
    return build_star(spec);
  case Topology::ring:
    return build_ring(spec);
  case Topology::fat_tree:
    return build_fat_tree(spec);
  case Topology::multi_gpu:
    return build_multi_gpu(spec);
  case Topology::simgrid_xml:
    return build_from_xml(engine, spec);
  }
  throw std::logic_error("unhandled topology");
}

bool engine_created = false;

// Linux's limit on a process's memory mappings (vm.max_map_count), 65530
// unless an administrator raised it.
long max_memory_maps() {
  std::ifstream file("/proc/sys/vm/max_map_count");
  long maps = 0;
  return file >> maps && maps > 0 ? maps : 65530;
}

// SimGrid guards each actor's stack with a protected page, which splits the
// stack's mapping in two. With two actors per worker, some 16000 workers
// used up Linux's default limit on mappings and SimGrid aborted ("Failed to
// protect stack"); with a tree allreduce's four streams per worker beside
// them, 5600 did. When the actors' mappings would take more than half of
// the limit (leaving the rest to gcsim's own large allocations), the stacks
// go unguarded: one mapping each. Only a stack overflow would then go
// unnoticed; results do not change. The stacks are SimGrid's default 8 MiB
// (contexts/stack-size), and the actors touch far less of them: 65536
// workers' 131073 actors took 2.4 GB in all, under 20 KB each.
//
// Each unguarded stack is then malloc's own mapping, and malloc makes at
// most 65536 of those (M_MMAP_MAX) and takes the rest from the heap, where
// calloc clears the top chunk's leftover for each: about 140 KB per actor
// past 32768 workers (65536 workers: 7.4 GB before the first message). With
// the limit lifted they took 2.4 GB, at Linux's default vm.max_map_count
// too (adjacent stacks of one protection are one mapping to the kernel).
bool stacks_crowd_memory_maps(const PlatformSpec& spec, int actors_per_worker) {
  const long actors =
      static_cast<long>(actors_per_worker) * spec.worker_count() + 2L * spec.servers + 1;
  return 2 * actors > max_memory_maps() / 2;
}

void unguard_stacks() {
  sg4::Engine::set_config("contexts/guard-size:0");
  mallopt(M_MMAP_MAX, std::numeric_limits<int>::max());
}

} // namespace

Simulation::Simulation(const PlatformSpec& spec, int actors_per_worker) {
  assert(actors_per_worker > 0 && "a worker runs one actor at least");
  if (engine_created)
    throw std::logic_error("one SimGrid engine per process: a Simulation already ran here");
  engine_created = true;
  const bool crowded = stacks_crowd_memory_maps(spec, actors_per_worker);
  static char name[] = "gcsim";
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer cannot follow the default contexts' stack switches
  // (Debian's SimGrid has no annotations for it): it warns on stderr when an
  // actor throws and may report false errors. Threads it can follow, with the
  // same results, as long as their stacks (two mappings each) fit the
  // mapping limit. The factory is read when the engine is made, hence argv;
  // the log threshold comes first to silence SimGrid's note of the change.
  static char quiet[] = "--log=root.thres:critical";
  static char threads[] = "--cfg=contexts/factory:thread";
  static char* argv[] = {name, quiet, threads, nullptr};
  static int argc = crowded ? 1 : 3;
#else
  static char* argv[] = {name, nullptr};
  static int argc = 1;
#endif
  // SimGrid's SIGINT handler ends the process with exit(1) (after listing
  // the actors, when its log is on): a Ctrl-C would neither end gcsim by the
  // signal, as a shell or a sweep expects, nor reach gcsim's own handler,
  // which removes the output folders it made. The process keeps its own.
  struct sigaction interrupt {};
  const bool saved = ::sigaction(SIGINT, nullptr, &interrupt) == 0;
  engine_ = std::make_unique<sg4::Engine>(&argc, argv);
  if (saved)
    ::sigaction(SIGINT, &interrupt, nullptr);
  // SimGrid's own chatter would drown gcsim's output; gcsim reports errors.
  xbt_log_control_set("root.thres:critical");
  detail::configure_network_model(spec.network);
  if (crowded)
    unguard_stacks();
  platform_ = build_platform(*engine_, spec);
  if (platform_.workers.empty())
    throw std::invalid_argument("the platform has no workers");
}

Simulation::~Simulation() = default;

void Simulation::run() {
  engine_->run();
}

} // namespace gcsim::net
