// Worker-side momentum for compressors that keep it locally (DGC's momentum
// correction, Sketched-SGD's momentum with error accumulation).
#pragma once

#include "compressors/compressor.hpp"

#include <vector>

namespace gcsim::compress::detail {

// Each worker keeps u = m*u + g, and its accumulator (the error-feedback
// memory) gains u instead of g; momentum is cleared where the update was
// applied (momentum factor masking). A factor of 0 turns it off.
class LocalMomentum {
public:
  explicit LocalMomentum(double factor) : factor_(static_cast<float>(factor)) {}

  bool active() const { return factor_ > 0.0f; }

  // work.acc[worker] holds residual + g, g the worker's raw `gradient`; turns
  // it into residual + u, and charges the worker a dense_add kernel labelled
  // `label`.
  void accumulate(IterationWork& work, int worker, const float* gradient, const char* label);

  // Clears the worker's momentum at `indices`.
  void clear_at(int worker, const std::vector<Index>& indices);

private:
  float factor_;
  std::vector<std::vector<float>> state_; // [worker][d], sized on first use
};

} // namespace gcsim::compress::detail
