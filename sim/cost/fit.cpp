#include "sim/cost/fit.hpp"

#include "sim/input/units.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace gcsim::cost {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

double evaluate(const Family& family, const Segment& segment, const KernelShape& shape) {
  double total = 0;
  for (std::size_t t = 0; t < family.term_count; ++t)
    total += segment.coefficients[t] * term_value(family.terms[t], shape);
  return total;
}

// Solves the small symmetric system a x = b by Gaussian elimination with
// partial pivoting; false when singular.
bool solve(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>& x) {
  const std::size_t size = b.size();
  for (std::size_t col = 0; col < size; ++col) {
    std::size_t pivot = col;
    for (std::size_t row = col + 1; row < size; ++row)
      if (std::fabs(a[row][col]) > std::fabs(a[pivot][col]))
        pivot = row;
    if (std::fabs(a[pivot][col]) < 1e-12)
      return false;
    std::swap(a[pivot], a[col]);
    std::swap(b[pivot], b[col]);
    for (std::size_t row = col + 1; row < size; ++row) {
      const double factor = a[row][col] / a[col][col];
      for (std::size_t c = col; c < size; ++c)
        a[row][c] -= factor * a[col][c];
      b[row] -= factor * b[col];
    }
  }
  x.assign(size, 0.0);
  for (std::size_t row = size; row-- > 0;) {
    double sum = b[row];
    for (std::size_t c = row + 1; c < size; ++c)
      sum -= a[row][c] * x[c];
    x[row] = sum / a[row][row];
  }
  return true;
}

// Sum of squared relative residuals, (model / t - 1)^2, of `segment` over
// samples[first, last).
double residual_sum(const Family& family, const Segment& segment,
                    const std::vector<Sample>& samples, std::size_t first, std::size_t last) {
  double rss = 0;
  for (std::size_t i = first; i < last; ++i) {
    const double relative = evaluate(family, segment, samples[i].shape) / samples[i].seconds - 1;
    rss += relative * relative;
  }
  return rss;
}

struct PieceFit {
  Segment segment;
  double rss = kInfinity; // sum of squared relative residuals
};

// Non-negative least squares of sum((model/t - 1)^2) over samples[first, last).
// With at most four terms, the optimum is the best feasible unconstrained
// solution over the 15 non-empty subsets of terms. `scales_past_end`: the
// piece is the last, with one size; of its exact fits (a latency alone, a
// size term alone) one on a size term is kept, so that the curve goes on
// growing past the largest size measured. Before, the choice fell to the
// fits' last bits, and the CPU sketch_query stayed flat past 2^26.
PieceFit fit_piece(const Family& family, const std::vector<Sample>& samples, std::size_t first,
                   std::size_t last, bool scales_past_end = false) {
  const std::size_t terms = family.term_count;
  // Columns scaled to unit norm so that latency (1) and per-element (1e8)
  // terms are comparable in the normal equations.
  std::vector<double> scale(terms, 0.0);
  for (std::size_t i = first; i < last; ++i)
    for (std::size_t t = 0; t < terms; ++t) {
      const double value = term_value(family.terms[t], samples[i].shape) / samples[i].seconds;
      scale[t] += value * value;
    }
  for (double& s : scale)
    s = s > 0 ? std::sqrt(s) : 1.0;

  PieceFit best;
  unsigned best_mask = 0;
  // Larger masks first. Subsets that fit a piece of one size equally well
  // differ in their last bits, which decide, but in the last piece.
  for (unsigned mask = (1u << terms) - 1; mask >= 1; --mask) {
    std::vector<std::size_t> active;
    for (std::size_t t = 0; t < terms; ++t)
      if (mask & (1u << t))
        active.push_back(t);
    const std::size_t size = active.size();
    std::vector<std::vector<double>> normal(size, std::vector<double>(size, 0.0));
    std::vector<double> rhs(size, 0.0);
    for (std::size_t i = first; i < last; ++i) {
      std::vector<double> row(size);
      for (std::size_t a = 0; a < size; ++a)
        row[a] = term_value(family.terms[active[a]], samples[i].shape) / samples[i].seconds /
                 scale[active[a]];
      for (std::size_t a = 0; a < size; ++a) {
        rhs[a] += row[a];
        for (std::size_t b = 0; b < size; ++b)
          normal[a][b] += row[a] * row[b];
      }
    }
    std::vector<double> solution;
    if (!solve(normal, rhs, solution))
      continue;
    if (std::any_of(solution.begin(), solution.end(), [](double c) { return c < 0; }))
      continue;
    Segment segment;
    for (std::size_t a = 0; a < size; ++a)
      segment.coefficients[active[a]] = solution[a] / scale[active[a]];
    const double rss = residual_sum(family, segment, samples, first, last);
    // Residual sums this close are one fit (relative residuals of 1e-8).
    const bool same = std::fabs(rss - best.rss) <= 1e-16;
    // Of two such fits of the last piece: no latency, then the family's
    // earlier size term (per_n_rows before per_rows_cols: its own size).
    const auto rank = [](unsigned m) { return std::pair{(m & 1u) != 0, m}; };
    if (scales_past_end && same ? rank(mask) < rank(best_mask) : rss < best.rss) {
      best = PieceFit{segment, rss};
      best_mask = mask;
    }
  }
  return best;
}

constexpr double kLoadTolerance = 1e-5;

// The values of k to check a step at, from `lo` to `hi`: both ends and a
// geometric grid between them, since terms in n log2 k and k log2 k make the
// step between two pieces in n concave in k, its worst point inside the range
// (the CPU profile's topk_select dropped 14% at n = 47.45M and k near 5000,
// passing the check at k's two ends).
// A range from 0 has its grid from 1, the least count selected (from 0 the
// grid was skipped, and a step inside the range passed).
std::vector<double> ks_to_check(double lo, double hi) {
  std::vector<double> ks{lo, hi};
  constexpr int kSteps = 64;
  const double from = lo > 0 ? lo : std::min(1.0, hi);
  if (from > 0 && hi > from)
    for (int i = 1; i < kSteps; ++i)
      ks.push_back(from * std::pow(hi / from, static_cast<double>(i) / kSteps));
  return ks;
}

// Where `right` takes over from `left`: the geometric middle of the gap
// between them (a cache boundary is a step, not a ramp), or the point where
// they meet. A value at or below it belongs to `left`.
double step_at(const Segment& left, const Segment& right) {
  return std::sqrt(left.up_to * right.from);
}

// How far, in seconds, `right` falls below `left` where it takes over, less
// the relative drop `tolerance` allows; at most 0 when the step is monotone.
// Within a piece every term is non-decreasing, so only the step in the gap
// between the pieces (at its geometric middle) can break monotonicity; it is
// checked across the other shape fields: pieces in k at the smallest and the
// largest n (the step is affine in n: H200's sample_threshold, checked at the
// largest n only, dropped 6% at small ones), pieces in n along k (above) and
// at every corner of rows and cols (k and cols along the ratios to n seen in
// the data, when the range records them).
double drop_at(const Family& family, char piecewise_in, const Segment& left, const Segment& right,
               const ShapeRange& range, double tolerance) {
  const double middle = step_at(left, right);
  const std::vector<double> ns = piecewise_in == 'k' ? std::vector<double>{range.n_min, range.n_max}
                                                     : std::vector<double>{middle};
  double drop = -kInfinity;
  for (double n : ns) {
    const std::pair<double, double> colses =
        range.has_cols_per_n ? std::pair{range.cols_per_n_min * n, range.cols_per_n_max * n}
                             : std::pair{range.cols_min, range.cols_max};
    const std::vector<double> ks =
        piecewise_in == 'k'
            ? std::vector<double>{middle}
            : (range.has_k_per_n ? ks_to_check(range.k_per_n_min * n, range.k_per_n_max * n)
                                 : ks_to_check(range.k_min, range.k_max));
    for (double k : ks)
      for (double rows : {range.rows_min, range.rows_max})
        for (double cols : {colses.first, colses.second}) {
          const KernelShape shape{n, k, rows, cols};
          const double before = evaluate(family, left, shape);
          const double after = evaluate(family, right, shape);
          drop = std::max(drop, before * (1 - tolerance) - after);
        }
  }
  return drop;
}

// `tolerance`: the relative drop allowed. The fitter allows none, the loader
// 1e-5, so that a fit the fitter kept still loads after its coefficients
// are rounded to seven digits for the profile file.
bool monotone_at(const Family& family, char piecewise_in, const Segment& left, const Segment& right,
                 const ShapeRange& range, double tolerance) {
  return drop_at(family, piecewise_in, left, right, range, tolerance) <= 1e-15;
}

} // namespace

Curve::Curve(const Family& family, std::vector<Segment> segments, ShapeRange range,
             char piecewise_in)
    : family_(&family), piecewise_in_(piecewise_in == 0 ? family.piecewise_in : piecewise_in),
      segments_(std::move(segments)), range_(range) {
  assert(!segments_.empty() && "a curve has at least one segment");
  assert((piecewise_in_ == 'n' || piecewise_in_ == 'k') && "pieces are in n or k");
}

double Curve::seconds(const KernelShape& shape) const {
  assert(family_ != nullptr && "seconds() on an empty curve");
  const double x = piecewise_value(piecewise_in_, shape);
  // The piece holding x (step_at).
  std::size_t active = segments_.size() - 1;
  for (std::size_t s = 0; s < segments_.size(); ++s) {
    if (x > segments_[s].up_to)
      continue;
    active = s == 0 || x > step_at(segments_[s - 1], segments_[s]) ? s : s - 1;
    break;
  }
  // No step goes down: a piece starts no lower than the one before it ends,
  // at this shape's other fields. The loader checks that over the box the
  // curve was fitted on, but a shape outside it (a sketch of 64 rows priced
  // by pieces fitted at 5) could tip a step downward and make more work cost
  // less.
  double floor = 0;
  for (std::size_t s = 1; s <= active; ++s) {
    KernelShape at_step = shape;
    (piecewise_in_ == 'k' ? at_step.k : at_step.n) = step_at(segments_[s - 1], segments_[s]);
    floor = std::max(floor, evaluate(*family_, segments_[s - 1], at_step));
  }
  // Not std::max: a NaN shape's NaN must come out, not the floor.
  const double value = evaluate(*family_, segments_[active], shape);
  return value < floor ? floor : value;
}

std::string Curve::problem(std::string* where, bool monotone) const {
  auto report = [&](std::string path, std::string what) {
    if (where != nullptr)
      *where = std::move(path);
    return what;
  };
  if (segments_.empty())
    return report("/segments", "a fit needs at least one segment");
  for (std::size_t s = 0; s < segments_.size(); ++s) {
    const std::string piece = "/segments/" + std::to_string(s);
    for (std::size_t t = 0; t < family_->term_count; ++t) {
      const double c = segments_[s].coefficients[t];
      if (!std::isfinite(c) || c < 0)
        return report(piece + "/" + std::string(term_key(family_->terms[t])),
                      "coefficient " + units::format_number(c) +
                          " is negative; a time cannot shrink as work grows");
    }
    const bool last = s + 1 == segments_.size();
    if (last != std::isinf(segments_[s].up_to))
      return report(piece + "/up_to", last ? "the last segment must not have an upper bound"
                                           : "every segment but the last needs up_to");
    if (s > 0 && !(segments_[s].from >= segments_[s - 1].up_to))
      return report(piece + "/from", "a segment must start at or after the previous one's up_to");
    // The first piece prices every size below its up_to, whatever it says:
    // a from there was ignored without a word.
    if (s == 0 && segments_[s].from > 0)
      return report(piece + "/from", "the first segment covers every size below its up_to: a "
                                     "from would be ignored, leave it out");
    if (!(segments_[s].up_to >= segments_[s].from) || segments_[s].from < 0)
      return report(piece + "/up_to", "a segment's up_to must not be below its from");
  }
  for (std::size_t s = 0; monotone && s + 1 < segments_.size(); ++s)
    if (!monotone_at(*family_, piecewise_in_, segments_[s], segments_[s + 1], range_,
                     kLoadTolerance))
      return report("/segments/" + std::to_string(s + 1),
                    "fit is not monotone: time drops where this segment takes over from the "
                    "previous one (" +
                        std::string(1, piecewise_in_) + " = " +
                        units::format_number(step_at(segments_[s], segments_[s + 1])) +
                        "; gcsim profile refit fits a measured profile again from its points)");
  return {};
}

ShapeRange range_of(const std::vector<Sample>& samples) {
  if (samples.empty())
    return {};
  ShapeRange range{kInfinity, 0, kInfinity, 0, kInfinity, 0, kInfinity, 0};
  // k_per_n / cols_per_n stay unset: checking monotonicity at the absolute
  // corners is stricter, and on this project's CPU data it generalised better
  // (hold-out) than checking along the measured ratios.
  for (const Sample& sample : samples) {
    range.n_min = std::min(range.n_min, sample.shape.n);
    range.n_max = std::max(range.n_max, sample.shape.n);
    range.k_min = std::min(range.k_min, sample.shape.k);
    range.k_max = std::max(range.k_max, sample.shape.k);
    range.rows_min = std::min(range.rows_min, sample.shape.rows);
    range.rows_max = std::max(range.rows_max, sample.shape.rows);
    range.cols_min = std::min(range.cols_min, sample.shape.cols);
    range.cols_max = std::max(range.cols_max, sample.shape.cols);
  }
  return range;
}

namespace {

struct PiecewiseFit {
  std::vector<Segment> segments; // empty when no non-negative fit exists
  double bic = kInfinity;
};

// The best pieces in `piecewise_in` by BIC (see fit_curve); `range` is the
// samples' (range_of).
PiecewiseFit fit_pieces(const Family& family, char piecewise_in, const std::vector<Sample>& input,
                        const ShapeRange& range, const FitOptions& options) {
  assert(family.terms[0] == Term::latency && "a lift raises the first term, the latency");
  std::vector<Sample> samples = input;
  std::stable_sort(samples.begin(), samples.end(), [&](const Sample& a, const Sample& b) {
    return piecewise_value(piecewise_in, a.shape) < piecewise_value(piecewise_in, b.shape);
  });

  // Start index of each distinct piecewise value: pieces break between them.
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < samples.size(); ++i)
    if (i == 0 || piecewise_value(piecewise_in, samples[i].shape) >
                      piecewise_value(piecewise_in, samples[i - 1].shape))
      starts.push_back(i);
  starts.push_back(samples.size());
  const std::size_t distinct = starts.size() - 1;
  const std::size_t min_run = std::max<std::size_t>(1, options.min_distinct_per_segment);

  // Pieces between distinct-value positions [a, b) are memoized.
  std::vector<std::vector<PieceFit>> memo(distinct + 1, std::vector<PieceFit>(distinct + 1));
  std::vector<std::vector<bool>> done(distinct + 1, std::vector<bool>(distinct + 1, false));
  auto piece = [&](std::size_t a, std::size_t b) -> const PieceFit& {
    if (!done[a][b]) {
      memo[a][b] = fit_piece(family, samples, starts[a], starts[b], b == distinct && b - a == 1);
      done[a][b] = true;
    }
    return memo[a][b];
  };
  auto value_at = [&](std::size_t position) {
    return piecewise_value(piecewise_in, samples[starts[position]].shape);
  };

  const double count = static_cast<double>(samples.size());
  PiecewiseFit best;
  // Candidate cut lists: none, one, two or three cuts (max_segments <= 4).
  std::vector<std::vector<std::size_t>> candidates{{}};
  if (options.max_segments >= 2)
    for (std::size_t a = min_run; a + min_run <= distinct; ++a)
      candidates.push_back({a});
  if (options.max_segments >= 3)
    for (std::size_t a = min_run; a + 2 * min_run <= distinct; ++a)
      for (std::size_t b = a + min_run; b + min_run <= distinct; ++b)
        candidates.push_back({a, b});
  if (options.max_segments >= 4)
    for (std::size_t a = min_run; a + 3 * min_run <= distinct; ++a)
      for (std::size_t b = a + min_run; b + 2 * min_run <= distinct; ++b)
        for (std::size_t c = b + min_run; c + min_run <= distinct; ++c)
          candidates.push_back({a, b, c});
  for (const auto& cuts : candidates) {
    std::vector<std::size_t> edges{0};
    edges.insert(edges.end(), cuts.begin(), cuts.end());
    edges.push_back(distinct);
    std::vector<Segment> segments;
    double rss = 0;
    bool feasible = true;
    for (std::size_t p = 0; p + 1 < edges.size() && feasible; ++p) {
      const PieceFit& fit = piece(edges[p], edges[p + 1]);
      feasible = std::isfinite(fit.rss);
      rss += fit.rss;
      Segment segment = fit.segment;
      // A piece spans its own first and last size; the gap to the next piece
      // is interpolated (see Segment).
      segment.from = p == 0 ? 0.0 : value_at(edges[p]);
      segment.up_to = p + 2 < edges.size() ? value_at(edges[p + 1] - 1) : kInfinity;
      segments.push_back(segment);
    }
    if (!feasible)
      continue;
    // A piece that starts below where the previous one ends (at low k, say,
    // while it fits the large k better) is raised by the drop: a constant
    // added to its latency keeps it linear and its other coefficients, and
    // makes the step monotone. Rejecting such cuts instead left CPU top-k
    // with two pieces, 14-15 % off held out on the quick grid; lifted, 8-9 %.
    for (std::size_t s = 0; s + 1 < segments.size(); ++s) {
      const double drop = drop_at(family, piecewise_in, segments[s], segments[s + 1], range, 0.0);
      if (!(drop > 0))
        continue;
      // A hair above the drop, so the lifted step also passes monotone_at.
      segments[s + 1].coefficients[0] += drop * (1 + 1e-9) + 1e-15;
      // Its residuals count as lifted.
      rss += residual_sum(family, segments[s + 1], samples, starts[edges[s + 1]],
                          starts[edges[s + 2]]) -
             piece(edges[s + 1], edges[s + 2]).rss;
    }
    for (std::size_t s = 0; s + 1 < segments.size(); ++s)
      assert(monotone_at(family, piecewise_in, segments[s], segments[s + 1], range, 0.0) &&
             "every step is monotone once lifted");
    // BIC: each piece costs its coefficients and its breakpoint.
    const double parameters = static_cast<double>(segments.size() * family.term_count) +
                              static_cast<double>(segments.size() - 1);
    const double score =
        count * std::log(std::max(rss, 1e-12) / count) + parameters * std::log(count);
    if (score < best.bic)
      best = PiecewiseFit{std::move(segments), score};
  }
  return best;
}

} // namespace

Curve fit_curve(const Family& family, const std::vector<Sample>& samples,
                const FitOptions& options) {
  if (samples.empty())
    throw std::invalid_argument("fit_curve: no samples");
  for (const Sample& sample : samples)
    if (!(sample.seconds > 0) || !std::isfinite(sample.seconds))
      throw std::invalid_argument("fit_curve: every sample needs a positive time");
  const ShapeRange range = range_of(samples);
  char piecewise_in = family.piecewise_in;
  PiecewiseFit best = fit_pieces(family, piecewise_in, samples, range, options);
  // A step in k (a GPU sort that leaves one thread block) is not a cache
  // boundary in n; where pieces in k explain the points better, they win.
  if (family.uses_k && family.piecewise_in == 'n') {
    PiecewiseFit in_k = fit_pieces(family, 'k', samples, range, options);
    if (in_k.bic < best.bic) {
      best = std::move(in_k);
      piecewise_in = 'k';
    }
  }
  if (best.segments.empty())
    throw std::invalid_argument("fit_curve: no non-negative fit exists for these samples");
  return Curve(family, std::move(best.segments), range, piecewise_in);
}

} // namespace gcsim::cost
