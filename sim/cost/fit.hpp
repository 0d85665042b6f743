#pragma once
// Fitted timing curves: a kernel's family (a few non-negative terms such as
// latency + per-element cost, or n log2 k for selection), optionally piecewise
// in n where a cache boundary shows (or in k where the algorithm changes with
// the selected count), fitted by least squares on relative error to measured
// points.

#include "sim/cost/kernels.hpp"

#include <array>
#include <limits>
#include <string>
#include <vector>

namespace gcsim::cost {

/// One measured (or derived) timing.
struct Sample {
  KernelShape shape;
  double seconds = 0;
};

/// One piece of a curve, fitted to the sizes in [from, up_to] of its
/// piecewise value (n or k, see Curve::piecewise_in). The first piece also covers everything below,
/// the last (up_to = infinity) everything above. In the gap between one piece's up_to and the next
/// one's from (where a cache boundary lies) each piece extends to the gap's geometric middle.
/// Coefficients follow the family's terms.
struct Segment {
  double from = 0;
  double up_to = std::numeric_limits<double>::infinity();
  std::array<double, 4> coefficients{};
};

/// The box of shapes a curve was fitted (or derived) over. Monotonicity is
/// checked over it; outside it the first and last segments extrapolate.
struct ShapeRange {
  double n_min = 0, n_max = 0;
  double k_min = 0, k_max = 0;
  double rows_min = 0, rows_max = 0;
  double cols_min = 0, cols_max = 0;
  /// Where k and cols grow with n (k = density x n, cols = n / 100), the
  /// ratios seen; monotonicity is then checked along those ratios instead of
  /// at the absolute corners (large n with tiny k never occurs).
  bool has_k_per_n = false, has_cols_per_n = false;
  double k_per_n_min = 0, k_per_n_max = 0;
  double cols_per_n_min = 0, cols_per_n_max = 0;
};

class Curve {
public:
  Curve() = default;
  /// `piecewise_in` is 'n' or 'k'; 0 means the family's own.
  Curve(const Family& family, std::vector<Segment> segments, ShapeRange range,
        char piecewise_in = 0);

  const Family& family() const { return *family_; }
  /// The shape field the segments' from / up_to are values of.
  char piecewise_in() const { return piecewise_in_; }
  const std::vector<Segment>& segments() const { return segments_; }
  const ShapeRange& range() const { return range_; }
  double seconds(const KernelShape& shape) const;

  /// Empty when the curve is valid; otherwise what is wrong, and in `where`
  /// the JSON-path suffix of the offending piece ("/segments/1/per_n_s").
  /// `monotone`: whether a drop where one piece takes over is a problem
  /// (not for a fit about to be refitted from its points).
  std::string problem(std::string* where = nullptr, bool monotone = true) const;

private:
  const Family* family_ = nullptr;
  char piecewise_in_ = 'n';
  std::vector<Segment> segments_;
  ShapeRange range_;
};

struct FitOptions {
  std::size_t max_segments = 4;
  /// A piece needs at least this many distinct piecewise values.
  std::size_t min_distinct_per_segment = 1;
};

/// Least squares on relative residuals ((model - t) / t), coefficients
/// constrained non-negative (exact NNLS by active-set enumeration: at most
/// four terms). The number of pieces and the breakpoints are chosen by BIC,
/// in the family's piecewise field and, for a
/// family that reads k, in k too (the lower BIC wins; a tie keeps the
/// family's). A piece that would start below the previous one's end is
/// lifted (its latency raised by the drop), so every fit is monotone.
/// Throws std::invalid_argument on no samples or non-positive times.
Curve fit_curve(const Family& family, const std::vector<Sample>& samples,
                const FitOptions& options = {});

/// The box spanned by the samples.
ShapeRange range_of(const std::vector<Sample>& samples);

} // namespace gcsim::cost
