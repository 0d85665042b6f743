#!/usr/bin/python3
"""Compare the measured points of two device profiles, kernel by kernel.

  /usr/bin/python3 scripts/calibrate/compare_profiles.py BEFORE.json AFTER.json [--by-density]
      [--min-log2 A]

For every kernel both profiles measured, the median, smallest and largest
ratio AFTER / BEFORE over the shapes (n, k, rows, cols) both hold (of n >=
2^A elements with --min-log2; a shape measured more than once counts once,
at the median of its timings), the same over every kernel's points, and the
GEMM rates; with --by-density also, for the kernels that read k, the median
ratio per density (k / n to the nearest power of ten) from 2^20 elements: how a calibration moved against the one before it (the figures
of platforms/devices/README.md). To see a committed profile against an
earlier one: `git show REV:platforms/devices/cpu-amd-epyc-zen4.json > before.json`.
Bad input: exit 2 and one line naming the file.
"""
import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from script_input import BadInput, Parser, json_kind, read_json_object, run_script  # noqa: E402


def number(value):
    """Whether value is a finite number >= 0."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)


def point_of(path, name, i, point):
    """(shape, seconds) of kernels/NAME/points/I, or BadInput naming it."""
    where = f"{path}: /kernels/{name}/points/{i}"
    if not isinstance(point, dict):
        raise BadInput(f"{where}: expected an object")
    shape = []
    for key in ("n", "k", "rows", "cols"):
        value = point.get(key, 0) if key != "n" else point.get(key)
        if not number(value) or (key == "n" and value == 0):
            raise BadInput(f"{where}/{key}: expected a size {'> 0' if key == 'n' else '>= 0'}, "
                           f"got {value!r}")
        shape.append(value)
    if not number(point.get("seconds")):
        raise BadInput(f"{where}/seconds: expected a finite number of seconds >= 0, "
                       f"got {point.get('seconds')!r}")
    return tuple(shape), point["seconds"]


def points_of(path):
    """(GEMM rate, {kernel: {shape: seconds}}) of a measured profile; a shape
    timed more than once (small n, where several densities clamp to one k) has the
    median of its timings, not whichever came last."""
    profile = read_json_object(path, "an object (a device profile)")
    if not isinstance(profile.get("kernels"), dict):
        raise BadInput(f"{path}: /kernels: expected an object of measured kernels, got "
                       f"{json_kind(profile.get('kernels')) if 'kernels' in profile else 'none'}")
    kernels = {}
    for name, kernel in profile["kernels"].items():
        if not isinstance(kernel, dict):
            raise BadInput(f"{path}: /kernels/{name}: expected an object, got {json_kind(kernel)}")
        points = kernel.get("points", [])
        if not isinstance(points, list):
            raise BadInput(f"{path}: /kernels/{name}/points: expected a list")
        timings = {}
        for i, point in enumerate(points):
            shape, seconds = point_of(path, name, i, point)
            timings.setdefault(shape, []).append(seconds)
        kernels[name] = {shape: statistics.median(t) for shape, t in timings.items()}
    compute = profile.get("compute", {})
    if not isinstance(compute, dict):
        raise BadInput(f"{path}: /compute: expected an object, got {json_kind(compute)}")
    return compute.get("forward_flop_rate"), kernels


def by_density(before, after):
    """{density: median ratio} over the shared points with n >= 2^20 and k > 0."""
    groups = {}
    for shape, seconds in before.items():
        n, k = shape[0], shape[1]
        if shape in after and n >= 1 << 20 and k > 0 and seconds > 0:
            density = 10.0 ** round(math.log10(k / n))
            groups.setdefault(density, []).append(after[shape] / seconds)
    return {d: statistics.median(r) for d, r in sorted(groups.items())}


def main(argv):
    parser = Parser(description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", metavar="BEFORE.json")
    parser.add_argument("after", metavar="AFTER.json")
    parser.add_argument("--by-density", action="store_true",
                        help="also the median ratio per density, for the kernels that read k")
    parser.add_argument("--min-log2", type=int, default=0, metavar="A",
                        help="only the points of n >= 2^A elements (the bandwidth-bound sizes, "
                             "say, apart from the launch-bound ones)")
    args = parser.parse_args(argv)
    if not 0 <= args.min_log2 <= 62:
        parser.error(f"--min-log2: expected an integer in [0, 62], got {args.min_log2}")
    smallest_n = 2 ** args.min_log2
    densities = args.by_density
    rate_before, before = points_of(args.before)
    rate_after, after = points_of(args.after)
    print(f"GEMM rate: {rate_before} -> {rate_after}")
    where = f", n >= 2^{args.min_log2}" if args.min_log2 else ""
    print(f"kernel             median  smallest  largest  (AFTER / BEFORE over shared points{where})")
    every = []
    for name in sorted(set(before) & set(after)):
        ratios = [after[name][shape] / before[name][shape] for shape in before[name]
                  if shape in after[name] and before[name][shape] > 0 and shape[0] >= smallest_n]
        if not ratios:
            print(f"  {name:17s} no shared points")
            continue
        every += ratios
        print(f"  {name:17s} {statistics.median(ratios):6.2f}  {min(ratios):8.2f}  "
              f"{max(ratios):7.2f}  ({len(ratios)} points)")
        if densities:
            for density, ratio in by_density(before[name], after[name]).items():
                print(f"    density {density:g}, n >= 2^20: median {ratio:.2f}")
    if every:
        print(f"every kernel {statistics.median(every):10.2f}  {min(every):8.2f}  "
              f"{max(every):7.2f}  ({len(every)} points)")


if __name__ == "__main__":
    run_script(main, sys.argv[1:])
