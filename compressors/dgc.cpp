// dgc: being written (throws until then).
#include "compressors/detail/base.hpp"

#include <stdexcept>

namespace gcsim::compress::detail {

CompressorInfo dgc_info() {
  return {"dgc", "not implemented yet", "", {error_feedback_param()}};
}

std::unique_ptr<Compressor> make_dgc(const nlohmann::json&) {
  throw std::logic_error("compressor 'dgc' is not implemented yet");
}

} // namespace gcsim::compress::detail
