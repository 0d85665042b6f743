#include "sim/input/natural_order.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>

using gcsim::input::natural_less;

TEST_CASE("natural order compares runs of digits by value") {
  CHECK(natural_less("n-2", "n-10"));
  CHECK_FALSE(natural_less("n-10", "n-2"));
  CHECK(natural_less("n-9", "n-10"));
  CHECK(natural_less("n", "n-0"));
  CHECK(natural_less("a-10", "b-2"));
  CHECK(natural_less("rack2-n10", "rack10-n2"));
  // Equal values, other spellings: still one order, either way round.
  CHECK(natural_less("n-01", "n-1") != natural_less("n-1", "n-01"));
  CHECK_FALSE(natural_less("n-1", "n-1"));
}

TEST_CASE("step labels sort as their numbers say") {
  std::vector<std::string> labels{"gtopk merge, stride 16", "gtopk merge, stride 2",
                                  "gtopk merge, stride 1", "broadcast", "gtopk merge, stride 4"};
  std::sort(labels.begin(), labels.end(), gcsim::input::NaturalLess{});
  CHECK(labels == std::vector<std::string>{"broadcast", "gtopk merge, stride 1",
                                           "gtopk merge, stride 2", "gtopk merge, stride 4",
                                           "gtopk merge, stride 16"});
}
