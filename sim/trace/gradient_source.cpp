#include "sim/trace/gradient_source.hpp"

#include <algorithm>
#include <stdexcept>

namespace gcsim::trace {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace

GradientSource::GradientSource(Trace trace, int64_t workers, uint64_t seed, int64_t block_elements)
    : trace_(std::move(trace)), workers_(workers), seed_(seed), block_elements_(block_elements),
      method_(workers <= trace_.captured_workers() ? "captured" : "blockwise_shuffle") {
  if (workers_ < 1)
    throw std::invalid_argument("GradientSource: at least one worker is needed");
  if (block_elements_ < 1)
    throw std::invalid_argument("GradientSource: blocks hold at least one element");
  if (!trace_.manifest().has_tensors)
    throw InputError(trace_.manifest().file, "/has_tensors",
                     "a gradient source needs a trace with tensors; this one holds statistics "
                     "only");
}

nlohmann::json GradientSource::describe() const {
  nlohmann::json description = {{"method", method_},
                                {"trace", trace_.manifest().folder.string()},
                                {"captured_workers", trace_.captured_workers()},
                                {"workers", workers_},
                                {"iterations", trace_.manifest().iterations}};
  if (method_ != "captured") {
    description["seed"] = seed_;
    description["block_elements"] = block_elements_;
  }
  return description;
}

int64_t GradientSource::source_worker(size_t iteration_index, int64_t worker, int64_t block) const {
  const int64_t captured = trace_.captured_workers();
  if (worker < captured)
    return worker;
  const auto group = static_cast<uint64_t>(worker / captured);
  const int64_t rank = worker % captured;
  uint64_t key = splitmix64(seed_ ^ splitmix64(iteration_index ^ splitmix64(group)));
  uint64_t offset =
      splitmix64(key ^ static_cast<uint64_t>(block)) % static_cast<uint64_t>(captured);
  return (rank + static_cast<int64_t>(offset)) % captured;
}

void GradientSource::gradient(size_t iteration_index, int64_t worker,
                              std::vector<float>& out) const {
  if (worker < 0 || worker >= workers_)
    throw std::out_of_range("GradientSource::gradient: worker " + std::to_string(worker) +
                            " outside 0.." + std::to_string(workers_ - 1));
  const int64_t captured = trace_.captured_workers();
  if (worker < captured) {
    trace_.read_gradient(iteration_index, worker, out);
    return;
  }
  // Every captured file of the iteration is mapped; only the blocks taken
  // from each are paged in, and all are unmapped on return.
  std::vector<MappedNpy> sources;
  sources.reserve(static_cast<size_t>(captured));
  for (int64_t w = 0; w < captured; ++w)
    sources.push_back(trace_.map_gradient(iteration_index, w));
  const auto total = static_cast<size_t>(trace_.total_params());
  out.resize(total);
  const auto block_size = static_cast<size_t>(block_elements_);
  for (size_t first = 0, block = 0; first < total; first += block_size, ++block) {
    size_t count = std::min(block_size, total - first);
    const MappedNpy& source = sources[static_cast<size_t>(
        source_worker(iteration_index, worker, static_cast<int64_t>(block)))];
    size_t bad = source.read_float32(first, count, out.data() + first);
    if (bad != MappedNpy::npos)
      trace_.fail_non_finite(source, bad, out[bad]);
  }
}

void GradientSource::weights(size_t iteration_index, std::vector<float>& out) const {
  trace_.read_weights(iteration_index, out);
}

} // namespace gcsim::trace
