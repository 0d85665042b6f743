// Error-feedback memory of one worker (the residual of what was not applied).
#pragma once

#include <cstddef>
#include <vector>

namespace gcsim::compress {

// A residual's values, borrowed from its memory.
class ResidualView {
public:
  ResidualView(const float* data, std::size_t size) : data_(data), size_(size) {}
  const float* data() const { return data_; }
  std::size_t size() const { return size_; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + size_; }
  float operator[](std::size_t i) const { return data_[i]; }
  // Element-wise ==, as std::vector's.
  bool operator==(const ResidualView& other) const;
  bool operator!=(const ResidualView& other) const { return !(*this == other); }

private:
  const float* data_;
  std::size_t size_;
};

// The residual is kept separately from the compressor, one per worker, as in
// GRACE. Compressors fold the worker's new gradient into it (`accumulate`), read
// the sum, and remove what was applied; what remains carries to the next
// iteration. With error feedback off the compressor clears it at the end of the
// iteration, so the memory is then only scratch space.
//
// The values live in the memory's own vector, or in storage the caller
// provides (use_storage: e.g. a part of a file mapping, so that P residuals
// larger than memory can live in a scratch file; see ScratchMapping).
class ErrorFeedback {
public:
  ErrorFeedback() = default;
  explicit ErrorFeedback(std::size_t d) : owned_(d, 0.0f), data_(owned_.data()), size_(d) {}
  // A copy owns its values, wherever the original keeps them.
  ErrorFeedback(const ErrorFeedback& other);
  ErrorFeedback& operator=(const ErrorFeedback& other);
  ErrorFeedback(ErrorFeedback&& other) noexcept = default;
  ErrorFeedback& operator=(ErrorFeedback&& other) noexcept = default;
  ~ErrorFeedback() = default;

  // Keeps the residual in `storage`: d zeros (or the residual to continue
  // from) that outlive this memory. Replaces what the memory held.
  void use_storage(float* storage, std::size_t d);

  std::size_t size() const { return size_; }
  ResidualView residual() const { return {data_, size_}; }
  // Sizes the memory to d zeros on first use; throws if it holds another size.
  void ensure_size(std::size_t d);
  // residual += g (or residual = g when `keep` is false), g of size size().
  void accumulate(const float* g, bool keep);
  float* data() { return data_; }
  void clear();

private:
  std::vector<float> owned_; // empty when the storage is borrowed
  float* data_ = nullptr;    // owned_.data() or the borrowed storage
  std::size_t size_ = 0;
};

} // namespace gcsim::compress
