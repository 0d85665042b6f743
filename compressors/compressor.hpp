// The one interface every compressor implements, and what it reports.
//
// A whole iteration over all P workers is one call, because several algorithms
// need rounds that depend on every worker (a leader's indices, a second round at
// the union of sketched heavy hitters, a tree merge). The call returns the update
// every worker applies, the ordered communication steps with real byte counts,
// and per worker the kernels it ran with their sizes; it updates each worker's
// error-feedback memory in place.
#pragma once

#include "compressors/error_feedback.hpp"
#include "compressors/summation_order.hpp"
#include "compressors/tensor.hpp"
#include "compressors/topk.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::compress {

// The collectives and point-to-point patterns compressors ask for. The simulator
// decomposes each into the messages its algorithm really sends.
enum class CommKind {
  allreduce_ring,               // bytes[i]: the buffer (same for all); 2(P-1) steps of bytes/P
  allreduce_recursive_doubling, // bytes[i]: the buffer (same for all); log2 P exchanges
  allgather,                    // bytes[i]: participant i's block (all equal)
  allgatherv,                   // bytes[i]: participant i's block (may differ)
  broadcast,                    // from `root`; bytes[i]: the root's buffer (same for all)
  reduce,                       // to `root`; bytes[i]: the buffer (same for all)
  gtopk_merge_round,            // `transfers`: one (src -> dst) message per merging pair
  ps_push,                      // `transfers`: worker -> parameter server (`root`)
  ps_pull,                      // `transfers`: parameter server (`root`) -> worker
  allreduce_tree,               // bytes[i]: the buffer (same for all); NCCL's double binary tree
  // bytes[i]: the buffer (same for all), reduced by whatever allreduce the
  // cluster runs (the scenario's training.allreduce): for algorithms that
  // ask for an allreduce without naming one.
  allreduce,
};

struct Transfer {
  int src = 0;
  int dst = 0;
  std::uint64_t bytes = 0;
};

struct CommStep {
  CommKind kind = CommKind::allreduce_ring;
  std::string label;                // human-readable, e.g. "allgather indices"
  int root = -1;                    // broadcast/reduce root, parameter server rank; -1 if none
  std::vector<int> participants;    // ranks taking part, ascending
  std::vector<std::uint64_t> bytes; // per participant (same order), see CommKind
  std::vector<Transfer> transfers;  // point-to-point kinds only

  bool involves(int rank) const;
};

// Compression kernels, from the fixed list the cost model knows.
enum class KernelKind {
  topk_select,      // n scanned, k kept
  threshold_select, // n scanned, k = kept
  l2_norm,          // n
  sample_threshold, // n, k = samples
  sketch_insert,    // n inserted, rows, cols
  sketch_query,     // n coordinates queried, rows
  gather,           // n
  scatter_add,      // n
  sparse_pack,      // n = k pairs packed
  sparse_unpack,    // n = k pairs unpacked
  dense_add,        // n
  dense_scale,      // n
  fp16_cast,        // n
  low_rank_product, // n = elements of the matrix, k = columns of the thin factor (the rank)
};

struct KernelRun {
  KernelKind kind = KernelKind::dense_add;
  std::uint64_t n = 0;
  std::uint64_t k = 0;
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
  // The kernel runs after every step with index < before_step has finished on
  // this worker and before step `before_step` starts (== steps.size(): at the end).
  std::size_t before_step = 0;
  std::string label;
};

struct IterationContext {
  std::uint64_t iteration = 0; // t, from 0
  std::size_t workers = 0;     // P; must equal the number of gradients passed
  std::uint64_t seed = 0;      // the scenario seed
};

struct IterationResult {
  std::vector<float> update;                      // d values every worker applies (averaged)
  std::vector<Index> support;                     // ascending indices the update was applied at
  std::vector<CommStep> steps;                    // ordered, shared by all workers
  std::vector<std::vector<KernelRun>> kernels;    // [worker] in the order run
  nlohmann::json info = nlohmann::json::object(); // algorithm facts (leader, threshold...)

  // Steps (indices into `steps`) this rank takes part in, in order.
  std::vector<std::size_t> steps_of(int rank) const;
  // Payload this rank contributes over all steps: bytes[i] of the collectives it
  // takes part in (for a broadcast only the root's), plus the point-to-point
  // messages it sends. The traffic a collective really generates (e.g. 2(P-1)/P
  // of the buffer per rank for a ring allreduce) is the simulator's business.
  std::uint64_t bytes_sent_by(int rank) const;
  // support.size() / update.size()
  double density() const;
};

// What a compressor implementation sees (public for the implementations and
// their tests; the simulator never needs it). For worker w, acc[w] is its
// gradient plus residual (error-compensated); the implementation removes from it
// what was applied, and what remains is the worker's new residual. The raw
// gradients are not kept: each is seen once, by Compressor::absorb_gradient.
struct IterationWork {
  const WeightsView* weights = nullptr;
  IterationContext ctx;
  const LayerLayout* layout = nullptr;
  std::size_t d = 0;
  int P = 0;
  std::vector<float*> acc;
  IterationResult result;
  // How the cluster's allreduce adds the workers' values (see
  // Compressor::sum_as); null: in rank order.
  const SummationOrder* summation = nullptr;

  std::vector<int> all_ranks() const;
  CommStep& add_step(CommKind kind, std::string label, std::vector<int> participants,
                     std::vector<std::uint64_t> bytes, int root = -1);
  // Every rank takes part with the same byte count.
  CommStep& add_collective(CommKind kind, std::string label, std::uint64_t bytes, int root = -1);
  // Point-to-point step: every rank is a participant, bytes[i] = what rank i sends.
  CommStep& add_transfers(CommKind kind, std::string label, std::vector<Transfer> transfers,
                          int root = -1);
  void add_kernel(int worker, KernelKind kind, std::uint64_t n, std::uint64_t k = 0,
                  std::uint32_t rows = 0, std::uint32_t cols = 0, std::string label = {});
  void add_kernel_all(KernelKind kind, std::uint64_t n, std::uint64_t k = 0, std::uint32_t rows = 0,
                      std::uint32_t cols = 0, const std::string& label = {});
};

class Compressor {
public:
  virtual ~Compressor() = default;
  Compressor() = default;
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  virtual const std::string& name() const = 0;
  // Every parameter with the value in force (defaults filled in).
  virtual const nlohmann::json& params() const = 0;
  // Whether run_iteration needs the weights (so callers read them only then).
  virtual bool needs_weights() const { return false; }
  // Whether the algorithm may run on one bucket of layers on its own, so a
  // simulator can start it while the backward pass still computes earlier
  // layers. False where it selects over the whole model at once (DEFT's
  // partitions, gs-SGD's and Sketched-SGD's sketch, gTop-k's merge, IWP's
  // global level).
  virtual bool can_run_per_bucket() const { return false; }
  // Throws ParameterError if a parameter cannot hold on P workers (a rank
  // that names a worker); begin_iteration checks it too, this lets a caller
  // refuse it before any iteration.
  virtual void check_workers(int /*P*/) const {}
  // Throws std::invalid_argument where it cannot run on these layers (as
  // its first iteration would: PowerSGD on layers without a shape), so that
  // a caller can refuse it before any work.
  virtual void check_layout(const LayerLayout& /*layout*/) const {}
  // The parameter that counts the first iterations sent dense before the
  // compressor compresses (IWP's warm-up, PowerSGD's start_iteration), empty
  // where there is none; those iterations say "warmup" in their result's
  // info. A caller can refuse a run that would never compress.
  virtual std::string_view dense_warmup_parameter() const { return {}; }
  // Dense state kept per worker besides its error-feedback memory (DGC's and
  // Sketched-SGD's local momentum), in floats per worker for a gradient of d
  // values; 0 when there is none.
  virtual std::size_t worker_state_floats(std::size_t /*d*/) const { return 0; }
  // Floats one iteration holds at once besides that state and the gradients
  // (a Count Sketch's table), for a gradient of d values; lets a caller refuse
  // a table that cannot fit before allocating it.
  virtual std::size_t scratch_floats(std::size_t /*d*/) const { return 0; }
  // Keeps that state in an unlinked scratch file in `dir` instead of in
  // memory: slower, same results. Call before the first iteration. Throws
  // std::runtime_error if no file can be created there.
  virtual void spill_worker_state(const std::string& /*dir*/) {}
  // How the cluster's allreduce adds the workers' values (the algorithm
  // behind CommKind::allreduce): compressors whose sums round (fp16, bf16)
  // round them in that order; in rank order unless set. Call before the
  // first iteration; begin_iteration checks it against P.
  void sum_as(SummationOrder order);

  // One iteration over all P workers. grads[w] is worker w's raw gradient; all
  // share one layout. weights may be null except for compressors that need them
  // (iwp). memories[w] is worker w's error-feedback memory (sized on first use).
  // Compressors keep state across calls (momentum, thresholds, partitions), so
  // call with t = 0, 1, 2... on one object per simulated training run.
  // Throws std::invalid_argument on inconsistent inputs or NaN gradients.
  IterationResult run_iteration(const std::vector<GradientView>& grads, const WeightsView* weights,
                                const IterationContext& ctx, std::vector<ErrorFeedback>& memories);
  // The same iteration streamed, in three calls: begin_iteration, then
  // add_gradient for workers 0..P-1 in order, each view needed only during
  // its call (so P gradients can pass through one buffer and memory holds P
  // residuals, not P gradients too), then finish_iteration. One pass over
  // the workers can feed several compressors (one per bucket). `memories`
  // and `weights` must stay valid until finish_iteration. Results equal the
  // vector form's. A gradient add_gradient refuses (NaN, another layout) has
  // not touched its worker's memory, so the same worker may be added again;
  // the workers added before it hold their gradients in their memories, so
  // an iteration begun afresh (or run_iteration called again after a throw)
  // must start from memories saved before the first call.
  void begin_iteration(const WeightsView* weights, const IterationContext& ctx,
                       std::vector<ErrorFeedback>& memories);
  void add_gradient(const GradientView& gradient);
  IterationResult finish_iteration();

protected:
  virtual void iterate(IterationWork& work) = 0;
  // Called once per worker, in worker order, after its raw gradient has been
  // added to acc[worker] and before iterate(): the one chance to use the raw
  // gradient (local momentum does). The gradient is gone afterwards.
  virtual void absorb_gradient(IterationWork& /*work*/, int /*worker*/, const float* /*gradient*/) {
  }
  // Whether memories carry residuals to the next iteration (the error_feedback parameter).
  virtual bool error_feedback() const = 0;
  // Whether iteration `iteration` adds each worker's residual to its
  // gradient on the device (a dense add, charged): with error feedback,
  // unless the algorithm's iterations before it compresses add none
  // (PowerSGD's plain allreduces).
  virtual bool compensates(std::uint64_t /*iteration*/) const { return error_feedback(); }

private:
  // The iteration between begin_iteration and finish_iteration.
  struct Pending {
    IterationWork work;
    LayerLayout layout; // worker 0's; every other worker must match it
    std::vector<ErrorFeedback>* memories = nullptr;
    std::size_t added = 0;
  };
  std::unique_ptr<Pending> pending_;
  std::unique_ptr<SummationOrder> summation_;
};

const char* to_string(CommKind kind);
const char* to_string(KernelKind kind);

// k = max(1, floor(density * d)) (floor_count): every sparsifier but IWP
// sends at least one element (IWP's level is estimated, so it may keep none).
std::size_t k_for_density(std::size_t d, double density);

} // namespace gcsim::compress
