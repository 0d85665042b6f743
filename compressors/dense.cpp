// dense: no compression, an allreduce of the whole gradient (the baseline), with the
// run's algorithm.
#include "compressors/detail/base.hpp"

#include <numeric>

namespace gcsim::compress::detail {
namespace {

class Dense final : public CompressorBase {
public:
  using CompressorBase::CompressorBase;

private:
  void iterate(IterationWork& work) override {
    work.add_collective(CommKind::allreduce, "allreduce gradient", work.d * 4);
    work.add_kernel_all(KernelKind::dense_scale, work.d, 0, 0, 0, "average");
    const float inv_p = 1.0f / static_cast<float>(work.P);
    std::vector<float>& u = work.result.update;
    for (float* acc : work.acc) {
      for (std::size_t j = 0; j < work.d; ++j) {
        u[j] += acc[j];
        acc[j] = 0.0f;
      }
    }
    for (float& v : u) {
      v *= inv_p;
    }
    work.result.support.resize(work.d);
    std::iota(work.result.support.begin(), work.result.support.end(), Index{0});
  }
};

} // namespace

CompressorInfo dense_info() {
  return {"dense",
          "no compression: allreduce of all d floats (the scenario's `training.allreduce`: ring by "
          "default)",
          "data-parallel SGD baseline",
          {}};
}

std::unique_ptr<Compressor> make_dense(const nlohmann::json& resolved) {
  return std::make_unique<Dense>("dense", resolved);
}

} // namespace gcsim::compress::detail
