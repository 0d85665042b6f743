// iwp: being written (throws until then).
#include "compressors/detail/base.hpp"

#include <stdexcept>

namespace gcsim::compress::detail {

CompressorInfo iwp_info() {
  return {"iwp", "not implemented yet", "", {error_feedback_param()}};
}

std::unique_ptr<Compressor> make_iwp(const nlohmann::json&) {
  throw std::logic_error("compressor 'iwp' is not implemented yet");
}

} // namespace gcsim::compress::detail
