// Choose a compressor by name from a JSON parameter object.
#pragma once

#include "compressors/compressor.hpp"
#include "compressors/params.hpp"

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::compress {

struct CompressorInfo {
  std::string name;
  std::string summary;
  std::string source; // the paper or code it follows
  std::vector<ParamSpec> params;
};

// Throws ParameterError on an unknown name (with a did-you-mean) or an unknown
// or invalid parameter (naming it). `params` may be null or an object.
std::unique_ptr<Compressor> make_compressor(const std::string& name,
                                            const nlohmann::json& params = nullptr);

// Every compressor with its parameters and defaults, sorted by name.
std::vector<CompressorInfo> list_compressors();

// One compressor's; ParameterError (with a did-you-mean) on an unknown name,
// as make_compressor says it.
CompressorInfo compressor_info(const std::string& name);

} // namespace gcsim::compress
