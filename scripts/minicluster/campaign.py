#!/usr/bin/python3
"""The mini-cluster validation in one command: measure, compare, tabulate.

  sudo /usr/bin/python3 scripts/minicluster/campaign.py --out DIR
      [--clusters 4x100,8x100,4x1000,8x1000] [--python PY] [--measure-only]
      [--scheduling] [--dry-run] [--gcsim G] [--trace T] [-- RUN.PY OPTIONS]

For each cluster (NODESxRATE, the link rate in Mbit/s; by default the four
of results/validation/) run.py measures a run into
DIR/minicluster-pNODES-RATE.json (RATE as 100mbit, 1gbit). Then gcsim
compares every run with its simulation on its own fit (`gcsim validate
--fit`: DIR/...-calibrated-platform.json and DIR/...-fit.json) and on its
description, nothing fitted (DIR/...-nofit.json), gcsim's printed tables
beside them (-fit.txt, -nofit.txt); plot.py draws the fitted
comparisons (DIR/validation.png, DIR/validation-phases.png); and
errors_over_runs.py tabulates the errors per cluster and how many runs meet
issue 7's limits, printed and written to DIR/errors.txt.

It resumes: a run already in DIR is kept, not measured again, so a campaign
stopped (or cut into pieces on a machine lent for minutes) goes on where it
was. The comparisons are made again from the runs every time (seconds).
--measure-only measures and stops there, for a machine without a gcsim
build: bring DIR back and run the same command without it.
--scheduling also runs `scheduling_check.py collectives` on each cluster
(small collectives timed as training issues them, the measurement a machine
with a core per rank is still to make), its output in
DIR/scheduling-pNODES-RATE.txt, kept like the runs. Options after -- go to
every run.py (--train, --iterations, --model, ...); runs of --model
wide-cnn need their trace for gcsim (--trace, results/validation/README.md).

Measuring needs root (run.py's network namespaces); comparing does not.
A bad option, or a file in DIR that is not its cluster's run, is exit 2
before anything runs; a run gcsim refuses is exit 2 after gcsim's line; a
step that fails is exit 1, the runs measured before it kept.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import run as run_py  # noqa: E402
from atomic_write import atomic_output  # noqa: E402
from errors_over_runs import bits_per_second, rate_name  # noqa: E402
from script_input import (MEASURED_RUN_FORMAT, BadInput, Parser, check_output_file,  # noqa: E402
                          read_json_object, run_script)

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CLUSTERS = "4x100,8x100,4x1000,8x1000"
# run.py's options the campaign gives each run itself.
CAMPAIGN_SETS = ("--nodes", "--rate", "--python", "--out")


class StepFailed(Exception):
    """A measurement or comparison that failed: exit 1, one line (its own
    output above it says why); the runs measured before it stay in DIR."""


def parse_args(argv):
    passed = []
    if "--" in argv:
        argv, passed = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    p = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder of the runs, comparisons and table")
    p.add_argument("--clusters", default=CLUSTERS,
                   help=f"NODESxRATE (Mbit/s), comma list (default {CLUSTERS})")
    p.add_argument("--python", default=run_py.PYTHON,
                   help="interpreter with torch that runs the ranks (run.py's --python)")
    p.add_argument("--gcsim", default=os.path.join(ROOT, "build", "gcsim"),
                   help="the gcsim that compares (default: the tree's build/gcsim)")
    p.add_argument("--trace", help="gcsim validate's --trace (the wide CNN's runs need theirs)")
    p.add_argument("--measure-only", action="store_true",
                   help="measure the runs missing in --out, compare nothing (no gcsim needed)")
    p.add_argument("--scheduling", action="store_true",
                   help="also scheduling_check.py collectives on each cluster")
    p.add_argument("--dry-run", action="store_true",
                   help="say what would be measured and compared; run nothing")
    args = p.parse_args(argv)
    if not args.out:
        raise BadInput("--out: empty: give the folder of the runs")
    for option in passed:
        name = option.split("=", 1)[0]
        if name in ("--", "-h", "--help"):
            raise BadInput(f"{option} after --: run.py's options only (its help: run.py --help)")
        # An abbreviation too: run.py would take it, and the campaign's own value after it.
        if name.startswith("--") and len(name) > 2 and any(s.startswith(name) for s in CAMPAIGN_SETS):
            raise BadInput(f"{option} after --: the campaign gives each run its --nodes and "
                           "--rate (--clusters), --python and --out")
    args.run_options = passed
    return args


def cluster_label(nodes, rate):
    """A cluster (its rate in Mbit/s) as the committed runs' files name it:
    p4-100mbit, p8-1gbit."""
    if rate >= 1000 and rate % 1000 == 0:
        return f"p{nodes}-{rate / 1000:g}gbit"
    return f"p{nodes}-{rate:g}mbit"


def parse_clusters(text, whole_rates):
    """[(nodes, rate)]; whole_rates: scheduling_check.py takes whole Mbit/s only."""
    clusters, names = [], set()
    for word in (w.strip() for w in text.split(",")):
        match = re.fullmatch(r"(\d+)x(\d+(?:\.\d+)?)", word)
        if not match:
            raise BadInput(f"--clusters: {word!r} is not NODESxRATE (4x100: 4 nodes at 100 Mbit/s)")
        nodes, rate = int(match.group(1)), float(match.group(2))
        if whole_rates and rate != int(rate):
            raise BadInput(f"--clusters: {word!r}: --scheduling takes whole Mbit/s")
        # Two spellings of one rate would name one file.
        name = cluster_label(nodes, rate)
        if name in names:
            raise BadInput(f"--clusters: {word!r} twice")
        names.add(name)
        clusters.append((nodes, rate))
    return clusters


class Cluster:
    """One cluster's run.py command and the files named after it."""

    def __init__(self, nodes, rate, out, args):
        self.nodes, self.rate = nodes, rate
        self.name = f"{nodes} nodes at {rate_name(rate * 1e6)}"
        self.stem = os.path.join(out, f"minicluster-{cluster_label(nodes, rate)}")
        self.run = self.stem + ".json"
        self.scheduling = os.path.join(out, f"scheduling-{cluster_label(nodes, rate)}.txt")
        self.run_argv = [*args.run_options, "--nodes", str(nodes), "--rate", f"{rate:g}",
                         "--python", args.python, "--out", self.run]
        try:
            self.run_args = run_py.parse_args(self.run_argv, prog="campaign.py run.py")
        except BadInput as why:
            raise BadInput(f"{self.name}: run.py {why}") from why

    def check(self):
        """run.py's own checks of a run to measure, the options after --
        included, before anything runs: a bad value would otherwise stop the
        campaign clusters later."""
        try:
            run_py.check_args(self.run_args)
        except BadInput as why:
            raise BadInput(f"{self.name}: run.py {why}") from why

    def measured(self):
        """The run already in DIR (None when there is none); refuses a file
        there that is not a run of this cluster (it would be compared as one)."""
        if not os.path.lexists(self.run):
            return None
        run = read_json_object(self.run, "a measured run")
        cluster = run.get("cluster") if isinstance(run.get("cluster"), dict) else {}
        link = cluster.get("link") if isinstance(cluster.get("link"), dict) else {}
        try:  # the rate as gcsim reads it: "1Gbps" is 1000 Mbit/s
            rate = bits_per_second(str(link.get("bandwidth")))
        except ValueError:
            rate = None
        if (run.get("format") != MEASURED_RUN_FORMAT or cluster.get("nodes") != self.nodes
                or rate != self.rate * 1e6):
            raise BadInput(f"{self.run}: not a run of {self.name} ({MEASURED_RUN_FORMAT}); "
                           "remove it to measure the cluster, or choose another --out")
        return run


class Child:
    """Runs one command to its end. A SIGINT, SIGTERM or SIGHUP to the
    campaign is passed on as SIGTERM and the command waited for, so that run.py removes
    its namespaces before the campaign exits."""

    def __init__(self):
        self.stopped = None  # the signal that stopped the campaign
        self.process = None
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._stop)

    def _stop(self, signum, _frame):
        self.stopped = signum
        if self.process is not None:  # send_signal skips a command already ended
            self.process.send_signal(signal.SIGTERM)

    def run(self, argv, what, stdout=None):
        print(f"campaign.py: {what}\n  {' '.join(argv)}", flush=True)
        if self.stopped is not None:
            raise KeyboardInterrupt(f"signal {self.stopped}")
        started = time.time()
        self.process = subprocess.Popen(argv, stdout=stdout)
        if self.stopped is not None:  # a signal came while it started: passed on now
            self.process.send_signal(signal.SIGTERM)
        # In slices: a signal that lands just before a blocking wait would
        # have its handler run only once the command ended by itself.
        while True:
            try:
                status = self.process.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                continue
        self.process = None
        if self.stopped is not None:
            raise KeyboardInterrupt(f"signal {self.stopped}")
        if status == 2:  # the command refused its input (a run in DIR): its line says why
            raise BadInput(f"{what}: refused, as the line above says")
        if status != 0:
            raise StepFailed(f"{what}: exit status {status}")
        print(f"campaign.py: {what}: done in {time.time() - started:.1f} s", flush=True)


def measure(clusters, to_measure, args, child):
    script = os.path.join(HERE, "run.py")
    for cluster in clusters:
        if cluster in to_measure:
            child.run([sys.executable, script, *cluster.run_argv], f"measure {cluster.name}")
        if args.scheduling and not os.path.exists(cluster.scheduling):
            # Written whole once the check ends: a stopped one is made again.
            # Its first line says when and on what machine.
            printed_to(cluster.scheduling, child,
                       [sys.executable, os.path.join(HERE, "scheduling_check.py"), "collectives",
                        "--nodes", str(cluster.nodes), "--rate", f"{cluster.rate:g}",
                        "--python", args.python],
                       f"scheduling_check.py collectives on {cluster.name}")


def printed_to(path, child, argv, what):
    """Runs argv with its output written to `path` whole, once it has ended
    well; returns that output."""
    with atomic_output(path) as temporary:
        with open(temporary, "w") as out:
            child.run(argv, what, stdout=out)
        with open(temporary) as made:
            return made.read()


def compare(clusters, args, child):
    trace = ["--trace", args.trace] if args.trace else []
    for cluster in clusters:
        # gcsim's printed tables beside its JSON: the figures a reader looks up first.
        printed_to(cluster.stem + "-fit.txt", child,
                   [args.gcsim, "validate", cluster.run, "--fit", *trace,
                    "--out", cluster.stem + "-calibrated-platform.json",
                    "--json", cluster.stem + "-fit.json"], f"compare {cluster.name} on its fit")
        printed_to(cluster.stem + "-nofit.txt", child,
                   [args.gcsim, "validate", cluster.run, *trace, "--json", cluster.stem + "-nofit.json"],
                   f"compare {cluster.name} on its description")
    child.run([sys.executable, os.path.join(ROOT, "scripts", "plot.py"), "--validation",
               *[c.stem + "-fit.json" for c in clusters], "--out", args.out], "draw the comparisons")
    print(printed_to(os.path.join(args.out, "errors.txt"), child,
                     [sys.executable, os.path.join(HERE, "errors_over_runs.py"), "--gcsim", args.gcsim,
                      *trace, *[c.run for c in clusters]], "tabulate the errors"), end="")


def main(argv):
    args = parse_args(argv)
    if os.path.lexists(args.out) and not os.path.isdir(args.out):
        raise BadInput(f"--out: {args.out} is not a folder")
    clusters = [Cluster(nodes, rate, args.out, args)
                for nodes, rate in parse_clusters(args.clusters, args.scheduling)]
    if not args.measure_only and not (os.path.isfile(args.gcsim) and os.access(args.gcsim, os.X_OK)):
        raise BadInput(f"--gcsim: {args.gcsim} is not an executable file (build it, or --measure-only)")
    args.gcsim = os.path.abspath(args.gcsim)
    if args.trace and not os.path.isdir(args.trace):
        raise BadInput(f"--trace: {args.trace} is not a folder")
    to_measure = []
    for cluster in clusters:
        run = cluster.measured()
        if run is None:
            cluster.check()
            to_measure.append(cluster)
        # A kept run says what it was measured with: other options after --
        # than this campaign's are kept too.
        print(f"  {cluster.name}: {cluster.run}  " + (
            "to measure" if run is None else
            f"measured {run.get('date', '')} (kept): {run.get('source', '?')}"))
        if args.scheduling:
            print(f"    {cluster.scheduling}  "
                  + ("kept" if os.path.exists(cluster.scheduling) else "to measure"))
    if not args.measure_only:
        print(f"  then each compared on its fit and its description, drawn, and the errors "
              f"tabulated in {os.path.join(args.out, 'errors.txt')}")
    if args.dry_run:
        return 0
    # Every step writes in it: a folder it cannot write is said now.
    check_output_file(os.path.join(args.out, "errors.txt"))
    # The scheduling check makes namespaces too.
    measured_here = [c for c in clusters if c in to_measure
                     or (args.scheduling and not os.path.exists(c.scheduling))]
    if measured_here and os.geteuid() != 0:
        sys.exit(f"campaign.py: measuring {len(measured_here)} cluster(s) needs root (run.py's "
                 "and scheduling_check.py's network namespaces); the runs already in --out can "
                 "be compared without")
    os.makedirs(args.out, exist_ok=True)
    child = Child()
    measure(clusters, to_measure, args, child)
    if not args.measure_only:
        compare(clusters, args, child)
    return 0


if __name__ == "__main__":
    try:
        run_script(main, sys.argv[1:], failures=(StepFailed,))
    except KeyboardInterrupt as why:
        sys.exit(f"campaign.py: stopped ({why}); the runs measured before it are kept")
