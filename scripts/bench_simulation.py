#!/usr/bin/python3
"""Whole-simulation benchmark: wall seconds per simulated iteration and peak
RSS of `gcsim run` on given scenarios (medians over repetitions, one process
per run, measured with os.wait4).

  /usr/bin/python3 scripts/bench_simulation.py [--gcsim build/gcsim] [--repeat 3] \
      SCENARIO [SCENARIO ...] [--set path=value ...] [--replay DIR/schedule.json]

A bad option or a missing file is exit 2 with one line; so is a scenario that
gcsim refuses (its exit 2 and its one line are passed on); any other gcsim
failure is exit 1 with one line.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_input import BadInput, Parser, integer_in, run_script  # noqa: E402

MAX_REPEAT = 1000


class RunFailed(Exception):
    """gcsim failed on a scenario it accepted: exit 1, its last line."""


def run_once(gcsim, scenario, sets, out, replay=None):
    command = [gcsim, "run", scenario, "--out", out, "--quiet"]
    for item in sets:
        command += ["--set", item]
    if replay:
        command += ["--replay", replay]
    start = time.perf_counter()
    # gcsim's stderr goes to a file, not a pipe: a pipe read only after
    # wait4 stalls a gcsim that writes more than the pipe holds.
    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        except OSError as error:
            raise BadInput(f"--gcsim {gcsim}: cannot run it: {error.strerror}")
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        lines = [line for line in stderr.splitlines() if line.strip()]
        said = lines[-1].strip() if lines else "no message"
        if code == 2:  # gcsim refused its input: pass its one line and status on
            raise BadInput(said)
        how = f"signal {-code}" if code < 0 else f"status {code}"
        raise RunFailed(f"gcsim run {scenario} failed ({how}): {said}")
    # Exit 0 without a result: --gcsim is not gcsim (a wrapper, another tool).
    try:
        with open(os.path.join(out, "result.json")) as handle:
            result = json.load(handle)
    except (OSError, ValueError) as error:
        raise RunFailed(f"gcsim run {scenario} exited 0 but left no readable result.json "
                        f"({getattr(error, 'strerror', None) or error}): is --gcsim {gcsim} gcsim?")
    return wall, usage.ru_maxrss / 1024.0, result


def main():
    parser = Parser(summary_of=__doc__)
    parser.add_argument("scenarios", nargs="+")
    parser.add_argument("--gcsim", default=os.path.join(os.path.dirname(__file__), "..", "build", "gcsim"))
    parser.add_argument("--repeat", type=integer_in(1, MAX_REPEAT), default=3,
                        help=f"runs per scenario, 1 to {MAX_REPEAT} (default 3)")
    parser.add_argument("--set", action="append", default=[], dest="sets")
    parser.add_argument("--replay", help="time the timing-only replay of this schedule.json")
    args = parser.parse_args()
    if not os.path.isfile(args.gcsim) or not os.access(args.gcsim, os.X_OK):
        parser.error(f"--gcsim {args.gcsim}: "
                     + ("not an executable file" if os.path.exists(args.gcsim) else "no such file"))
    for path in args.scenarios:
        if not os.path.isfile(path):
            parser.error(f"{path}: " + ("not a file" if os.path.exists(path) else "no such file"))
    if args.replay is not None and not os.path.isfile(args.replay):
        parser.error(f"--replay {args.replay}: "
                     + ("not a file" if os.path.exists(args.replay) else "no such file"))
    header = (f"{'scenario':<34} {'workers':>7} {'iters':>5} {'wall s (median)':>16} "
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
        if header:  # once the first scenario ran: a refused one prints no table
            print(header)
            header = None
        print(f"{result['scenario']['name']:<34} {result['summary']['workers']:>7} {iterations:>5} "
              f"{median:>16.3f} {median / iterations:>14.3f} {max(rss):>13.1f} "
              f"{result['summary']['iteration_time_s']:>22.4f}")
        sys.stdout.flush()


if __name__ == "__main__":
    run_script(main, failures=(RunFailed,))
