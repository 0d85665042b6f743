// fp16 and bf16: the dense gradient sent in a 16-bit float, as PyTorch DDP's
// fp16_compress_hook and bf16_compress_hook do (and GRACE's FP16
// compressor): 2 bytes an element.
#include "compressors/detail/base.hpp"
#include "compressors/float16.hpp"
#include "compressors/summation_order.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace gcsim::compress::detail {
namespace {

using RoundAll = void (*)(const float* x, std::size_t n, float* out);

struct Format {
  const char* compressor; // its name in a scenario
  const char* type;       // the 16-bit type, as torch names it
  const char* largest;    // its largest finite value, as text
  RoundAll round;         // float32s rounded to the nearest values of the type
};

constexpr Format kFloat16{"fp16", "float16", "65504", static_cast<RoundAll>(round_to_half)};
constexpr Format kBfloat16{"bf16", "bfloat16", "3.39e38", static_cast<RoundAll>(round_to_bfloat16)};

// Elements taken at a time, every worker's in turn: the shares and their
// sum stay in the cache between the roundings.
constexpr std::size_t kBlock = 4096;

// The name of the layer of `layout` that holds element `j`.
const std::string& layer_holding(const LayerLayout& layout, std::size_t j) {
  const auto& layers = layout.layers();
  const auto after = std::upper_bound(layers.begin(), layers.end(), j,
                                      [](std::size_t at, const Layer& l) { return at < l.offset; });
  return std::prev(after)->name;
}

// A value the cast rounds past the type's range would be sent as infinity,
// and every worker's model would take it: refused, with the value and where
// it lies.
[[noreturn]] void refuse_overflow(const Format& format, const IterationWork& work,
                                  std::size_t worker, std::size_t j, float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(value));
  throw std::invalid_argument(
      std::string(format.compressor) + ": worker " + std::to_string(worker) +
      "'s gradient in layer " + layer_holding(*work.layout, j) + " at simulated iteration " +
      std::to_string(work.ctx.iteration) + " holds " + text + ", which " + format.type +
      " rounds to infinity (past its largest value " + format.largest +
      "): cast before the division by P, as DDP's hook does, it would be sent as infinity");
}

// The 16-bit sum of the workers' shares of a block of elements, in the
// order a Sum gives, every partial sum rounded.
struct RoundedSum {
  const Format& format;
  IterationWork& work;
  std::vector<std::vector<float>> slots; // a block each, per level of nesting
  // Nonzero elements whose share (g / P in the type) underflowed to 0,
  // counted over the workers.
  std::uint64_t flushed = 0;

  // Writes the sum of the shares of elements [begin, begin + n) to `out`;
  // slots[level] and deeper are free.
  void add(const Sum& sum, std::size_t begin, std::size_t n, float* out, std::size_t level) {
    if (sum.rank >= 0) {
      share(sum.rank, begin, n, out);
      return;
    }
    add(sum.terms.front(), begin, n, out, level);
    float* term = slots[level].data();
    for (auto next = sum.terms.begin() + 1; next != sum.terms.end(); ++next) {
      add(*next, begin, n, term, level + 1);
      for (std::size_t i = 0; i < n; ++i)
        out[i] += term[i];
      format.round(out, n, out);
    }
  }

  // Worker `w`'s shares: its gradient cast to the type, divided by P in it.
  void share(int w, std::size_t begin, std::size_t n, float* out) {
    float* x = work.acc[static_cast<std::size_t>(w)] + begin;
    format.round(x, n, out);
    for (std::size_t i = 0; i < n; ++i)
      if (std::isinf(out[i]))
        refuse_overflow(format, work, static_cast<std::size_t>(w), begin + i, x[i]);
    const auto p = static_cast<float>(work.P);
    for (std::size_t i = 0; i < n; ++i)
      out[i] /= p;
    format.round(out, n, out);
    for (std::size_t i = 0; i < n; ++i)
      flushed += (out[i] == 0.0F) & (x[i] != 0.0F);
    std::fill(x, x + n, 0.0F); // no memory: what the rounding lost is gone
  }
};

class HalfPrecision final : public CompressorBase {
public:
  HalfPrecision(const Format& format, nlohmann::json params)
      : CompressorBase(format.compressor, std::move(params)), format_(format) {}

  // DDP runs its communication hook on each bucket as the backward pass fills it.
  bool can_run_per_bucket() const override { return true; }

private:
  void iterate(IterationWork& work) override {
    // The hook's buffer.to(type).div_(P), then an allreduce that sums in
    // the type, then the copy back into the float32 gradient. The kernels
    // are priced by the bytes they move: a cast reads 4 and writes 2 bytes
    // an element (either way round, 6; fp16_cast is the one calibrated);
    // the division in 16 bits moves 4, as a float32 scaling of half as many
    // elements.
    const std::string type = format_.type;
    work.add_kernel_all(KernelKind::fp16_cast, work.d, 0, 0, 0, "cast to " + type);
    work.add_kernel_all(KernelKind::dense_scale, (work.d + 1) / 2, 0, 0, 0,
                        "divide by P in " + type);
    work.add_collective(CommKind::allreduce, "allreduce " + type + " gradient", work.d * 2);
    work.add_kernel_all(KernelKind::fp16_cast, work.d, 0, 0, 0, "cast back to float32");

    // The allreduce's parts, each by its sum; the cast shares of a block of
    // elements are made as its sum reaches each worker, so every worker's
    // gradient is read once.
    const SummationOrder rank_order =
        work.summation ? SummationOrder{} : SummationOrder::in_rank_order(work.P);
    const SummationOrder& order = work.summation ? *work.summation : rank_order;
    RoundedSum rounded{format_, work, {}, 0};
    const std::size_t parts = order.parts.size();
    for (std::size_t part = 0; part < parts; ++part) {
      const Sum& sum = order.parts[part];
      rounded.slots.resize(static_cast<std::size_t>(sum.depth()), std::vector<float>(kBlock));
      const std::size_t last = work.d * (part + 1) / parts;
      for (std::size_t begin = work.d * part / parts; begin < last; begin += kBlock) {
        const std::size_t n = std::min(kBlock, last - begin);
        float* total = work.result.update.data() + begin;
        rounded.add(sum, begin, n, total, 0);
        for (std::size_t i = 0; i < n; ++i)
          if (std::isinf(total[i]))
            throw std::invalid_argument(
                std::string(format_.compressor) + ": the " + type +
                " sum of the workers' shares in layer " + layer_holding(*work.layout, begin + i) +
                " at simulated iteration " + std::to_string(work.ctx.iteration) + " rounds past " +
                type + "'s largest value " + format_.largest +
                " (each share within it): the allreduce would carry infinity");
      }
    }
    work.result.support.resize(work.d);
    std::iota(work.result.support.begin(), work.result.support.end(), Index{0});
    work.result.info["flushed_to_zero"] = rounded.flushed;
  }

  const Format& format_;
};

} // namespace

CompressorInfo fp16_info() {
  return {"fp16",
          "the dense gradient in half precision: every worker casts it to float16 and divides "
          "by P, the allreduce (the scenario's `training.allreduce`) sums 2-byte values rounding "
          "every partial sum, the sum is cast back; no memory",
          "PyTorch DDP's fp16_compress_hook (GRACE's FP16 compressor, Xu et al., ICDCS 2021, "
          "casts alike but divides by P after the sum)",
          {}};
}

std::unique_ptr<Compressor> make_fp16(const nlohmann::json& resolved) {
  return std::make_unique<HalfPrecision>(kFloat16, resolved);
}

CompressorInfo bf16_info() {
  return {"bf16",
          "the dense gradient in bfloat16 (float32's range, 8 significant bits): every worker "
          "casts it and divides by P, the allreduce (the scenario's `training.allreduce`) sums "
          "2-byte values rounding every partial sum, the sum is cast back; no memory",
          "PyTorch DDP's bf16_compress_hook",
          {}};
}

std::unique_ptr<Compressor> make_bf16(const nlohmann::json& resolved) {
  return std::make_unique<HalfPrecision>(kBfloat16, resolved);
}

} // namespace gcsim::compress::detail
