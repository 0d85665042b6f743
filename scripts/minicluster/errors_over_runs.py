#!/usr/bin/python3
"""gcsim's error on many mini-cluster runs at once, each validated on its own fit.

  /usr/bin/python3 scripts/minicluster/errors_over_runs.py [--gcsim G] [--trace T] RUN.json...

One run's training error moves by tens of points from one run to the next on
a shared machine (experiments.md, "Run-to-run repeatability"), so a single
run says little. This runs `gcsim validate RUN --fit` on every file, with
today's gcsim, and prints per cluster (nodes, link rate): how many runs, and
for the collectives of 4 MiB and more, the float16 allreduces of 4 MiB and
more where the runs have them, and each training run, the median error, its
range, and how many runs are within issue 7's limits (5% for the
collectives, 10% for the training iterations). Runs without training (or
without collectives) count only where they have them. --trace is gcsim
validate's: the gradient trace the compressed runs' compressors run on
(the wide CNN's runs need its own, `--model wide-cnn` in run.py).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from script_input import (Parser, open_input, parse_bandwidth, read_json_object,  # noqa: E402
                          run_script)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLECTIVES = "collectives >= 4 MiB"
# The float16 allreduces of 4 MiB and more (run.py's, which --fit fits the
# float16 sum to), apart from the network's collectives as gcsim keeps them.
FLOAT16 = "float16 allreduce >= 4 MiB"
# Geometric-mean errors, which have no sign, and the summary entry of each.
GEOMEANS = {COLLECTIVES: "collectives_4MiB_and_more", FLOAT16: "float16_allreduce_4MiB_and_more"}
# Issue 7's limits: on the collectives' geometric-mean error, and on each
# training iteration's error.
COLLECTIVES_LIMIT, TRAINING_LIMIT = 0.05, 0.10


def parse_args(argv):
    parser = Parser(summary_of=__doc__)
    parser.add_argument("--gcsim", default=os.path.join(ROOT, "build", "gcsim"))
    parser.add_argument("--trace", help="gcsim validate's --trace for every run (default: "
                        "gcsim's, the small CNN's)")
    parser.add_argument("runs", nargs="+", metavar="RUN.json")
    args = parser.parse_args(argv)
    if os.path.isdir(args.gcsim):
        refuse(f"--gcsim: {args.gcsim} is a folder, not gcsim")
    if not (os.path.isfile(args.gcsim) and os.access(args.gcsim, os.X_OK)):
        refuse(f"--gcsim: {args.gcsim} is not an executable file")
    args.gcsim = os.path.abspath(args.gcsim)  # that file, never one found on PATH
    for path in args.runs:  # a folder, a FIFO, a device: refused before any gcsim runs
        open_input(path).close()
    return args


def refuse(message):
    """Bad input: one line, exit 2."""
    print(f"errors_over_runs.py: {message}", file=sys.stderr)
    sys.exit(2)


def bits_per_second(bandwidth):
    """A platform bandwidth ("100Mbps", "1Gbps", "1.25e8Bps") in bit/s, so that
    one rate written two ways is one cluster."""
    bytes_per_second = parse_bandwidth(bandwidth)  # as gcsim reads it
    if bytes_per_second is None:
        raise ValueError(f"cannot read the bandwidth {bandwidth!r}")
    return bytes_per_second * 8


def rate_name(bits):
    return f"{bits / 1e9:g} Gbit/s" if bits >= 1e9 else f"{bits / 1e6:g} Mbit/s"


def errors_of(gcsim, path, tmp, trace=None):
    """{quantity: signed error} of one run on its own fit, and its cluster."""
    report = os.path.join(tmp, "report.json")
    if os.path.exists(report):  # the previous run's: never read as this one's
        os.remove(report)
    try:
        done = subprocess.run([gcsim, "validate", path, "--fit", "--json", report, "--quiet"]
                              + (["--trace", trace] if trace else []),
                              capture_output=True, text=True, errors="replace")
    except OSError as error:  # not a program this machine runs
        refuse(f"--gcsim: cannot run {gcsim}: {error.strerror}")
    said = "; ".join(line for line in done.stderr.splitlines() if line.strip())
    if done.returncode == 2:  # gcsim refused the run: its own line names the file
        refuse(said or f"{path}: refused by gcsim validate")
    if done.returncode != 0:
        sys.exit(f"errors_over_runs.py: {path}: gcsim validate exited {done.returncode}: {said}")
    try:
        with open(report) as f:
            comparison = json.load(f)
        if not isinstance(comparison.get("summary"), dict):
            raise ValueError("no summary")
    except (OSError, ValueError, AttributeError):
        refuse(f"--gcsim: {gcsim} wrote no comparison of {path} (is it gcsim?)")
    cluster = read_json_object(path, "an object (a measured run)").get("cluster")
    # Grouped by nodes and link rate: a platform without them (an XML one) has no group.
    # (gcsim, which ran it, reads a whole number such as 4.0 as nodes.)
    nodes = cluster.get("nodes") if isinstance(cluster, dict) else None
    if (not isinstance(nodes, (int, float)) or isinstance(nodes, bool) or nodes != int(nodes)
            or not isinstance(cluster.get("link"), dict)):
        refuse(f"{path}: /cluster: no nodes and link to group the run by (a star's)")
    try:
        rate = bits_per_second(cluster["link"]["bandwidth"])
    except ValueError as error:
        refuse(f"{path}: /cluster/link/bandwidth: {error}")
    errors = {}
    for quantity, key in GEOMEANS.items():
        entry = comparison["summary"].get(key, {})
        if entry.get("points", 0) > 0:
            errors[quantity] = entry["geomean_error"]
    for training in comparison.get("training", []):
        errors[training["name"] + " iteration"] = training["relative_error"]["iteration_s"]
    return (int(nodes), rate), errors


def main(argv):
    args = parse_args(argv)
    clusters = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.runs:
            key, errors = errors_of(args.gcsim, path, tmp, args.trace)
            clusters.setdefault(key, []).append(errors)
    for (nodes, rate), runs in sorted(clusters.items()):
        print(f"{nodes} nodes, {rate_name(rate)}: {len(runs)} run{'s' if len(runs) > 1 else ''}")
        quantities = []
        for errors in runs:
            quantities += [q for q in errors if q not in quantities]
        for quantity in quantities:
            values = [errors[quantity] for errors in runs if quantity in errors]
            limit = COLLECTIVES_LIMIT if quantity in GEOMEANS else TRAINING_LIMIT
            within = sum(abs(v) <= limit for v in values)
            # The collectives' geometric-mean error has no sign; an
            # iteration's error does (simulated short is negative).
            sign = " " if quantity in GEOMEANS else "+"
            print(f"  {quantity:26s} median {100 * statistics.median(values):{sign}6.1f}%  "
                  f"range {100 * min(values):{sign}6.1f}% .. {100 * max(values):{sign}6.1f}%  "
                  f"within {100 * limit:.0f}%: {within} of {len(values)}")


if __name__ == "__main__":
    run_script(main, sys.argv[1:])
