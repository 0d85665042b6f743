// deft: being written (throws until then).
#include "compressors/detail/base.hpp"

#include <stdexcept>

namespace gcsim::compress::detail {

CompressorInfo deft_info() {
  return {"deft", "not implemented yet", "", {error_feedback_param()}};
}

std::unique_ptr<Compressor> make_deft(const nlohmann::json&) {
  throw std::logic_error("compressor 'deft' is not implemented yet");
}

} // namespace gcsim::compress::detail
