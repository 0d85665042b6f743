#include "compressors/detail/momentum.hpp"

#include <algorithm>

namespace gcsim::compress::detail {
namespace {

// u = m*u + g, and v (which already holds residual + g) gains m*u. Adding
// u - g instead would add m*u rounded twice (its low bits lost wherever g is
// much the larger) and turn an infinite g into NaN (inf - inf).
void update(float factor, float* u, float* v, const float* g, std::size_t d) {
  for (std::size_t j = 0; j < d; ++j) {
    const float carried = factor * u[j];
    v[j] += carried;
    u[j] = carried + g[j];
  }
}

} // namespace

LocalMomentum::~LocalMomentum() {
  // The file goes with this object; an error of a write nobody needs any
  // more is of no consequence here.
  try {
    wait_io();
  } catch (...) {
  }
}

void LocalMomentum::wait_io() {
  if (reading_.valid())
    reading_.get();
  if (writing_.valid())
    writing_.get();
}

void LocalMomentum::spill_to(const std::string& dir) {
  wait_io();
  file_ = std::make_unique<ScratchFile>(dir);
  state_.clear();
  clears_.clear();
  d_ = 0;
}

void LocalMomentum::shape(std::size_t workers, std::size_t d) {
  if (file_ == nullptr) {
    if (state_.size() != workers || d_ != d)
      state_.assign(workers, std::vector<float>(d, 0.0f));
    d_ = d;
    return;
  }
  if (clears_.size() == workers && d_ == d)
    return;
  wait_io();
  file_->clear();
  buffers_[0].assign(d, 0.0f);
  buffers_[1].assign(d, 0.0f);
  clears_.assign(workers, {});
  stored_.assign(workers, false);
  d_ = d;
}

void LocalMomentum::accumulate(IterationWork& work, int worker, const float* gradient,
                               const char* label) {
  const auto workers = static_cast<std::size_t>(work.P);
  shape(workers, work.d);
  const auto w = static_cast<std::size_t>(worker);
  float* v = work.acc[w];
  if (file_ == nullptr) {
    update(factor_, state_[w].data(), v, gradient, work.d);
    work.add_kernel(worker, KernelKind::dense_add, 2 * work.d, 0, 0, 0, label);
    return;
  }
  const std::size_t d = work.d;
  const std::uint64_t row = static_cast<std::uint64_t>(d) * sizeof(float);
  // This worker's row: prefetched by the previous call when workers come in
  // order (they always do), read here otherwise.
  const bool prefetched = reading_.valid() && read_row_ == w;
  if (reading_.valid())
    reading_.get();
  std::vector<float>& u = buffers_[current_];
  if (!stored_[w]) {
    std::fill(u.begin(), u.end(), 0.0f);
  } else if (!prefetched) {
    if (writing_.valid()) // it may be this very row (P = 1)
      writing_.get();
    file_->read(w * row, u.data(), d);
  }
  for (const Index j : clears_[w])
    u[j] = 0.0f;
  clears_[w].clear();
  update(factor_, u.data(), v, gradient, d);
  // The other buffer is free once the previous row is written; then this row
  // is written from this buffer and the next row read into the other one.
  if (writing_.valid())
    writing_.get();
  ScratchFile* file = file_.get();
  writing_ =
      std::async(std::launch::async, [file, &u, w, row, d] { file->write(w * row, u.data(), d); });
  stored_[w] = true;
  current_ = 1 - current_;
  const std::size_t next = (w + 1) % workers;
  if (stored_[next] && next != w) {
    std::vector<float>& into = buffers_[current_];
    read_row_ = next;
    reading_ = std::async(std::launch::async,
                          [file, &into, next, row, d] { file->read(next * row, into.data(), d); });
  }
  work.add_kernel(worker, KernelKind::dense_add, 2 * work.d, 0, 0, 0, label);
}

void LocalMomentum::clear_at(int worker, const std::vector<Index>& indices) {
  const auto w = static_cast<std::size_t>(worker);
  if (file_ != nullptr) {
    std::vector<Index>& pending = clears_[w];
    pending.insert(pending.end(), indices.begin(), indices.end());
    return;
  }
  std::vector<float>& u = state_[w];
  for (const Index j : indices)
    u[j] = 0.0f;
}

} // namespace gcsim::compress::detail
