#include "compressors/detail/momentum.hpp"

namespace gcsim::compress::detail {

void LocalMomentum::accumulate(IterationWork& work, int worker, const float* gradient,
                               const char* label) {
  const auto workers = static_cast<std::size_t>(work.P);
  if (state_.size() != workers)
    state_.assign(workers, std::vector<float>(work.d, 0.0f));
  const auto w = static_cast<std::size_t>(worker);
  float* v = work.acc[w];
  const float* g = gradient;
  std::vector<float>& u = state_[w];
  for (std::size_t j = 0; j < work.d; ++j) {
    const float next = factor_ * u[j] + g[j];
    v[j] += next - g[j];
    u[j] = next;
  }
  work.add_kernel(worker, KernelKind::dense_add, 2 * work.d, 0, 0, 0, label);
}

void LocalMomentum::clear_at(int worker, const std::vector<Index>& indices) {
  std::vector<float>& u = state_[static_cast<std::size_t>(worker)];
  for (const Index j : indices)
    u[j] = 0.0f;
}

} // namespace gcsim::compress::detail
