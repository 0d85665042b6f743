#pragma once
// The data-parallel training iteration on SimGrid actors.
//
// Per worker: forward, then backward layer by layer in reverse; gradients
// are fused into buckets (PyTorch DDP style) and each bucket's allreduce
// starts when its last gradient is ready, overlapping the rest of the
// backward pass (or after it, with overlap off); the optimizer step follows
// the last bucket. A compressed iteration does the same with its parts: a
// per-bucket compressor's kernels and steps overlap the backward pass, a
// whole-model one's start when it ends. Kernels run on a device actor per
// worker, like a second CUDA stream, in the order they are issued: a part's
// first kernels when the backward pass reaches it (not when the earlier
// parts' steps are done, as a DDP communication hook or Horovod launches
// them), the ones between and after its steps when its steps get there. By
// default they overlap the backward pass without slowing it down; with
// kernels_share_device (or a star platform's shared_cores) kernels and
// compute are executions on one host and slow each other down while both
// run. One communication actor per worker runs the buckets' (parts')
// collectives in order, so concurrent traffic shares the network as SimGrid
// says it does.

#include "compressors/summation_order.hpp"
#include "sim/input/input_error.hpp"
#include "sim/network/platform.hpp"
#include "sim/scenario/scenario.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gcsim::training {

struct LayerTimes {
  double forward_s = 0;
  double backward_s = 0;
};

/// One communication step of a compressed iteration, in global worker
/// ranks, with the bytes the compressor really selected.
struct StepPlan {
  enum class Kind {
    allreduce_ring,
    allreduce_recursive_doubling,
    allgather,
    allgatherv,
    broadcast,
    reduce,
    point_to_point, // `messages`, all sent at once (gTop-k rounds, PS push/pull)
    allreduce_tree, // NCCL's double binary tree over the participants
    allreduce,      // the run's own algorithm (IterationPlan::algorithm); the last
  };
  struct Message {
    int src = 0;
    int dst = 0;
    uint64_t bytes = 0;
  };
  Kind kind = Kind::allreduce_ring;
  std::string label;             // what it carries, e.g. "allgather indices"
  int root = -1;                 // broadcast/reduce root (global rank)
  std::vector<int> participants; // ascending global ranks
  std::vector<uint64_t> bytes;   // per participant (same order)
  std::vector<Message> messages; // point_to_point only
};

/// A compression kernel a worker runs before step `before_step` (or at the
/// end when it equals the number of steps).
struct KernelPlan {
  std::string name;
  double seconds = 0;
  size_t before_step = 0;
  /// The sizes it processed (elements), so a replay can price it again.
  double n = 0;
  double k = 0;
  double rows = 0;
  double cols = 0;
};

/// What one compressor call decided: the steps every worker takes part in,
/// and each worker's kernels. It may start once the backward pass has
/// computed layer `ready_layer` (forward order) and every later one: 0 for a
/// compressor that needs the whole gradient, a bucket's first layer for one
/// that runs per bucket.
struct CompressionPart {
  int ready_layer = 0;
  std::vector<StepPlan> steps;
  std::vector<std::vector<KernelPlan>> kernels; // [worker]
};

/// One iteration of a compressed run: its parts in the order they become
/// ready (backward order), whose steps each worker's communication actor runs
/// one part after the other, and whose kernels its device actor runs in the
/// order they are issued.
struct CompressedIteration {
  std::vector<CompressionPart> parts;
};

/// Everything one simulated training run needs, in plain numbers.
struct IterationPlan {
  std::vector<LayerTimes> layers;    // forward order, for one micro-batch
  std::vector<uint64_t> layer_bytes; // gradient bytes per layer
  double optimizer_s = 0;
  uint64_t bucket_bytes = 0;
  /// The first bucket to fill (the last layers, first ready) closes at this
  /// many bytes, as DDP's first bucket does; 0: at bucket_bytes.
  uint64_t first_bucket_bytes = 0;
  bool overlap = true;
  /// Compression kernels and the worker's compute share its device (SimGrid
  /// executions on the worker's host: both slow down while both run);
  /// otherwise a kernel overlaps the backward pass for free.
  bool kernels_share_device = false;
  /// The dense buckets' allreduce, and a compressed run's `allreduce` steps'.
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::ring;
  /// A compressed run's `broadcast` steps'.
  BroadcastAlgorithm broadcast = BroadcastAlgorithm::binomial;
  /// What summing a byte of a compressed run's ring `allreduce` steps costs
  /// one core (net::SumCost): fp16 on a platform with a float16_sum.
  double allreduce_sum_s_per_byte = 0;
  /// Consecutive ranks that share a machine (the GPUs of a machine where
  /// the platform has machines of GPUs, PlatformSpec::has_gpu_machines):
  /// the hierarchical allreduce's inner rings, the tree's chains.
  int ranks_per_node = 1;
  int iterations = 1;
  /// Stragglers: in each iteration, each worker's forward and backward
  /// passes take a factor of their time drawn from a lognormal of mean 1 and
  /// this coefficient of variation, from `seed`, the worker and the
  /// iteration alone (so a compressed run and its dense baseline meet the
  /// same stragglers). The optimizer step, after the gradients are
  /// exchanged, is not drawn: the wait for the slowest worker is then
  /// exactly its compute beyond the mean. 0: every worker computes alike.
  double compute_variation = 0;
  uint64_t seed = 1;
  /// Empty: dense data parallelism with buckets. Otherwise one entry per
  /// iteration; each part's kernels and steps start when the backward pass
  /// reaches its ready_layer (with overlap off: when the backward pass ends).
  std::vector<CompressedIteration> compressed;
};

/// A bucket: layers [first_layer, last_layer] in forward order, reduced once
/// the backward pass reaches first_layer.
struct Bucket {
  int first_layer = 0;
  int last_layer = 0;
  uint64_t bytes = 0;
};

/// DDP-style bucketing: walk the layers in backward order and close a
/// bucket once it holds at least `bucket_bytes`, the first one at
/// `first_bucket_bytes` (0: at bucket_bytes too). A bucket spans the layers
/// with parameters it holds (parameter-free ones between them included);
/// parameter-free layers outside every such span belong to no bucket.
std::vector<Bucket> make_buckets(const std::vector<uint64_t>& layer_bytes, uint64_t bucket_bytes,
                                 uint64_t first_bucket_bytes);

/// The plan's buckets: what its dense allreduces and a per-bucket
/// compressor's parts both use, so that they agree.
std::vector<Bucket> plan_buckets(const IterationPlan& plan);

/// The allreduce a compressor's `allreduce` step over every worker runs:
/// the plan's algorithm, but a ring where that is the parameter servers'
/// push and pull (they take no part in a compressor's steps) or the
/// hierarchical one without whole machines (`ranks_per_node` 1).
AllreduceAlgorithm compressor_allreduce(AllreduceAlgorithm algorithm, int ranks_per_node);
/// How that allreduce adds the `workers`' values, for the compressors whose
/// sums round (Compressor::sum_as).
compress::SummationOrder compressor_summation(AllreduceAlgorithm algorithm, int workers,
                                              int ranks_per_node);
/// What summing a byte of compressor `name`'s ring allreduce costs one core
/// on `platform` (IterationPlan::allreduce_sum_s_per_byte): fp16's 2-byte
/// elements at the platform's float16_sum (gloo's, on CPUs); 0 for the rest.
double compressor_sum_s_per_byte(const std::string& name, const net::PlatformSpec& platform);

struct IterationRecord {
  double iteration_s = 0;                         // from the previous iteration's end to this one's
  double compute_s = 0;                           // forward + backward + optimizer, mean over
                                                  // workers
  double straggler_wait_s = 0;                    // the slowest worker's compute beyond compute_s
                                                  // (compute_variation only)
  double compression_s = 0;                       // compression kernels, mean over workers
  double compression_exposed_s = 0;               // kernel time after the backward pass on the
                                                  // worker with the most (the one the others
                                                  // wait for: a leader, the fullest bin)
  std::map<std::string, double> kernel_s;         // per kernel name, mean over workers
  std::map<std::string, double> kernel_exposed_s; // per kernel name, that worker's exposed part
  std::map<std::string, double> bytes_by_step;    // per step label, mean over workers
  double communication_s = 0;                     // the rest of the time not hidden by compute
  double communication_total_s = 0;               // time the collectives ran, hidden or not
  double bytes_sent_per_worker = 0;               // mean over workers
  double bytes_sent_max_worker = 0;
  /// What the parameter servers sent (the pulls of dense push/pull), mean
  /// and most over servers; the mean unset where no server took part.
  std::optional<double> bytes_sent_per_server;
  double bytes_sent_max_server = 0;
};

struct RunResult {
  std::vector<Bucket> buckets;
  std::vector<IterationRecord> iterations;
  std::vector<std::string> worker_hosts; // the platform's host of each rank, in rank order
};

/// One span of a worker's time, for Chrome trace-event timelines.
struct TimelineEvent {
  int plan = 0;
  int worker = 0;       // or the server's index, of a server's event
  std::string category; // compute, kernel, communication
  std::string name;
  double start_s = 0;
  double end_s = 0;
  bool server = false; // a parameter server's (its pull of a bucket)
  int iteration = 0;
  /// Shown with the span in a trace viewer (its "args"): a communication
  /// span's bytes_sent by this worker or server, a kernel's sizes (n, k,
  /// rows, cols) where it has them.
  std::vector<std::pair<std::string, double>> figures;
};

/// Called after each iteration with (iteration index, simulated clock).
using ProgressCallback = std::function<void(int, double)>;

/// A simulated iteration longer than kLongestSeconds (about 30 years). Each
/// figure of the input is read within its bounds, but together they can
/// still make an iteration no one means (a slow link times a large factor).
/// Bad input, not a bug: the caller names the file and field at fault (the
/// platform's, usually).
/// "WHAT takes S of simulated time, more than 1e9 s ...: CHECK": the message
/// of IterationTooLong, and of any other span simulated past kLongestSeconds;
/// `check` says what to look at (by default the platform's links).
std::string too_long_message(const std::string& what, double seconds,
                             const std::string& check = "check the link bandwidths and latencies "
                                                        "and the network factors");

class IterationTooLong : public std::invalid_argument {
public:
  explicit IterationTooLong(double seconds);
  /// The simulated iteration's length.
  double seconds() const { return seconds_; }

private:
  double seconds_;
};

/// `error` as bad input at the platform's `file` and `path` (where the caller
/// read it). An XML platform's links are in its XML file, so there the field
/// is `path`/xml and the message names the file.
InputError too_long_input_error(const IterationTooLong& error, const net::PlatformSpec& platform,
                                const std::string& file, const std::string& path);

/// The sharing solver `simulate` runs `plans` with: the platform's when it
/// names one, else SimGrid's full solver where a dense run pushes to and
/// pulls from more parameter servers than there are workers (the lazy one
/// ends some pulls early there, platforms/README.md; the full one costs no
/// more), and the lazy one otherwise: on rings and allgathers the full one
/// is 2-8 times slower, on the trees' streams 10-20% faster (README.md,
/// Speed), so a run mixing them is better off lazy.
net::SharingSolver choose_solver(const net::PlatformSpec& platform,
                                 const std::vector<IterationPlan>& plans);

/// Creates the SimGrid engine, builds the platform and runs each plan in
/// turn on it (one engine per process: this can be called once). Plans run
/// one after the other, so a dense baseline and a compressed run share a
/// platform without disturbing each other. Throws IterationTooLong when an
/// iteration of any plan took more than kLongestSeconds of simulated time.
/// The platform's solver `automatic` becomes choose_solver's.
std::vector<RunResult> simulate(const net::PlatformSpec& platform,
                                const std::vector<IterationPlan>& plans,
                                const ProgressCallback& progress = {},
                                std::vector<TimelineEvent>* timeline = nullptr);

} // namespace gcsim::training
