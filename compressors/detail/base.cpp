#include "compressors/detail/base.hpp"

#include <stdexcept>

namespace gcsim::compress::detail {

// Typed reads go through get_ptr with a check: nlohmann's convenience getters
// trip GCC's -Wnull-dereference once inlined.
const nlohmann::json& CompressorBase::at(const char* key) const {
  const auto it = params_.find(key);
  if (it == params_.end()) {
    throw std::logic_error(name_ + ": parameter '" + key + "' missing after resolution");
  }
  return *it;
}

double CompressorBase::number(const char* key) const {
  const nlohmann::json& v = at(key);
  if (const auto* d = v.get_ptr<const double*>()) {
    return *d;
  }
  if (const auto* i = v.get_ptr<const std::int64_t*>()) {
    return static_cast<double>(*i);
  }
  if (const auto* u = v.get_ptr<const std::uint64_t*>()) {
    return static_cast<double>(*u);
  }
  throw std::logic_error(name_ + ": parameter '" + key + "' is not a number");
}

long long CompressorBase::integer(const char* key) const {
  const nlohmann::json& v = at(key);
  if (const auto* i = v.get_ptr<const std::int64_t*>()) {
    return *i;
  }
  if (const auto* u = v.get_ptr<const std::uint64_t*>()) {
    return static_cast<long long>(*u);
  }
  return static_cast<long long>(number(key));
}

bool CompressorBase::flag(const char* key) const {
  if (const auto* b = at(key).get_ptr<const bool*>()) {
    return *b;
  }
  throw std::logic_error(name_ + ": parameter '" + key + "' is not a boolean");
}

std::string CompressorBase::text(const char* key) const {
  if (const auto* s = at(key).get_ptr<const std::string*>()) {
    return *s;
  }
  throw std::logic_error(name_ + ": parameter '" + key + "' is not a string");
}

} // namespace gcsim::compress::detail
