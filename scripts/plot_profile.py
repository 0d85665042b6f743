#!/usr/bin/python3
"""Plots a gcsim device profile: measured points against the fitted curves.

    /usr/bin/python3 scripts/plot_profile.py platforms/devices/cpu-amd-epyc-zen4.json \
        [--out results/figures/cpu-amd-epyc-zen4]

Writes OUT.png and OUT.pdf (default: the profile's path without .json). One
panel per kernel, log-log time against n; points of the same series (one k
at several n, as a floor of k gives, or else the same k/n to one significant
digit, rows and cols/n) share a colour, and the line drawn through them joins
the fitted model's times at each point's own shape, so a point's distance
from it is its residual in `gcsim profile show`. A derived profile (no
points) shows its curves for k = n/1000, 5 rows and n/100 columns. Uses Debian's python3-matplotlib.
A profile that cannot be read or lacks what the figure needs is exit 2 with
one line naming the file and the field, and so is an OUT that is a folder, or
whose PNG or PDF is a folder or the profile itself (checked before either is
written); an output that cannot be written, exit 1.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import write_figure_atomically  # noqa: E402
from script_input import (BadInput, Parser, check_output_file, json_kind,  # noqa: E402
                          read_json_object, refuse_folder_output, refuse_output_over_inputs,
                          run_script, use_plain_matplotlib)

use_plain_matplotlib()
import matplotlib.pyplot as plt  # noqa: E402

# Kernel and device names come from the profile: a "$" is no mathtext.
plt.rcParams["text.parse_math"] = False

TERMS = {
    "latency_s": lambda s: 1.0,
    "per_n_s": lambda s: s["n"],
    "per_k_s": lambda s: s["k"],
    "per_n_log2k_s": lambda s: s["n"] * math.log2(max(s["k"], 2.0)),
    "per_k_log2k_s": lambda s: s["k"] * math.log2(max(s["k"], 2.0)),
    "per_n_rows_s": lambda s: s["n"] * s["rows"],
    "per_rows_cols_s": lambda s: s["rows"] * s["cols"],
}


def read_profile(path):
    """The device profile's JSON object; anything else is refused (exit 2)."""
    profile = read_json_object(path, "a JSON object (a device profile)")
    check_profile(path, profile)
    return profile


def check_profile(path, profile):
    """Exit 2 naming the file and the field unless every value the figure
    reads is there, of its type and in range."""

    def bad(where, what):
        raise BadInput(f"{path}: {where}: {what}")

    def an_object(where, value):
        if not isinstance(value, dict):
            bad(where, f"expected an object, got {json_kind(value)}")
        return value

    def a_number(where, container, key, low=0.0, high=1e15, optional=False):
        if optional and key not in container:
            return
        value = container[key] if isinstance(container, list) else container.get(key)
        where = f"{where}/{key}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            bad(where, f"expected a number, got {json_kind(value)}")
        if not (math.isfinite(value) and low <= value <= high):
            bad(where, f"{value} is out of range ({low:g} to {high:g})")

    if not isinstance(profile.get("name"), str):
        bad("/name", f"expected a string, got {json_kind(profile.get('name'))}")
    provenance = an_object("/provenance", profile.get("provenance"))
    if not isinstance(provenance.get("kind"), str):
        bad("/provenance/kind", f"expected a string, got {json_kind(provenance.get('kind'))}")
    if "kernels" not in profile:
        bad("/kernels", "missing (not a device profile)")
    kernels = an_object("/kernels", profile["kernels"])
    if not kernels:
        bad("/kernels", "no kernels")
    for name, entry in kernels.items():
        where = f"/kernels/{name}"
        fit = an_object(f"{where}/fit", an_object(where, entry).get("fit"))
        if not isinstance(fit.get("family"), str):
            bad(f"{where}/fit/family", f"expected a string, got {json_kind(fit.get('family'))}")
        if fit.get("piecewise_in", "n") not in ("n", "k"):
            bad(f"{where}/fit/piecewise_in", f"expected 'n' or 'k', got {fit['piecewise_in']!r}")
        span = an_object(f"{where}/fit/range", fit.get("range")).get("n")
        if not (isinstance(span, list) and len(span) == 2):
            bad(f"{where}/fit/range/n", f"expected [least n, largest n], got {json_kind(span)}")
        for i in range(2):
            a_number(f"{where}/fit/range/n", span, i, low=1.0)
        if span[0] > span[1]:
            bad(f"{where}/fit/range/n", f"{span[0]:g} is above {span[1]:g}")
        segments = fit.get("segments")
        if not isinstance(segments, list) or not segments:
            bad(f"{where}/fit/segments", "expected a non-empty list of segments, got "
                + ("an empty list" if segments == [] else json_kind(segments)))
        for i, segment in enumerate(segments):
            here = f"{where}/fit/segments/{i}"
            # As gcsim's Curve::problem: a time cannot shrink as work grows.
            for key in list(TERMS) + ["up_to", "from"]:
                a_number(here, an_object(here, segment), key, optional=True)
        points = entry.get("points", [])
        if not isinstance(points, list):
            bad(f"{where}/points", f"expected a list, got {json_kind(points)}")
        for i, point in enumerate(points):
            here = f"{where}/points/{i}"
            an_object(here, point)
            a_number(here, point, "n", low=1.0)
            a_number(here, point, "seconds")
            for key in ("k", "rows", "cols"):
                a_number(here, point, key, optional=True)
            if point.get("k", 0) > point["n"]:
                bad(f"{here}/k", f"{point['k']:g} is more than n = {point['n']:g}")


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


def one_digit(ratio):
    """To one significant digit: k = 0.00098 n and 0.001 n are one series,
    0.002 n another."""
    return float("%.0e" % ratio) if ratio > 0 else 0.0


def series(points):
    """{(label, k, k/n, rows, cols/n): points}: a k met at three or more n
    (a floor, k = 64 samples whatever the rate) is a series of its own; the
    rest go by k/n. Grouped by decade, 0.2% of n was drawn on 0.1%'s curve
    and the floor's points on a curve through sizes they were never at."""
    ns_by_k = {}
    for p in points:
        if "k" in p:
            ns_by_k.setdefault(p["k"], set()).add(p["n"])
    groups = {}
    for p in points:
        rows, col_ratio = p.get("rows", 0), one_digit(p.get("cols", 0) / p["n"])
        label = []
        if "k" in p and len(ns_by_k[p["k"]]) >= 3:
            key = (p["k"], 0.0, rows, col_ratio)
            label.append("k=%g" % p["k"])
        else:
            # k = floor(rate x n): the rate lies in [k, k + 1) / n.
            key = (0, one_digit((p["k"] + 0.5) / p["n"]) if "k" in p else 0.0, rows, col_ratio)
            if key[1]:
                label.append("k=%gn" % key[1])
        if col_ratio:
            label.append("cols=%gn" % col_ratio)
        groups.setdefault((", ".join(label) or "measured",) + key, []).append(p)
    return groups


def fitted_line(fit, members):
    """(n, seconds) of the fitted model at each member's own shape, by n."""
    shapes = sorted(members, key=lambda p: (p["n"], p.get("k", 0)))
    return ([p["n"] for p in shapes],
            [curve_seconds(fit, {"n": p["n"], "k": p.get("k", 0), "rows": p.get("rows", 0),
                                 "cols": p.get("cols", 0)}) for p in shapes])


def main():
    parser = Parser(summary_of=__doc__)
    parser.add_argument("profile")
    parser.add_argument("--out", help="output path without extension, .png and .pdf added "
                                      "(default: the profile's own path without .json, so the "
                                      "figures land beside it)")
    args = parser.parse_args()
    if args.out == "":
        parser.error("--out: an empty path")
    profile = read_profile(args.profile)
    out = args.out or os.path.splitext(args.profile)[0]
    # Both figures can be written, and over no input, before either is: a
    # folder as --out made the names DIR/.png and ..png (a traceback), and
    # a folder named OUT.pdf left OUT.png behind.
    refuse_folder_output(out)
    for extension in ("png", "pdf"):
        check_output_file(f"{out}.{extension}")
        refuse_output_over_inputs(f"{out}.{extension}", [args.profile])
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
        groups = series(points)
        for index, (key, members) in enumerate(sorted(groups.items(), key=lambda g: g[0][1:])):
            colour = "C%d" % (index % 10)
            ax.scatter([p["n"] for p in members], [p["seconds"] for p in members], s=10,
                       color=colour, label=key[0], zorder=3)
            ax.plot(*fitted_line(fit, members), color=colour, linewidth=1)
        if not groups:
            ns = [n_min * (n_max / n_min) ** (i / 200) for i in range(201)]
            ts = [curve_seconds(fit, {"n": n, "k": max(1.0, n / 1000), "rows": 5,
                                      "cols": max(256.0, n / 100)}) for n in ns]
            ax.plot(ns, ts, color="C0", linewidth=1, label="fit")
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
    run_script(main)
