// sketched_sgd: being written (throws until then).
#include "compressors/detail/base.hpp"

#include <stdexcept>

namespace gcsim::compress::detail {

CompressorInfo sketched_sgd_info() {
  return {"sketched_sgd", "not implemented yet", "", {error_feedback_param()}};
}

std::unique_ptr<Compressor> make_sketched_sgd(const nlohmann::json&) {
  throw std::logic_error("compressor 'sketched_sgd' is not implemented yet");
}

} // namespace gcsim::compress::detail
