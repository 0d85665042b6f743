#pragma once
// A sweep file: a base scenario plus a grid of `--set`-style overrides. The
// grid's cartesian product gives the points; every point is a plain
// `gcsim run BASE --set k=v ...` that can be rerun alone.
//
//   {"name": "scaling-dense",
//    "scenario": "quickstart.json",
//    "grid": {"platform.nodes": [2, 4, 8], "platform.link.bandwidth": ["1Gbps", "10Gbps"]},
//    "set": {"training.iterations": 2}}

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gcsim::sweep {

/// The most points a grid may have: each is a gcsim run and a folder, so
/// that 100,000 take a day at one second a run. Their `--dry-run` alone took
/// 19 s and 0.5 GB, and 200,000 points 38 s and 1.0 GB, on a one-axis grid
/// of the quick start (2026-12-03); memory grows with the points.
constexpr size_t kMostPoints = 100000;

/// One grid parameter: a dotted scenario path and the values it takes.
struct Axis {
  std::string key;
  std::vector<nlohmann::json> values;
};

struct SweepSpec {
  std::string name;
  std::filesystem::path file;
  std::filesystem::path scenario; // resolved like a path inside a scenario
  std::vector<Axis> axes;         // in the order the file lists them
  std::vector<std::pair<std::string, nlohmann::json>> fixed; // "set", file order
};

struct Point {
  int index = 0;
  std::string id;                         // "p003_nodes-8_bandwidth-1Gbps"
  std::vector<nlohmann::json> values;     // one per axis
  std::vector<std::string> set_arguments; // "key=value" texts for --set, fixed first
};

/// Reads and validates a sweep file; every problem is an InputError naming
/// the file and the JSON path.
SweepSpec load_sweep(const std::filesystem::path& file);

/// The grid's cartesian product (at most kMostPoints, as load_sweep checks);
/// the first axis varies slowest, the last fastest (like nested loops written
/// in file order).
std::vector<Point> expand(const SweepSpec& spec);

/// The text after "key=" that `--set` reads back as `value`: strings stay
/// bare unless they would parse as JSON, everything else is compact JSON.
std::string override_text(const nlohmann::json& value);

/// A grid value as a cell of the CSV: bare strings and numbers, compact JSON
/// for objects and arrays.
std::string value_text(const nlohmann::json& value);

} // namespace gcsim::sweep
