#include "sim/trace/npy.hpp"

#include "compressors/float16.hpp"
#include "sim/input/units.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

// .npy data is little-endian and read with memcpy, so the host must be too.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "gcsim reads .npy on little-endian hosts");

namespace gcsim::trace {
namespace {

constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kMagicSize = sizeof(kMagic);
// A real header is a few hundred bytes; anything far larger is corruption,
// and refusing it early keeps a bad length field from costing memory.
constexpr size_t kMaxHeaderSize = size_t{1} << 20;

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw InputError(file, "", what);
}

// A recursive-descent reader of the Python dict literal NumPy writes, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderDict {
public:
  HeaderDict(std::string text, std::string file) : text_(std::move(text)), file_(std::move(file)) {}

  void parse(std::string& descr, bool& fortran_order, std::vector<int64_t>& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran_order = boolean_literal();
        have_order = true;
      } else if (key == "shape") {
        shape = tuple_literal();
        have_shape = true;
      } else {
        fail(file_, "header has an unknown key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      break;
    }
    if (!have_descr || !have_order || !have_shape)
      fail(file_, "header lacks one of 'descr', 'fortran_order', 'shape'");
    // NumPy pads the dictionary with spaces and ends it with a newline.
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n'))
      ++pos_;
    if (pos_ != text_.size())
      fail(file_, "malformed header: text after the dictionary");
  }

private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t'))
      ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c)
      fail(file_, std::string("malformed header: expected '") + c + "' at character " +
                      std::to_string(pos_) + " of \"" + text_ + "\"");
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"')
      fail(file_,
           "malformed header: expected a quoted string at character " + std::to_string(pos_));
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string::npos)
      fail(file_, "malformed header: unterminated string");
    std::string value = text_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return value;
  }
  bool boolean_literal() {
    skip_space();
    if (text_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (text_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail(file_, "malformed header: 'fortran_order' is neither True nor False");
  }
  std::vector<int64_t> tuple_literal() {
    std::vector<int64_t> values;
    expect('(');
    while (true) {
      skip_space();
      if (peek() == ')') {
        ++pos_;
        return values;
      }
      int64_t value = 0;
      size_t digits = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (value > (std::numeric_limits<int64_t>::max() - 9) / 10)
          fail(file_, "header shape has an implausibly large dimension");
        value = value * 10 + (text_[pos_] - '0');
        ++pos_;
        ++digits;
      }
      // Python 2 era files wrote dimensions as longs ("3L").
      if (digits > 0 && peek() == 'L')
        ++pos_;
      if (digits == 0)
        fail(file_, "malformed header: shape must be a tuple of non-negative integers");
      values.push_back(value);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(')');
      return values;
    }
  }

  std::string text_;
  std::string file_;
  size_t pos_ = 0;
};

NpyDtype parse_descr(const std::string& descr, const std::string& file) {
  if (descr == "<f4")
    return NpyDtype::float32;
  if (descr == "<f2")
    return NpyDtype::float16;
  if (descr == ">f4" || descr == ">f2")
    fail(file, "dtype '" + descr +
                   "' is big-endian; expected little-endian '<f4' (float32) or '<f2' (float16)");
  fail(file, "dtype '" + descr + "' is not supported; expected '<f4' (float32) or '<f2' (float16)");
}

// Total file size the header promises; overflow is an error, not a wrap.
size_t expected_file_size(const NpyHeader& header, const std::string& file) {
  size_t count = 1;
  for (int64_t dim : header.shape) {
    auto d = static_cast<size_t>(dim);
    if (d != 0 && count > std::numeric_limits<size_t>::max() / d)
      fail(file, "header shape is too large to address");
    count *= d;
  }
  size_t item = dtype_size(header.dtype);
  if (count > (std::numeric_limits<size_t>::max() - header.data_offset) / item)
    fail(file, "header shape is too large to address");
  return header.data_offset + count * item;
}

void check_file_size(const NpyHeader& header, size_t actual, const std::string& file) {
  size_t expected = expected_file_size(header, file);
  if (actual < expected)
    fail(file, "truncated: " + std::to_string(actual) + " bytes, but the header promises " +
                   std::to_string(expected) + " (" + std::to_string(header.element_count()) + " " +
                   dtype_name(header.dtype) + " elements after a " +
                   std::to_string(header.data_offset) + "-byte header)");
  if (actual > expected)
    fail(file, std::to_string(actual - expected) +
                   " bytes of trailing data after the array the header describes");
}

std::string errno_text() {
  return std::strerror(errno);
}

} // namespace

std::string dtype_name(NpyDtype dtype) {
  return dtype == NpyDtype::float16 ? "float16" : "float32";
}

size_t dtype_size(NpyDtype dtype) {
  return dtype == NpyDtype::float16 ? 2 : 4;
}

size_t NpyHeader::element_count() const {
  size_t count = 1;
  for (int64_t dim : shape)
    count *= static_cast<size_t>(dim);
  return count;
}

NpyHeader parse_npy_header(const unsigned char* bytes, size_t size, const std::string& file) {
  if (size < kMagicSize + 4 || std::memcmp(bytes, kMagic, kMagicSize) != 0)
    fail(file, "not an .npy file (the magic string \\x93NUMPY is missing)");
  NpyHeader header;
  header.major_version = bytes[6];
  int minor = bytes[7];
  if (header.major_version < 1 || header.major_version > 3 || minor != 0)
    fail(file, "unsupported .npy format version " + std::to_string(header.major_version) + "." +
                   std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  size_t length_bytes = header.major_version == 1 ? 2 : 4;
  size_t prefix = kMagicSize + 2 + length_bytes;
  if (size < prefix)
    fail(file, "truncated inside the header");
  size_t header_size = 0;
  for (size_t i = 0; i < length_bytes; ++i)
    header_size |= static_cast<size_t>(bytes[kMagicSize + 2 + i]) << (8 * i);
  if (header_size > kMaxHeaderSize)
    fail(file, "header length " + std::to_string(header_size) + " is implausibly large");
  if (size < prefix + header_size)
    fail(file, "truncated inside the header");
  header.data_offset = prefix + header_size;

  std::string text(reinterpret_cast<const char*>(bytes + prefix), header_size);
  // NumPy pads the dict with spaces and ends it with a newline.
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\0'))
    text.pop_back();
  std::string descr;
  bool fortran_order = false;
  HeaderDict(text, file).parse(descr, fortran_order, header.shape);
  header.dtype = parse_descr(descr, file);
  if (fortran_order)
    fail(file, "array is stored in Fortran order; expected C order");
  expected_file_size(header, file); // rejects shapes too large to address
  return header;
}

NpyHeader read_npy_header(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    fail(file, std::filesystem::exists(path, error) ? "is not a regular file" : "file not found");
  auto actual = static_cast<size_t>(std::filesystem::file_size(path, error));
  if (error)
    fail(file, "cannot read the file size: " + error.message());
  if (actual == 0)
    fail(file, "empty file, expected an .npy array");
  std::ifstream stream(path, std::ios::binary);
  if (!stream) // ifstream keeps errno: the reason, as MappedNpy::open gives it
    fail(file, "cannot open file for reading: " + errno_text());
  std::vector<unsigned char> prefix(kMagicSize + 6);
  stream.read(reinterpret_cast<char*>(prefix.data()), static_cast<std::streamsize>(prefix.size()));
  prefix.resize(static_cast<size_t>(stream.gcount()));
  // The header's length first, from its first bytes (a file cut even there
  // reads as too short).
  size_t wanted = prefix.size();
  if (prefix.size() >= kMagicSize + 4 && std::memcmp(prefix.data(), kMagic, kMagicSize) == 0) {
    size_t length_bytes = prefix[6] == 1 ? 2 : 4;
    size_t header_size = 0;
    for (size_t i = 0; i < length_bytes && kMagicSize + 2 + i < prefix.size(); ++i)
      header_size |= static_cast<size_t>(prefix[kMagicSize + 2 + i]) << (8 * i);
    if (header_size <= kMaxHeaderSize)
      wanted = kMagicSize + 2 + length_bytes + header_size;
  }
  if (wanted > prefix.size()) {
    size_t had = prefix.size();
    prefix.resize(wanted);
    stream.read(reinterpret_cast<char*>(prefix.data() + had),
                static_cast<std::streamsize>(wanted - had));
    prefix.resize(had + static_cast<size_t>(stream.gcount()));
  }
  NpyHeader header = parse_npy_header(prefix.data(), prefix.size(), file);
  check_file_size(header, actual, file);
  return header;
}

MappedNpy::MappedNpy(std::string file, NpyHeader header, const unsigned char* base, size_t size)
    : file_(std::move(file)), header_(std::move(header)), base_(base), size_(size) {}

MappedNpy::~MappedNpy() {
  release();
}

MappedNpy::MappedNpy(MappedNpy&& other) noexcept
    : file_(std::move(other.file_)), header_(std::move(other.header_)),
      base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedNpy& MappedNpy::operator=(MappedNpy&& other) noexcept {
  if (this == &other)
    return *this;
  release();
  file_ = std::move(other.file_);
  header_ = std::move(other.header_);
  base_ = std::exchange(other.base_, nullptr);
  size_ = std::exchange(other.size_, 0);
  return *this;
}

void MappedNpy::release() noexcept {
  if (base_ != nullptr)
    munmap(const_cast<unsigned char*>(base_), size_);
  base_ = nullptr;
  size_ = 0;
}

MappedNpy MappedNpy::open(const std::filesystem::path& path) {
  const std::string file = path.string();
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(file, errno == ENOENT ? std::string("file not found")
                               : "cannot open file for reading: " + errno_text());
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    fail(file, "is not a regular file");
  }
  auto size = static_cast<size_t>(info.st_size);
  if (size < kMagicSize + 4) {
    ::close(fd);
    fail(file, size == 0 ? std::string("empty file, expected an .npy array")
                         : "not an .npy file (too short for the magic string and header)");
  }
  void* mapped = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd); // the mapping keeps the file alive
  if (mapped == MAP_FAILED)
    fail(file, "cannot memory-map the file: " + errno_text());
  // Traces are read front to back; tell the kernel so it reads ahead and
  // drops pages behind us.
  madvise(mapped, size, MADV_SEQUENTIAL);
  MappedNpy result(file, NpyHeader{}, static_cast<const unsigned char*>(mapped), size);
  result.header_ = parse_npy_header(result.base_, size, file); // unmaps on throw
  check_file_size(result.header_, size, file);
  return result;
}

size_t MappedNpy::read_float32(size_t first, size_t count, float* out) const {
  if (first > element_count() || count > element_count() - first)
    throw std::out_of_range("MappedNpy::read_float32: elements [" + std::to_string(first) + ", " +
                            std::to_string(first + count) + ") outside the " +
                            std::to_string(element_count()) + " of " + file_);
  const unsigned char* data = base_ + header_.data_offset;
  if (header_.dtype == NpyDtype::float32) {
    // memcpy, not a cast: the data offset need not be 4-aligned in old files.
    if (count > 0)
      std::memcpy(out, data + first * 4, count * 4);
  } else {
    for (size_t i = 0; i < count; ++i) {
      uint16_t half = 0;
      std::memcpy(&half, data + (first + i) * 2, 2);
      out[i] = compress::half_to_float(half);
    }
  }
  for (size_t i = 0; i < count; ++i)
    if (!is_usable_value(out[i]))
      return first + i;
  return npos;
}

void MappedNpy::read_usable_float32(size_t first, size_t count, float* out) const {
  size_t bad = read_float32(first, count, out);
  if (bad == npos)
    return;
  fail(file_, "element " + std::to_string(bad) + " is " + describe_unusable(out[bad - first]));
}

std::string describe_unusable(float value) {
  const std::string limit = units::format_number(kLargestTraceValue);
  const std::string what = std::isnan(value)   ? "NaN"
                           : std::isinf(value) ? "infinite"
                                               : units::format_number(value) + ", beyond " + limit;
  return what + "; gradients and weights must be finite and within " + limit +
         " in magnitude (sums over workers and iterations of larger ones overflow float)";
}

std::vector<float> read_npy_float32(const std::filesystem::path& file,
                                    std::vector<int64_t>* shape) {
  MappedNpy array = MappedNpy::open(file);
  std::vector<float> values(array.element_count());
  array.read_usable_float32(0, values.size(), values.data());
  if (shape != nullptr)
    *shape = array.header().shape;
  return values;
}

} // namespace gcsim::trace
