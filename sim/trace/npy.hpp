#pragma once
// Reading NumPy .npy files: little-endian float32 or float16, C order, header
// versions 1.0, 2.0 and 3.0. Files are memory-mapped, so reading a slice of a
// large array touches only that slice and the resident set stays bounded.
// Every problem (truncation, wrong dtype, Fortran order, bad header, a size
// that disagrees with the header) is a gcsim::InputError naming the file.

#include "sim/input/input_error.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gcsim::trace {

enum class NpyDtype { float32, float16 };

/// "float32" / "float16", the names manifest.json uses.
std::string dtype_name(NpyDtype dtype);
size_t dtype_size(NpyDtype dtype);

struct NpyHeader {
  NpyDtype dtype = NpyDtype::float32;
  std::vector<int64_t> shape;
  int major_version = 1;
  /// Offset of the first element from the start of the file.
  size_t data_offset = 0;
  /// Product of the shape (1 for a 0-d array).
  size_t element_count() const;
};

/// Parses the header at the start of `bytes` (a whole file or at least its
/// header). `file` only names the file in errors.
NpyHeader parse_npy_header(const unsigned char* bytes, size_t size, const std::string& file);

/// Reads just the header of a file from disk (a few hundred bytes) and checks
/// that the file is exactly as long as the header says.
NpyHeader read_npy_header(const std::filesystem::path& file);

/// The largest magnitude of a value a trace may hold. Gradients of a run
/// that trains are far below it; near float's limit (3.4e38), the sums over
/// workers and iterations (aggregation, error-feedback residuals) overflowed
/// to infinity and NaN.
constexpr float kLargestTraceValue = 1e24F;

/// Whether a trace value is finite and within kLargestTraceValue.
inline bool is_usable_value(float value) {
  return std::fabs(value) <= kLargestTraceValue; // false for NaN too
}

/// What is wrong with a value is_usable_value refused: "NaN", "infinite"
/// or "3e+38, beyond 1e+24", and what a trace must hold instead.
std::string describe_unusable(float value);

/// A read-only memory mapping of one .npy file, validated on open.
class MappedNpy {
public:
  static MappedNpy open(const std::filesystem::path& file);
  ~MappedNpy();
  MappedNpy(MappedNpy&& other) noexcept;
  MappedNpy& operator=(MappedNpy&& other) noexcept;
  MappedNpy(const MappedNpy&) = delete;
  MappedNpy& operator=(const MappedNpy&) = delete;

  const std::string& file() const { return file_; }
  const NpyHeader& header() const { return header_; }
  size_t element_count() const { return header_.element_count(); }

  /// Converts elements [first, first + count) to float32 into `out`.
  /// Returns the index (into the whole array) of the first element that is
  /// not a usable value (is_usable_value), or npos when all are; the caller
  /// decides how to name the place in its error.
  size_t read_float32(size_t first, size_t count, float* out) const;
  /// As read_float32, but an unusable element is an InputError.
  void read_usable_float32(size_t first, size_t count, float* out) const;

  static constexpr size_t npos = static_cast<size_t>(-1);

private:
  MappedNpy(std::string file, NpyHeader header, const unsigned char* base, size_t size);
  void release() noexcept;

  std::string file_;
  NpyHeader header_;
  const unsigned char* base_ = nullptr;
  size_t size_ = 0;
};

/// Reads a whole array as float32 (every element must pass is_usable_value).
std::vector<float> read_npy_float32(const std::filesystem::path& file,
                                    std::vector<int64_t>* shape = nullptr);

} // namespace gcsim::trace
