// Gradients and weights as flat float buffers with a layer layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gcsim::compress {

// One layer inside a flattened model vector: a parameter tensor, or a
// block of values whose tensors the gradient's source does not name (a
// layer spec's module without "tensors").
struct Layer {
  std::string name;
  std::size_t offset = 0;
  std::size_t size = 0;
  // The tensor's shape where the source knows it (a scalar's is empty).
  // Low-rank compressors need it.
  std::optional<std::vector<std::size_t>> shape;
};

// The elements of a tensor of this shape (1 for a scalar's, empty).
std::size_t tensor_size(const std::vector<std::size_t>& shape);

// The layers of a model in order, contiguous and covering [0, total()).
class LayerLayout {
public:
  LayerLayout() = default;
  // Throws std::invalid_argument on an empty or zero-sized layer list.
  explicit LayerLayout(std::vector<Layer> layers);
  // Convenience: layers named "layer0", "layer1"... of the given sizes, packed in order.
  static LayerLayout from_sizes(const std::vector<std::size_t>& sizes);

  const std::vector<Layer>& layers() const { return layers_; }
  std::size_t size() const { return layers_.size(); }
  const Layer& operator[](std::size_t i) const { return layers_[i]; }
  std::size_t total() const { return total_; }
  bool operator==(const LayerLayout& other) const;

private:
  std::vector<Layer> layers_;
  std::size_t total_ = 0;
};

// A read-only view of one worker's flattened gradient (or of the weights).
// The viewed memory and layout must outlive the view.
struct GradientView {
  const float* data = nullptr;
  const LayerLayout* layout = nullptr;

  std::size_t size() const { return layout == nullptr ? 0 : layout->total(); }
};
using WeightsView = GradientView;

} // namespace gcsim::compress
