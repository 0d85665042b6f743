#include "compressors/summation_order.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace gcsim::compress {
namespace {

// Counts each leaf's rank in `seen`; throws on a malformed sum.
void count_ranks(const Sum& sum, std::vector<int>& seen) {
  if (sum.rank >= 0) {
    if (!sum.terms.empty())
      throw std::invalid_argument("summation order: worker " + std::to_string(sum.rank) +
                                  "'s value has terms of its own");
    if (sum.rank >= static_cast<int>(seen.size()))
      throw std::invalid_argument("summation order: worker " + std::to_string(sum.rank) +
                                  " of only " + std::to_string(seen.size()));
    ++seen[static_cast<std::size_t>(sum.rank)];
    return;
  }
  if (sum.terms.size() < 2)
    throw std::invalid_argument("summation order: a sum of fewer than two terms");
  for (const Sum& term : sum.terms)
    count_ranks(term, seen);
}

} // namespace

Sum Sum::of(int rank) {
  Sum leaf;
  leaf.rank = rank;
  return leaf;
}

Sum Sum::added(std::vector<Sum> terms) {
  if (terms.size() == 1)
    return std::move(terms.front());
  Sum sum;
  sum.terms = std::move(terms);
  return sum;
}

Sum Sum::chain(const std::vector<int>& ranks) {
  std::vector<Sum> terms;
  for (int rank : ranks)
    terms.push_back(of(rank));
  return added(std::move(terms));
}

int Sum::depth() const {
  int deepest = 0;
  for (const Sum& term : terms)
    deepest = std::max(deepest, term.depth());
  return terms.empty() ? 0 : deepest + 1;
}

SummationOrder SummationOrder::in_rank_order(int P) {
  std::vector<int> ranks(static_cast<std::size_t>(P));
  std::iota(ranks.begin(), ranks.end(), 0);
  return {{Sum::chain(ranks)}};
}

void SummationOrder::check(int P) const {
  if (parts.empty())
    throw std::invalid_argument("summation order: no parts");
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::vector<int> seen(static_cast<std::size_t>(P), 0);
    count_ranks(parts[i], seen);
    for (int rank = 0; rank < P; ++rank)
      if (seen[static_cast<std::size_t>(rank)] != 1)
        throw std::invalid_argument(
            "summation order: part " + std::to_string(i) + " adds worker " + std::to_string(rank) +
            " " + std::to_string(seen[static_cast<std::size_t>(rank)]) + " times");
  }
}

} // namespace gcsim::compress
