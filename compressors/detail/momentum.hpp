// Worker-side momentum for compressors that keep it locally (DGC's momentum
// correction, Sketched-SGD's momentum with error accumulation).
#pragma once

#include "compressors/compressor.hpp"
#include "compressors/scratch_file.hpp"

#include <future>
#include <memory>
#include <string>
#include <vector>

namespace gcsim::compress::detail {

// Each worker keeps u = m*u + g, and its accumulator (the error-feedback
// memory) gains u instead of g; momentum is cleared where the update was
// applied (momentum factor masking). A factor of 0 turns it off.
//
// The P momenta are as large as the P residuals. They are used in one
// pattern only: once per iteration each worker's is read and rewritten
// whole (accumulate, in worker order), then cleared at a few indices
// (clear_at). So they can live in a scratch file instead of memory
// (spill_to): accumulate takes the worker's row (read ahead into a
// buffer), applies the clears recorded for it since, updates it and hands
// it to be written back; every file access is a whole row, in order. The values, and so the
// results, are the same as in memory: nothing reads a momentum between a clear and that worker's
// next accumulate.
class LocalMomentum {
public:
  explicit LocalMomentum(double factor) : factor_(static_cast<float>(factor)) {}
  ~LocalMomentum();
  LocalMomentum(const LocalMomentum&) = delete;
  LocalMomentum& operator=(const LocalMomentum&) = delete;

  bool active() const { return factor_ > 0.0f; }

  // Keeps the momenta in an unlinked scratch file in `dir` from now on.
  // Call before the first accumulate; throws std::runtime_error if no file
  // can be created there.
  void spill_to(const std::string& dir);
  bool spilled() const { return file_ != nullptr; }

  // work.acc[worker] holds residual + g, g the worker's raw `gradient`; turns
  // it into residual + u, and charges the worker a dense_add kernel labelled
  // `label`.
  void accumulate(IterationWork& work, int worker, const float* gradient, const char* label);

  // Clears the worker's momentum at `indices`.
  void clear_at(int worker, const std::vector<Index>& indices);

private:
  // Sizes the state for `workers` momenta of d values (zeros) when it holds another shape.
  void shape(std::size_t workers, std::size_t d);

  float factor_;
  std::size_t d_ = 0;
  std::vector<std::vector<float>> state_; // in memory: [worker][d], sized on first use
  // Spilled: worker w's momentum is the file's row w (d floats);
  // `clears_[w]` the indices cleared since worker w's last accumulate;
  // `stored_[w]` whether its row was written. Two buffers: while one row is
  // updated, the row before it is written and the row after it read on
  // other threads (`writing_`, `reading_`), so the disk works while the
  // simulator computes.
  void wait_io();
  std::unique_ptr<ScratchFile> file_;
  std::vector<float> buffers_[2];
  int current_ = 0;          // the buffer `reading_` fills, then accumulate updates
  std::size_t read_row_ = 0; // the row `reading_` reads (valid only while reading_ is)
  std::future<void> reading_;
  std::future<void> writing_;
  std::vector<std::vector<Index>> clears_;
  std::vector<bool> stored_;
};

} // namespace gcsim::compress::detail
