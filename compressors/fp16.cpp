// fp16: the dense gradient sent in half precision, as PyTorch DDP's
// fp16_compress_hook does (and GRACE's FP16 compressor): 2 bytes an element.
#include "compressors/detail/base.hpp"
#include "compressors/float16.hpp"

#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>

namespace gcsim::compress::detail {
namespace {

// A value past float16's range would be sent as infinity, and every
// worker's model would take it: refused, with the value.
[[noreturn]] void refuse_overflow(std::size_t worker, std::uint64_t iteration, float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(value));
  throw std::invalid_argument("fp16: an element of worker " + std::to_string(worker) +
                              "'s gradient at iteration " + std::to_string(iteration) + " is " +
                              text +
                              ", past float16's largest value 65504: cast before the division "
                              "by P (as fp16_compress_hook does), it would be sent as infinity");
}

class Fp16 final : public CompressorBase {
public:
  using CompressorBase::CompressorBase;

  // DDP runs its communication hook on each bucket as the backward pass fills it.
  bool can_run_per_bucket() const override { return true; }

private:
  void iterate(IterationWork& work) override {
    // The hook's buffer.to(float16).div_(P), then an allreduce that sums in
    // float16, then the copy back into the float32 gradient. The kernels are
    // priced by the bytes they move: a cast reads 4 and writes 2 bytes an
    // element (either way round, 6); the division in float16 moves 4, as a
    // float32 scaling of half as many elements.
    work.add_kernel_all(KernelKind::fp16_cast, work.d, 0, 0, 0, "cast to float16");
    work.add_kernel_all(KernelKind::dense_scale, (work.d + 1) / 2, 0, 0, 0,
                        "divide by P in float16");
    work.add_collective(CommKind::allreduce, "allreduce float16 gradient", work.d * 2);
    work.add_kernel_all(KernelKind::fp16_cast, work.d, 0, 0, 0, "cast back to float32");

    const float p = static_cast<float>(work.P);
    std::vector<float>& sum = work.result.update;
    std::uint64_t flushed = 0;
    for (std::size_t w = 0; w < work.acc.size(); ++w) {
      float* acc = work.acc[w];
      for (std::size_t j = 0; j < work.d; ++j) {
        const float half = round_to_half(acc[j]);
        if (std::isinf(half))
          refuse_overflow(w, work.ctx.iteration, acc[j]);
        const float share = round_to_half(half / p);
        if (share == 0.0F && acc[j] != 0.0F)
          ++flushed;
        // A float16 reduction rounds every partial sum (here in rank order;
        // a ring adds in another order, within a rounding of each sum).
        sum[j] = w == 0 ? share : round_to_half(sum[j] + share);
        acc[j] = 0.0F; // no memory: what the rounding lost is gone
      }
    }
    for (std::size_t j = 0; j < work.d; ++j)
      if (std::isinf(sum[j]))
        throw std::invalid_argument("fp16: the float16 sum of the workers' shares at iteration " +
                                    std::to_string(work.ctx.iteration) +
                                    " is past float16's largest value 65504");
    work.result.support.resize(work.d);
    std::iota(work.result.support.begin(), work.result.support.end(), Index{0});
    // Nonzero elements whose share (g / P in float16) underflowed to 0,
    // summed over the workers.
    work.result.info["flushed_to_zero"] = flushed;
  }
};

} // namespace

CompressorInfo fp16_info() {
  return {"fp16",
          "the dense gradient in half precision: every worker casts it to float16 and divides "
          "by P, the allreduce (the scenario's `training.allreduce`) sums 2-byte values rounding "
          "every partial sum, the sum is cast back; no memory",
          "PyTorch DDP's fp16_compress_hook; GRACE's FP16 compressor (Xu et al., ICDCS 2021)",
          {}};
}

std::unique_ptr<Compressor> make_fp16(const nlohmann::json& resolved) {
  return std::make_unique<Fp16>("fp16", resolved);
}

} // namespace gcsim::compress::detail
