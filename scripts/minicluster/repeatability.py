#!/usr/bin/python3
"""How well mini-cluster runs of the same cluster repeat one another.

  /usr/bin/python3 scripts/minicluster/repeatability.py results/validation/minicluster-*.json \
      results/validation/repeats/*.json

Groups the measured runs by cluster (nodes and link rate) and prints, for
every group of two runs or more: the run-to-run difference of the
(float32) collectives of 4 MiB and more (geometric mean of |ln(a / b)| over every pair
of runs and every point both measured, the same collective, algorithm,
ranks and size, as exp(.) - 1, the measure gcsim validate gives its errors
in; or that there is none to compare), the point that differs most, and
each training run's mean iteration after the warm-up in every run. A model
cannot be judged below the difference between two measurements of the same
thing.
"""
import itertools
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collective_models import LARGE, geomean, load_run  # noqa: E402
from script_input import Parser, run_script  # noqa: E402


def steady_mean(training):
    iterations = training["iterations"][training.get("warmup_iterations", 0):]
    return sum(i["iteration_s"] for i in iterations) / len(iterations)


def parse_args(argv):
    parser = Parser(summary_of=__doc__)
    parser.add_argument("runs", nargs="+", metavar="RUN.json",
                        help="measured runs (results/validation/README.md's format)")
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    groups = {}
    for path in args.runs:  # every file checked before any output
        run = load_run(path, models=False)
        key = (run["cluster"]["nodes"], run["cluster"]["link"]["bandwidth"])
        groups.setdefault(key, []).append((path, run))
    for (nodes, rate), runs in sorted(groups.items()):
        if len(runs) < 2:
            continue
        # A point is the same in two runs only with the same algorithm and
        # ranks; collectives are optional (a run of training alone).
        points = [{(p["collective"], p.get("algorithm"), p["ranks"], p["bytes"]): p["seconds"]
                   for p in run.get("collectives", []) if p["bytes"] >= LARGE}
                  for _, run in runs]
        pairs = [(a[k], b[k]) for a, b in itertools.combinations(points, 2) for k in a if k in b]
        worst = max(((abs(math.log(a[k] / b[k])), k) for a, b in itertools.combinations(points, 2)
                     for k in a if k in b), default=(0.0, None))
        print(f"{nodes} nodes, {rate}: {len(runs)} runs ({', '.join(run.get('date', '?')[11:16] for _, run in runs)} UTC)")
        if pairs:
            most = 100 * (math.exp(worst[0]) - 1)
            print(f"  collectives >= 4 MiB, run to run: {100 * geomean(pairs):.1f}% "
                  f"(most: {worst[1][0]} {worst[1][3] >> 20} MiB, {most:.0f}%)")
        else:
            print("  collectives >= 4 MiB: no point (collective, algorithm, ranks and size) "
                  "measured in two of these runs: nothing to compare")
        names = [t["name"] for t in runs[0][1].get("training", [])]
        for name in names:
            means = [steady_mean(t) for _, run in runs for t in run.get("training", [])
                     if t["name"] == name]
            print(f"  {name:6s} iteration: " + " / ".join(f"{m * 1e3:.1f}" for m in means) + " ms"
                  f" (spread {100 * (max(means) / min(means) - 1):.0f}%)")


if __name__ == "__main__":
    run_script(main, sys.argv[1:])
