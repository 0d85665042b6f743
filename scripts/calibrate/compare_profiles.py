#!/usr/bin/python3
"""Compare the measured points of two device profiles, kernel by kernel.

  /usr/bin/python3 scripts/calibrate/compare_profiles.py BEFORE.json AFTER.json [--by-density]

For every kernel both profiles measured, the median, smallest and largest
ratio AFTER / BEFORE over the shapes (n, k, rows, cols) both hold, and the
GEMM rates; with --by-density also, for the kernels that read k, the median
ratio per density (k / n to the nearest power of ten) from 2^20 elements: how a calibration moved against the one before it (the figures
of platforms/devices/README.md). To see a committed profile against an
earlier one: `git show REV:platforms/devices/cpu-amd-epyc-zen4.json > before.json`.
Bad input: exit 2 and one line naming the file.
"""
import json
import math
import statistics
import sys


class BadInput(Exception):
    pass


def points_of(path):
    """(GEMM rate, {kernel: {shape: seconds}}) of a measured profile."""
    try:
        with open(path) as handle:
            profile = json.load(handle)
        kernels = {}
        for name, kernel in profile["kernels"].items():
            kernels[name] = {(p["n"], p.get("k", 0), p.get("rows", 0), p.get("cols", 0)): p["seconds"]
                             for p in kernel.get("points", [])}
        return profile.get("compute", {}).get("forward_flop_rate"), kernels
    except OSError as why:
        raise BadInput(f"{path}: {why.strerror}")
    except (ValueError, KeyError, TypeError, AttributeError) as why:
        raise BadInput(f"{path}: not a device profile with measured points ({why!r})")


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
    densities = "--by-density" in argv
    argv = [a for a in argv if a != "--by-density"]
    if len(argv) != 2:
        raise BadInput("usage: compare_profiles.py BEFORE.json AFTER.json [--by-density]")
    rate_before, before = points_of(argv[0])
    rate_after, after = points_of(argv[1])
    print(f"GEMM rate: {rate_before} -> {rate_after}")
    print("kernel             median  smallest  largest  (AFTER / BEFORE over shared points)")
    for name in sorted(set(before) & set(after)):
        ratios = [after[name][shape] / before[name][shape] for shape in before[name]
                  if shape in after[name] and before[name][shape] > 0]
        if not ratios:
            print(f"  {name:17s} no shared points")
            continue
        print(f"  {name:17s} {statistics.median(ratios):6.2f}  {min(ratios):8.2f}  "
              f"{max(ratios):7.2f}  ({len(ratios)} points)")
        if densities:
            for density, ratio in by_density(before[name], after[name]).items():
                print(f"    density {density:g}, n >= 2^20: median {ratio:.2f}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except BadInput as why:
        print(f"compare_profiles.py: {why}", file=sys.stderr)
        sys.exit(2)
