#include "compressors/tensor.hpp"

#include <stdexcept>

namespace gcsim::compress {

std::size_t tensor_size(const std::vector<std::size_t>& shape) {
  std::size_t elements = 1;
  for (const std::size_t extent : shape)
    elements *= extent;
  return elements;
}

LayerLayout::LayerLayout(std::vector<Layer> layers) : layers_(std::move(layers)) {
  if (layers_.empty()) {
    throw std::invalid_argument("layer layout: no layers");
  }
  for (const Layer& layer : layers_) {
    if (layer.size == 0) {
      throw std::invalid_argument("layer layout: layer '" + layer.name + "' has no elements");
    }
    if (layer.shape && tensor_size(*layer.shape) != layer.size)
      throw std::invalid_argument("layer layout: layer '" + layer.name + "' has " +
                                  std::to_string(layer.size) + " elements, but its shape holds " +
                                  std::to_string(tensor_size(*layer.shape)));
    if (layer.offset != total_) {
      throw std::invalid_argument("layer layout: layer '" + layer.name +
                                  "' does not start where the previous one ends");
    }
    total_ += layer.size;
  }
}

LayerLayout LayerLayout::from_sizes(const std::vector<std::size_t>& sizes) {
  std::vector<Layer> layers;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    layers.push_back(Layer{"layer" + std::to_string(i), offset, sizes[i], {}});
    offset += sizes[i];
  }
  return LayerLayout(std::move(layers));
}

bool LayerLayout::operator==(const LayerLayout& other) const {
  if (layers_.size() != other.layers_.size()) {
    return false;
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    if (layers_[i].offset != other.layers_[i].offset || layers_[i].size != other.layers_[i].size ||
        layers_[i].shape != other.layers_[i].shape) {
      return false;
    }
  }
  return true;
}

} // namespace gcsim::compress
