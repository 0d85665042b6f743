#include "sim/network/log2.hpp"
#include "sim/network/summation_orders.hpp"
#include "sim/training/iteration_model.hpp"

#include <string>

#include <doctest/doctest.h>

namespace gc = gcsim::compress;
namespace net = gcsim::net;
using gcsim::AllreduceAlgorithm;
using gcsim::training::compressor_summation;

namespace {

// "((0+1)+(2+3))": a sum written out, each addition in its order.
std::string text(const gc::Sum& sum) {
  if (sum.rank >= 0)
    return std::to_string(sum.rank);
  std::string written = text(sum.terms.front());
  for (size_t i = 1; i < sum.terms.size(); ++i)
    written = "(" + written + "+" + text(sum.terms[i]) + ")";
  return written;
}

std::string text(const gc::SummationOrder& order) {
  std::string written;
  for (const gc::Sum& part : order.parts)
    written += (written.empty() ? "" : " | ") + text(part);
  return written;
}

} // namespace

TEST_CASE("recursive doubling adds the folded ranks, then each exchange's partial sums") {
  CHECK(text(net::recursive_doubling_summation(1)) == "0");
  CHECK(text(net::recursive_doubling_summation(4)) == "((0+1)+(2+3))");
  // Rank 0 folds into rank 1 before the exchange between 1 and 2.
  CHECK(text(net::recursive_doubling_summation(3)) == "((1+0)+2)");
  CHECK(text(net::recursive_doubling_summation(6)) == "(((1+0)+(3+2))+(4+5))");
  CHECK(text(net::recursive_doubling_summation(8)) == "(((0+1)+(2+3))+((4+5)+(6+7)))");
}

TEST_CASE("the double binary tree adds each half up one of its trees") {
  // Tree 0 is rooted at rank 0 with child 2 (children 1 and 3); tree 1 is
  // its mirror (3, its child 1, children 2 and 0).
  CHECK(text(net::double_binary_tree_summation(4, 1)) == "(0+((2+1)+3)) | (3+((1+2)+0))");
  // Two machines of two GPUs: the machines' first ranks are the tree, each
  // machine's second rank hangs from its first.
  CHECK(text(net::double_binary_tree_summation(4, 2)) == "((0+(2+3))+1) | ((2+(0+1))+3)");
}

TEST_CASE("the hierarchical allreduce adds each machine's ranks, then the machines") {
  CHECK(text(net::hierarchical_summation(6, 2)) == "(((0+1)+(2+3))+(4+5))");
  CHECK(text(net::hierarchical_summation(6, 3)) == "(((0+1)+2)+((3+4)+5))");
}

TEST_CASE("every order adds every rank once, a tree's about log2 P deep") {
  for (int size = 1; size <= 70; ++size) {
    CAPTURE(size);
    const gc::SummationOrder doubling = net::recursive_doubling_summation(size);
    CHECK_NOTHROW(doubling.check(size));
    CHECK(doubling.parts.front().depth() <= net::ceil_log2(size) + 1);
    const gc::SummationOrder tree = net::double_binary_tree_summation(size, 1);
    CHECK_NOTHROW(tree.check(size));
    REQUIRE(tree.parts.size() == 2);
    for (const gc::Sum& half : tree.parts)
      CHECK(half.depth() <= net::ceil_log2(size) + 1);
    for (int per_node : {2, 3, 4, 8}) {
      if (size % per_node != 0)
        continue;
      CHECK_NOTHROW(net::double_binary_tree_summation(size, per_node).check(size));
      CHECK_NOTHROW(net::hierarchical_summation(size, per_node).check(size));
    }
  }
}

TEST_CASE("a compressor's allreduce adds as the run's algorithm, or in rank order for a ring") {
  const std::string in_rank_order = text(gc::SummationOrder::in_rank_order(4));
  CHECK(in_rank_order == "(((0+1)+2)+3)");
  CHECK(text(compressor_summation(AllreduceAlgorithm::ring, 4, 1)) == in_rank_order);
  // The parameter servers take no part in a compressor's steps, and the
  // hierarchical allreduce needs machines of several ranks: rings.
  CHECK(text(compressor_summation(AllreduceAlgorithm::parameter_server, 4, 1)) == in_rank_order);
  CHECK(text(compressor_summation(AllreduceAlgorithm::hierarchical, 4, 1)) == in_rank_order);
  CHECK(text(compressor_summation(AllreduceAlgorithm::hierarchical, 4, 2)) ==
        text(net::hierarchical_summation(4, 2)));
  CHECK(text(compressor_summation(AllreduceAlgorithm::recursive_doubling, 4, 1)) ==
        "((0+1)+(2+3))");
  CHECK(text(compressor_summation(AllreduceAlgorithm::double_binary_tree, 4, 2)) ==
        text(net::double_binary_tree_summation(4, 2)));
}
