#pragma once
// Cluster platforms built as SimGrid zones in code.
//
// A PlatformSpec is plain data read from a platform JSON file (see
// sim/scenario/platform_spec.hpp); build_platform() turns it into SimGrid
// hosts, links and routes inside the running engine. Each worker is one GPU:
// one SimGrid host whose network attachments follow the topology.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace simgrid::s4u {
class Host;
class Engine;
} // namespace simgrid::s4u

namespace gcsim::net {

struct LinkSpec {
  double bandwidth_Bps = 0;
  double latency_s = 0;
};

enum class SharingSolver { automatic, lazy, full };

const char* solver_name(SharingSolver solver);

/// SimGrid's network model settings, a platform setting so that a
/// calibration can change them; CM02 without cross-traffic and without a TCP
/// window bound reproduces the alpha-beta formula exactly.
struct NetworkModelSpec {
  std::string model = "CM02"; // CM02 | LV08 | SMPI
  bool crosstraffic = false;
  /// Multiply every route latency and link bandwidth. Always set for CM02
  /// (1) and LV08 (SimGrid's 13.01 and 0.97); for SMPI, unset leaves
  /// SimGrid's SMPI table of factors per message size, and a value replaces
  /// that table (SMPI reads no other factor).
  std::optional<double> latency_factor = 1.0;
  std::optional<double> bandwidth_factor = 1.0;
  /// TCP window in bytes bounding a flow's rate at window / (2 latency);
  /// nullopt disables the bound.
  std::optional<double> tcp_window_bytes;
  /// How SimGrid solves the sharing of the links (`network/optim`), a matter
  /// of speed and of SimGrid's lazy solver's known inaccuracy, not of the
  /// model: `lazy` re-solves only the flows an event touches (fast when few
  /// flows share a link, as a ring's), `full` all of them at every event
  /// (faster when every flow shares links with others, as a tree's, and
  /// times every flow right). `automatic` is lazy unless the user of the
  /// spec chooses (training::choose_solver).
  SharingSolver solver = SharingSolver::automatic;
};

enum class Topology { star, ring, parameter_server, fat_tree, multi_gpu, simgrid_xml };

struct FatTreeSpec {
  std::vector<unsigned> down;  // children per switch, leaf level first
  std::vector<unsigned> up;    // parents per element, leaf level first
  std::vector<unsigned> links; // parallel links per connection
};

struct PlatformSpec {
  std::string name;
  Topology topology = Topology::star;
  int nodes = 0;                    // machines (workers, unless has_gpu_machines())
  LinkSpec link;                    // each node's NIC (star, ps, fat-tree) or ring hop
  std::optional<LinkSpec> backbone; // a shared switch fabric for star clusters
  // parameter_server
  int servers = 0;
  LinkSpec server_link;
  // fat_tree
  FatTreeSpec fat_tree;
  // multi_gpu, and a fat tree's leaves where it gives gpus_per_node
  // (machine_leaves): `nodes` machines with gpus_per_node GPUs behind one
  // NIC (`link`)
  int gpus_per_node = 1;
  LinkSpec gpu_link;
  bool machine_leaves = false;
  // star only: the workers are processes on one machine with this many
  // cores, so their compute shares them (0: every worker has a processor of
  // its own). A mini-cluster of network namespaces is such a machine.
  int shared_cores = 0;
  // star only: seconds one core takes to sum a float16 element into another
  // in a ring allreduce's reduce-scatter (gloo sums float16 on CPUs through
  // software conversions: 34-51 ns on a Zen 4 for a gradient's values, about
  // half that for ones; 0: free, as NCCL's on GPUs). Only the fp16
  // compressor's allreduce and float16 collective points pay it.
  double float16_sum_s = 0;
  /// float16_sum_s over a float16 element's 2 bytes (net::SumCost's unit).
  double float16_sum_s_per_byte() const { return float16_sum_s / 2; }
  // simgrid_xml
  std::string xml_file;
  NetworkModelSpec network;
  // Where the spec was read (file, JSON path of the platform object): errors
  // found only when SimGrid builds it (a bad XML file) name their field.
  std::string source_file;
  std::string source_path;

  /// Whether the workers are the GPUs of multi-GPU machines, each
  /// machine's consecutive ranks (a multi_gpu platform, or a fat tree of
  /// such machines): what hierarchical collectives and NCCL's chains follow.
  bool has_gpu_machines() const {
    return topology == Topology::multi_gpu || (topology == Topology::fat_tree && machine_leaves);
  }
  /// Workers (one per GPU) the platform provides.
  int worker_count() const { return has_gpu_machines() ? nodes * gpus_per_node : nodes; }
};

const char* topology_name(Topology topology);

/// Loads an XML platform (`simgrid_xml`) the way a Simulation would, in a
/// child process, and checks what SimGrid would otherwise abort or crash on
/// only later: its links' figures and a route between the workers it would
/// use. Clusters that declare too many hosts are refused before SimGrid
/// builds them. Throws InputError at the spec's source (field `xml` or
/// `nodes`) with one line; does nothing for other topologies, or once a
/// SimGrid engine exists in this process. A file that passed with the same
/// worker count and network model is not loaded again in this process (a
/// sweep reads every point's scenario).
///
/// The routes looked up are every pair's up to 64 workers; past that (all
/// pairs would take minutes at 16384) those the whole group's collectives
/// send between and rank 0's to and from every worker, and the pairs of
/// `run_pairs` (worker ranks, from and to) besides: what a run sends on
/// outside the whole group's collectives (a server's messages, a step over
/// part of the workers), which then loads the file again unless the same
/// pairs passed before.
void check_xml_platform(const PlatformSpec& spec,
                        const std::vector<std::pair<int, int>>& run_pairs = {});

/// The hosts of a built platform, in rank order.
struct Platform {
  std::vector<simgrid::s4u::Host*> workers;
  std::vector<simgrid::s4u::Host*> servers;
  /// The machine whose cores the workers' compute shares (shared_cores), or
  /// null when every worker computes on its own processor.
  simgrid::s4u::Host* shared_cpu = nullptr;

  /// Where worker `worker`'s processor work runs (a SumCost's sums): the
  /// shared machine where there is one, else the worker's own host.
  simgrid::s4u::Host* processor_of(size_t worker) const {
    return shared_cpu != nullptr ? shared_cpu : workers[worker];
  }
};

/// A SimGrid engine, quiet and configured with the platform's network
/// model, with the platform built in it. SimGrid allows one engine per
/// process: a second Simulation in the same process is a logic_error.
class Simulation {
public:
  /// `actors_per_worker`: the most actors a worker's host will run at once
  /// (its trainer and communicator, a device, a tree's streams), by which
  /// the actors' stacks are judged against the process's mapping limit
  /// (the small platforms of tests need not say).
  /// Throws InputError at the spec's source for an XML file SimGrid cannot
  /// load or with too few hosts, std::invalid_argument for a platform
  /// without workers.
  explicit Simulation(const PlatformSpec& spec, int actors_per_worker = 2);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  const Platform& platform() const { return platform_; }
  /// Runs every actor created so far to completion.
  void run();

private:
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  Platform platform_;
};

} // namespace gcsim::net
