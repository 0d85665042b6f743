// gs_sgd: being written (throws until then).
#include "compressors/detail/base.hpp"

#include <stdexcept>

namespace gcsim::compress::detail {

CompressorInfo gs_sgd_info() {
  return {"gs_sgd", "not implemented yet", "", {error_feedback_param()}};
}

std::unique_ptr<Compressor> make_gs_sgd(const nlohmann::json&) {
  throw std::logic_error("compressor 'gs_sgd' is not implemented yet");
}

} // namespace gcsim::compress::detail
