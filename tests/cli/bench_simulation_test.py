#!/usr/bin/python3
"""scripts/bench_simulation.py reports what README's Speed table says it
does, and scripts/cpu_info.py names the CPU the way the scripts record it.

bench_simulation.py runs a stand-in gcsim whose runs take known times and
one of which holds 200 MiB: its table's wall time is the median of the runs
(not the mean), its seconds per iteration that median over the iterations,
its peak RSS the largest run's in MiB (ru_maxrss is KiB); --set and --replay
reach gcsim; gcsim's refusal (exit 2, one line) is passed on as exit 2 and
that line, any other failure is exit 1, and neither prints a table. One run
of the real gcsim on quickstart.json gives a row.

cpu_info.cpu_identity on made-up /proc/cpuinfo texts: the first processor's
name, family, model and stepping; {} where there is no model name or the file
cannot be read.

Usage: bench_simulation_test.py PATH/TO/gcsim   (about 6 s)
"""
import io
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from checks import Checks, refusal_problems  # noqa: E402
import cpu_info  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
BENCH = os.path.join(ROOT, "scripts", "bench_simulation.py")
PYTHON = "/usr/bin/python3"

# A gcsim stand-in: `run SCENARIO --out DIR --quiet [--set X] [--replay F]`.
# The scenario says how long each run sleeps, how many MiB it holds, and
# how it ends; runs are counted in a file beside it, and each argv noted.
FAKE = r'''#!/usr/bin/python3
import json, os, sys, time
scenario, out = sys.argv[2], sys.argv[sys.argv.index("--out") + 1]
with open(scenario) as handle:
    plan = json.load(handle)
count = scenario + ".runs"
run = len(open(count).read().splitlines()) if os.path.exists(count) else 0
with open(count, "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\n")
if plan.get("exit"):
    sys.stderr.write("some progress\n" + plan["say"] + "\n")
    sys.exit(plan["exit"])
held = b"x" * (plan["mib"][run] << 20)
time.sleep(plan["sleep"][run])
with open(os.path.join(out, "result.json"), "w") as handle:
    json.dump({"scenario": {"name": plan["name"]},
               "summary": {"workers": 8, "iterations": 4, "iteration_time_s": 0.0815}}, handle)
'''

check = Checks()


def bench(*args):
    return subprocess.run([PYTHON, BENCH, *args], capture_output=True, text=True, timeout=120)


def table_rows(stdout, count=1):
    """The `count` rows below the one header, split: name, workers,
    iterations, median wall, s / iteration, peak RSS MiB, simulated
    iteration; None unless stdout is exactly that."""
    lines = stdout.strip().splitlines()
    if len(lines) != count + 1 or not lines[0].startswith("scenario"):
        return None
    return [line.split() for line in lines[1:]]


with tempfile.TemporaryDirectory() as work:
    fake = os.path.join(work, "gcsim")
    with open(fake, "w") as handle:
        handle.write(FAKE)
    os.chmod(fake, 0o755)

    def scenario(name, **plan):
        path = os.path.join(work, name + ".json")
        with open(path, "w") as handle:
            json.dump(dict(plan, name=name), handle)
        return path

    # Walls of about 0, 4 and 0.5 s: the median is the 0.5 s run, the mean
    # at least 1.5 s, so up to 0.9 s of start-up on a loaded machine still
    # tells them apart. The 4 s run holds 200 MiB, the others nothing.
    timed = scenario("timed", sleep=[0.0, 4.0, 0.5], mib=[0, 200, 0])
    replay = scenario("schedule", sleep=[], mib=[])
    quick = scenario("quick", sleep=[0.0] * 3, mib=[0] * 3)
    done = bench("--gcsim", fake, "--repeat", "3", timed, quick, "--set",
                 "training.iterations=4", "--replay", replay)
    rows = table_rows(done.stdout, 2)
    row = rows and rows[0]
    check(done.returncode == 0 and rows is not None and row[:3] == ["timed", "8", "4"]
          and row[6] == "0.0815" and rows[1][0] == "quick",
          f"one header and a row per scenario: name, workers, iterations, simulated iteration "
          f"({done.returncode}: {done.stdout!r} {done.stderr.strip()[-300:]!r})")
    if row:
        median, per_iteration, rss = float(row[3]), float(row[4]), float(row[5])
        check(0.5 <= median < 1.4,
              f"the wall time is the median of the runs (the 0.5 s one), not the mean: {median}")
        check(abs(per_iteration - median / 4) <= 0.0015,
              f"seconds per iteration are the median over 4 iterations: {per_iteration} "
              f"for {median}")
        check(200 <= rss < 400, f"peak RSS is the largest run's, in MiB (200 MiB held): {rss}")
    with open(timed + ".runs") as handle:
        argvs = [json.loads(line) for line in handle]
    check(len(argvs) == 3 and all(a[:2] == ["run", timed] and "--quiet" in a
                                  and a[a.index("--set") + 1] == "training.iterations=4"
                                  and a[a.index("--replay") + 1] == replay for a in argvs),
          f"--repeat 3 runs gcsim three times, with --set and --replay: {argvs}")

    # gcsim's refusal is the script's, and so is its exit status; any other
    # failure is exit 1. Neither prints the table's header.
    refused = bench("--gcsim", fake, scenario("refused", exit=2,
                                              say="gcsim: x.json: /training: bad"))
    problems = refusal_problems(refused, ["bench_simulation.py: gcsim: x.json: /training: bad"])
    check(not problems and not refused.stdout,
          f"gcsim's exit 2 is passed on with its last line: {problems or 'exit 2, one line'}")
    crashed = bench("--gcsim", fake, scenario("crashed", exit=3, say="out of memory"))
    problems = refusal_problems(crashed, ["failed (status 3): out of memory"], status=1)
    check(not problems and not crashed.stdout,
          f"any other gcsim failure is exit 1: {problems or 'exit 1, one line'}")
    # A --gcsim that exits 0 and writes nothing (not gcsim): a traceback.
    problems = refusal_problems(bench("--gcsim", "/bin/true", quick),
                                ["exited 0 but left no readable result.json",
                                 "is --gcsim /bin/true gcsim?"], status=1)
    check(not problems, f"a --gcsim that writes no result: {problems or 'exit 1, one line'}")
    # (A --repeat taken would run the stand-in, which refuses: no table.)
    never = scenario("never", exit=2, say="gcsim: never.json: ran")
    for argv, needle in ((["--repeat", "0"], "--repeat"), (["--repeat", "1001"], "--repeat"),
                         (["--gcsim", os.path.join(work, "nowhere")], "no such file")):
        problems = refusal_problems(bench("--gcsim", fake, *argv, never), [needle])
        check(not problems, f"{' '.join(argv)}: {problems or 'exit 2, one line'}")

    # The real gcsim, once.
    quickstart = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")
    done = bench("--gcsim", GCSIM, "--repeat", "1", quickstart)
    row = (table_rows(done.stdout) or [None])[0]
    check(done.returncode == 0 and row is not None and row[1:3] == ["8", "5"]
          and float(row[5]) > 1,
          f"gcsim run quickstart.json: 8 workers, 5 iterations ({done.stdout!r} "
          f"{done.stderr.strip()[-300:]!r})")


# cpu_info reads /proc/cpuinfo through its module's open().
def identity(text):
    def fake_open(path, *args, **kwargs):
        if text is None:
            raise PermissionError(13, "Permission denied", path)
        assert path == "/proc/cpuinfo", path
        return io.StringIO(text)
    cpu_info.open = fake_open
    try:
        return cpu_info.cpu_identity()
    finally:
        del cpu_info.open


TWO_CPUS = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9R14 96-Core Processor
stepping\t: 1

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC Other
stepping\t: 0
"""
check(identity(TWO_CPUS) == {"cpu": "AMD EPYC 9R14 96-Core Processor",
                             "cpuid": "family 25 model 17 stepping 1"},
      f"cpu_identity: the first processor's name, family, model, stepping: {identity(TWO_CPUS)}")
check(identity("processor\t: 0\nmodel name\t: Some CPU\n")
      == {"cpu": "Some CPU", "cpuid": "family ? model ? stepping ?"},
      "cpu_identity: fields a CPU does not list are '?'")
check(identity("processor\t: 0\nCPU part\t: 0xd0c\n") == {} and identity(None) == {},
      "cpu_identity: {} without a model name or without /proc/cpuinfo")
check.finish()
