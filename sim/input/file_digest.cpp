#include "sim/input/file_digest.hpp"

#include "sim/input/input_error.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>

namespace gcsim::input {

std::string file_digest(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw InputError(file.string(), "", "cannot be read to record its digest");
  constexpr std::uint64_t kOffsetBasis = 14695981039346656037ULL;
  constexpr std::uint64_t kPrime = 1099511628211ULL;
  std::uint64_t hash = kOffsetBasis;
  std::array<char, 1 << 16> buffer{};
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      hash ^= static_cast<unsigned char>(buffer[static_cast<std::size_t>(i)]);
      hash *= kPrime;
    }
  }
  if (in.bad())
    throw InputError(file.string(), "", "cannot be read to record its digest");
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx", static_cast<unsigned long long>(hash));
  return text;
}

} // namespace gcsim::input
