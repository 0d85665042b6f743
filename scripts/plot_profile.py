#!/usr/bin/python3
"""Plots a gcsim device profile: measured points against the fitted curves.

    /usr/bin/python3 scripts/plot_profile.py platforms/devices/cpu-amd-epyc-zen4.json \
        [--out results/figures/cpu-amd-epyc-zen4]

Writes OUT.png and OUT.pdf (default: the profile's path without .json). One
panel per kernel, log-log time against n; points of the same series (same k/n,
rows, cols/n) share a colour and the curve drawn through them is the fitted
model evaluated along that series. A derived profile (no points) shows its
curves for k = n/1000, 5 rows and n/100 columns. Uses Debian's python3-matplotlib.
"""
import argparse
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import WriteError, write_figure_atomically  # noqa: E402

TERMS = {
    "latency_s": lambda s: 1.0,
    "per_n_s": lambda s: s["n"],
    "per_k_s": lambda s: s["k"],
    "per_n_log2k_s": lambda s: s["n"] * math.log2(max(s["k"], 2.0)),
    "per_k_log2k_s": lambda s: s["k"] * math.log2(max(s["k"], 2.0)),
    "per_n_rows_s": lambda s: s["n"] * s["rows"],
    "per_rows_cols_s": lambda s: s["rows"] * s["cols"],
}


def segment_value(segment, shape):
    return sum(value * TERMS[key](shape) for key, value in segment.items() if key in TERMS)


def curve_seconds(fit, shape):
    """Same rule as sim/cost/fit.cpp Curve::seconds."""
    segments = fit["segments"]
    x = shape[fit.get("piecewise_in", "n")]
    for i, segment in enumerate(segments):
        up_to = segment.get("up_to", math.inf)
        if x > up_to:
            continue
        start = segment.get("from", segments[i - 1].get("up_to", 0) if i > 0 else 0)
        if i == 0 or x >= start:
            return segment_value(segment, shape)
        previous = segments[i - 1]
        chosen = previous if x * x <= previous["up_to"] * start else segment
        return segment_value(chosen, shape)
    return segment_value(segments[-1], shape)


def decade(ratio):
    """Nearest power of ten: k = 0.00098 n and 0.001 n are one series."""
    return 10.0 ** round(math.log10(ratio)) if ratio > 0 else 0.0


def series_key(point):
    n = point["n"]
    return (decade(point.get("k", 0) / n), point.get("rows", 0), decade(point.get("cols", 0) / n))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile")
    parser.add_argument("--out", help="output path without extension")
    args = parser.parse_args()
    with open(args.profile) as f:
        profile = json.load(f)
    out = args.out or os.path.splitext(args.profile)[0]
    kernels = profile["kernels"]
    names = list(kernels)
    cols = 4
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        entry = kernels[name]
        fit = entry["fit"]
        n_min, n_max = fit["range"]["n"]
        points = entry.get("points", [])
        groups = {}
        for p in points:
            groups.setdefault(series_key(p), []).append(p)
        if not groups:
            groups = {(1e-3, 5, 0.01): []}
        for index, (key, members) in enumerate(sorted(groups.items())):
            colour = "C%d" % (index % 10)
            k_ratio, row_count, col_ratio = key
            label = []
            if k_ratio:
                label.append("k=%gn" % k_ratio)
            if col_ratio:
                label.append("cols=%gn" % col_ratio)
            if members:
                ax.scatter([p["n"] for p in members], [p["seconds"] for p in members], s=10,
                           color=colour, label=", ".join(label) or "measured", zorder=3)
            ns = [n_min * (n_max / n_min) ** (i / 200) for i in range(201)]
            ts = []
            for n in ns:
                shape = {"n": n, "k": max(1.0, k_ratio * n), "rows": row_count or 5,
                         "cols": max(256.0, col_ratio * n) if col_ratio else 0.0}
                ts.append(curve_seconds(fit, shape))
            ax.plot(ns, ts, color=colour, linewidth=1, label=None if members else "fit")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title("%s [%s]" % (name, fit["family"]), fontsize=9)
        ax.set_xlabel("n (elements)", fontsize=8)
        ax.set_ylabel("seconds", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="major", alpha=0.3)
        if len(groups) > 1 or not points:
            ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    provenance = profile["provenance"]
    fig.suptitle("%s - %s%s" % (profile["name"], provenance["kind"],
                                (" (%s)" % provenance.get("date")) if provenance.get("date") else ""),
                 fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    for extension in ("png", "pdf"):
        write_figure_atomically(fig, "%s.%s" % (out, extension), dpi=120)
        print("wrote %s.%s" % (out, extension))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except WriteError as error:
        sys.exit(f"plot_profile.py: {error}")
