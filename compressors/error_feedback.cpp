#include "compressors/error_feedback.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gcsim::compress {

void ErrorFeedback::ensure_size(std::size_t d) {
  if (residual_.empty()) {
    residual_.assign(d, 0.0f);
    return;
  }
  if (residual_.size() != d) {
    throw std::invalid_argument("error feedback: memory holds " + std::to_string(residual_.size()) +
                                " values, gradient has " + std::to_string(d));
  }
}

void ErrorFeedback::accumulate(const float* g, bool keep) {
  if (!keep) {
    std::copy(g, g + residual_.size(), residual_.begin());
    return;
  }
  for (std::size_t i = 0; i < residual_.size(); ++i) {
    residual_[i] += g[i];
  }
}

void ErrorFeedback::clear() {
  std::fill(residual_.begin(), residual_.end(), 0.0f);
}

} // namespace gcsim::compress
