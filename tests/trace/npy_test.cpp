#include "sim/trace/npy.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <doctest/doctest.h>

using namespace gcsim::trace;

namespace {

const std::string kFixtures = std::string(GCSIM_TRACE_FIXTURES) + "/npy/";

std::vector<char> bytes_of(const std::string& file) {
  std::ifstream stream(file, std::ios::binary);
  REQUIRE_MESSAGE(stream, "missing fixture " << file << " (run ctest, which makes it)");
  return {std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>()};
}

// The message of the InputError a call throws ("" when it does not throw).
template <typename F> std::string input_error(F&& call) {
  try {
    call();
  } catch (const gcsim::InputError& error) {
    return error.what();
  }
  return "";
}

} // namespace

TEST_CASE("arrays written by NumPy read back bit-identical, float32 and float16, headers 1-3") {
  for (const char* dtype : {"float32", "float16"})
    for (int version : {1, 2, 3}) {
      const std::string name = std::string(dtype) + "_v" + std::to_string(version);
      CAPTURE(name);
      std::vector<int64_t> shape;
      std::vector<float> values = read_npy_float32(kFixtures + name + ".npy", &shape);
      std::vector<char> expected = bytes_of(kFixtures + name + ".expected");
      REQUIRE(values.size() * 4 == expected.size());
      CHECK(std::memcmp(values.data(), expected.data(), expected.size()) == 0);
      CHECK(shape == (version == 2 ? std::vector<int64_t>{10, 100} : std::vector<int64_t>{1000}));
      CHECK(read_npy_header(kFixtures + name + ".npy").major_version == version);
    }
}

TEST_CASE("slices of a mapped array are the same elements as the whole") {
  MappedNpy array = MappedNpy::open(kFixtures + "float16_v1.npy");
  std::vector<float> whole(array.element_count()), part(100);
  array.read_usable_float32(0, whole.size(), whole.data());
  array.read_usable_float32(450, 100, part.data());
  CHECK(std::memcmp(part.data(), whole.data() + 450, 400) == 0);
  CHECK_THROWS_AS(array.read_float32(950, 51, part.data()), std::out_of_range);
}

TEST_CASE("bad .npy files are input errors that name the file and the problem") {
  struct Case {
    const char* file;
    const char* says;
  };
  for (Case c : {Case{"float64.npy", "'<f8' is not supported"},
                 Case{"int32.npy", "'<i4' is not supported"}, Case{"bigendian.npy", "big-endian"},
                 Case{"fortran.npy", "Fortran order"}, Case{"truncated.npy", "truncated"},
                 Case{"truncated_header.npy", "truncated inside the header"},
                 Case{"trailing.npy", "trailing data"}, Case{"not_npy.npy", "not an .npy file"},
                 Case{"empty.npy", "empty file"}, Case{"nan.npy", "element 1 is NaN"},
                 Case{"inf16.npy", "element 2 is infinite"},
                 Case{"huge.npy", "element 1 is -3e+38, beyond 1e+24"},
                 Case{"does_not_exist.npy", "file not found"}}) {
    const std::string name = c.file;
    CAPTURE(name);
    std::string message = input_error([&] { read_npy_float32(kFixtures + c.file); });
    CHECK(message.find(kFixtures + c.file + ": ") == 0);
    CHECK(message.find(c.says) != std::string::npos);
    if (name != "nan.npy" && name != "inf16.npy" && name != "huge.npy") { // values, not headers
      std::string header_message = input_error([&] { read_npy_header(kFixtures + c.file); });
      CHECK(header_message.find(c.says) != std::string::npos);
    }
  }
}

TEST_CASE("corrupt headers never read out of bounds") {
  std::vector<char> good = bytes_of(kFixtures + "float32_v1.npy");
  const std::string file = "corrupt.npy";
  auto parse = [&](const std::vector<char>& bytes) {
    return input_error([&] {
      parse_npy_header(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), file);
    });
  };
  std::vector<char> bad = good;
  bad[6] = 9; // version 9.0
  CHECK(parse(bad).find("unsupported .npy format version 9.0") != std::string::npos);
  bad = good;
  bad[8] = static_cast<char>(0xff); // header length past the end
  bad[9] = static_cast<char>(0xff);
  CHECK(parse(bad).find("truncated inside the header") != std::string::npos);
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }";
  std::vector<char> huge(good.begin(), good.begin() + 10);
  huge[8] = static_cast<char>(header.size());
  huge[9] = 0;
  huge.insert(huge.end(), header.begin(), header.end());
  CHECK(parse(huge).find("implausibly large") != std::string::npos);
  // Text after the dictionary was ignored; NumPy's padding (spaces, a
  // newline) is not text.
  auto with_header = [&](const std::string& text) {
    std::vector<char> bytes(good.begin(), good.begin() + 10);
    bytes[8] = static_cast<char>(text.size());
    bytes[9] = 0;
    bytes.insert(bytes.end(), text.begin(), text.end());
    bytes.insert(bytes.end(), 12, '\0'); // the three float32 elements of shape (3,)
    return bytes;
  };
  const std::string dictionary = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  CHECK(parse(with_header(dictionary + "      \n")).empty());
  CHECK(parse(with_header(dictionary + " x   \n")).find("text after the dictionary") !=
        std::string::npos);
  // Every prefix of a valid file is rejected cleanly (ASan checks the reads).
  for (size_t n = 0; n < 128; ++n) {
    std::vector<char> prefix(good.begin(), good.begin() + static_cast<long>(n));
    CHECK_FALSE(parse(prefix).empty());
  }
}

// NumPy under Python 2 wrote a shape's dimensions as longs: (3L,).
TEST_CASE("a header's Python 2 long dimensions read as numbers") {
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,), }";
  std::vector<unsigned char> bytes = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<unsigned char>(header.size()), 0};
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), 12, 0);
  const NpyHeader parsed = parse_npy_header(bytes.data(), bytes.size(), "long.npy");
  CHECK(parsed.shape == std::vector<int64_t>{3});
}
