#!/usr/bin/python3
"""Whole-simulation benchmark: wall seconds per simulated iteration and peak
RSS of `gcsim run` on given scenarios (medians over repetitions, one process
per run, measured with os.wait4).

  /usr/bin/python3 scripts/bench_simulation.py [--gcsim build/gcsim] [--repeat 3] \
      SCENARIO [SCENARIO ...] [--set path=value ...] [--replay DIR/schedule.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run_once(gcsim, scenario, sets, out, replay=None):
    command = [gcsim, "run", scenario, "--out", out, "--quiet"]
    for item in sets:
        command += ["--set", item]
    if replay:
        command += ["--replay", replay]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    stderr = process.stderr.read().decode()
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {stderr}")
    with open(os.path.join(out, "result.json")) as handle:
        result = json.load(handle)
    return wall, usage.ru_maxrss / 1024.0, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenarios", nargs="+")
    parser.add_argument("--gcsim", default=os.path.join(os.path.dirname(__file__), "..", "build", "gcsim"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], dest="sets")
    parser.add_argument("--replay", help="time the timing-only replay of this schedule.json")
    args = parser.parse_args()
    print(f"{'scenario':<34} {'workers':>7} {'iters':>5} {'wall s (median)':>16} "
          f"{'s / iteration':>14} {'peak RSS MiB':>13} {'simulated iteration s':>22}")
    for scenario in args.scenarios:
        walls, rss = [], []
        with tempfile.TemporaryDirectory() as out:
            for _ in range(args.repeat):
                wall, peak, result = run_once(args.gcsim, scenario, args.sets, out, args.replay)
                walls.append(wall)
                rss.append(peak)
        iterations = result["summary"]["iterations"]
        median = statistics.median(walls)
        print(f"{result['scenario']['name']:<34} {result['summary']['workers']:>7} {iterations:>5} "
              f"{median:>16.3f} {median / iterations:>14.3f} {max(rss):>13.1f} "
              f"{result['summary']['iteration_time_s']:>22.4f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
