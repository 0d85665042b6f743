#include "compressors/registry.hpp"

#include "compressors/detail/base.hpp"

#include <map>

namespace gcsim::compress {
namespace {

struct Entry {
  CompressorInfo (*info)();
  std::unique_ptr<Compressor> (*make)(const nlohmann::json& resolved);
};

// The one table that maps scenario names to implementations.
const std::map<std::string, Entry>& table() {
  static const std::map<std::string, Entry> entries = {
      {"bf16", {detail::bf16_info, detail::make_bf16}},
      {"cltk", {detail::cltk_info, detail::make_cltk}},
      {"deft", {detail::deft_info, detail::make_deft}},
      {"dense", {detail::dense_info, detail::make_dense}},
      {"dgc", {detail::dgc_info, detail::make_dgc}},
      {"fp16", {detail::fp16_info, detail::make_fp16}},
      {"gs_sgd", {detail::gs_sgd_info, detail::make_gs_sgd}},
      {"gtopk", {detail::gtopk_info, detail::make_gtopk}},
      {"iwp", {detail::iwp_info, detail::make_iwp}},
      {"powersgd", {detail::powersgd_info, detail::make_powersgd}},
      {"randomk", {detail::randomk_info, detail::make_randomk}},
      {"sketched_sgd", {detail::sketched_sgd_info, detail::make_sketched_sgd}},
      {"topk", {detail::topk_info, detail::make_topk}},
  };
  return entries;
}

// The entry of `name`; ParameterError naming the known ones for another.
const Entry& entry_of(const std::string& name) {
  const auto& entries = table();
  const auto it = entries.find(name);
  if (it == entries.end()) {
    std::vector<std::string> names;
    std::string list;
    for (const auto& [known, entry] : entries) {
      names.push_back(known);
      list += (list.empty() ? "" : ", ") + known;
    }
    std::string message = "unknown compressor '" + name + "'";
    const std::string guess = did_you_mean(name, names);
    if (!guess.empty()) {
      message += "; did you mean '" + guess + "'?";
    }
    throw ParameterError(message + " (known: " + list + ")");
  }
  return it->second;
}

} // namespace

std::unique_ptr<Compressor> make_compressor(const std::string& name, const nlohmann::json& params) {
  const Entry& entry = entry_of(name);
  const CompressorInfo info = entry.info();
  return entry.make(resolve_params(name, info.params, params));
}

CompressorInfo compressor_info(const std::string& name) {
  return entry_of(name).info();
}

std::vector<CompressorInfo> list_compressors() {
  std::vector<CompressorInfo> infos;
  for (const auto& [name, entry] : table()) {
    infos.push_back(entry.info());
  }
  return infos;
}

} // namespace gcsim::compress
