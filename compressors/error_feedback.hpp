// Error-feedback memory of one worker (the residual of what was not applied).
#pragma once

#include <cstddef>
#include <vector>

namespace gcsim::compress {

// The residual is kept separately from the compressor, one per worker, as in
// GRACE. Compressors fold the worker's new gradient into it (`accumulate`), read
// the sum, and remove what was applied; what remains carries to the next
// iteration. With error feedback off the compressor clears it at the end of the
// iteration, so the memory is then only scratch space.
class ErrorFeedback {
public:
  ErrorFeedback() = default;
  explicit ErrorFeedback(std::size_t d) : residual_(d, 0.0f) {}

  std::size_t size() const { return residual_.size(); }
  const std::vector<float>& residual() const { return residual_; }
  // Sizes the memory to d zeros on first use; throws if it holds another size.
  void ensure_size(std::size_t d);
  // residual += g (or residual = g when `keep` is false), g of size size().
  void accumulate(const float* g, bool keep);
  float* data() { return residual_.data(); }
  void clear();

private:
  std::vector<float> residual_;
};

} // namespace gcsim::compress
