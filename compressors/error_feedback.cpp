#include "compressors/error_feedback.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gcsim::compress {

bool ResidualView::operator==(const ResidualView& other) const {
  return size_ == other.size_ && std::equal(begin(), end(), other.begin());
}

ErrorFeedback::ErrorFeedback(const ErrorFeedback& other)
    : owned_(other.data_, other.data_ + other.size_), data_(owned_.data()), size_(other.size_) {}

ErrorFeedback& ErrorFeedback::operator=(const ErrorFeedback& other) {
  if (this != &other) {
    owned_.assign(other.data_, other.data_ + other.size_);
    data_ = owned_.data();
    size_ = other.size_;
  }
  return *this;
}

void ErrorFeedback::use_storage(float* storage, std::size_t d) {
  owned_.clear();
  owned_.shrink_to_fit();
  data_ = storage;
  size_ = d;
}

void ErrorFeedback::ensure_size(std::size_t d) {
  if (size_ == 0) {
    owned_.assign(d, 0.0f);
    data_ = owned_.data();
    size_ = d;
    return;
  }
  if (size_ != d) {
    throw std::invalid_argument("error feedback: memory holds " + std::to_string(size_) +
                                " values, gradient has " + std::to_string(d));
  }
}

void ErrorFeedback::accumulate(const float* g, bool keep) {
  if (!keep) {
    std::copy(g, g + size_, data_);
    return;
  }
  for (std::size_t i = 0; i < size_; ++i) {
    data_[i] += g[i];
  }
}

void ErrorFeedback::clear() {
  std::fill(data_, data_ + size_, 0.0f);
}

} // namespace gcsim::compress
