// Shared plumbing for the compressor implementations (not public API).
#pragma once

#include "compressors/compressor.hpp"
#include "compressors/params.hpp"
#include "compressors/registry.hpp"

#include <memory>
#include <string>

namespace gcsim::compress::detail {

class CompressorBase : public Compressor {
public:
  CompressorBase(std::string name, nlohmann::json params)
      : name_(std::move(name)), params_(std::move(params)),
        error_feedback_(params_.contains("error_feedback") && flag("error_feedback")) {}
  const std::string& name() const override { return name_; }
  const nlohmann::json& params() const override { return params_; }

protected:
  bool error_feedback() const override { return error_feedback_; }
  // Accessors of resolved parameters (resolve_params guarantees presence and type).
  double number(const char* key) const;
  long long integer(const char* key) const;
  bool flag(const char* key) const;
  std::string text(const char* key) const;

private:
  const nlohmann::json& at(const char* key) const;

  std::string name_;
  nlohmann::json params_;
  bool error_feedback_;
};

inline ParamSpec density_param(
    double def,
    std::string desc = "target share of the d elements selected, k = max(1, floor(density*d))") {
  return ParamSpec::number("density", def, 0.0, 1.0, std::move(desc), true);
}
inline ParamSpec error_feedback_param(bool def = true) {
  return ParamSpec::boolean("error_feedback", def,
                            "keep what was not applied in a per-worker residual (error feedback)");
}

// One factory per compressor, defined in its own .cpp file.
#define GCSIM_DECLARE_COMPRESSOR(id)                                                               \
  CompressorInfo id##_info();                                                                      \
  std::unique_ptr<Compressor> make_##id(const nlohmann::json& resolved);
GCSIM_DECLARE_COMPRESSOR(dense)
GCSIM_DECLARE_COMPRESSOR(topk)
GCSIM_DECLARE_COMPRESSOR(gtopk)
GCSIM_DECLARE_COMPRESSOR(dgc)
GCSIM_DECLARE_COMPRESSOR(randomk)
GCSIM_DECLARE_COMPRESSOR(cltk)
GCSIM_DECLARE_COMPRESSOR(sketched_sgd)
GCSIM_DECLARE_COMPRESSOR(gs_sgd)
GCSIM_DECLARE_COMPRESSOR(deft)
GCSIM_DECLARE_COMPRESSOR(iwp)
GCSIM_DECLARE_COMPRESSOR(fp16)
GCSIM_DECLARE_COMPRESSOR(bf16)
GCSIM_DECLARE_COMPRESSOR(powersgd)
#undef GCSIM_DECLARE_COMPRESSOR

} // namespace gcsim::compress::detail
