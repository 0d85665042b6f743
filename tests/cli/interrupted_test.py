#!/usr/bin/python3
"""A `gcsim run` or `gcsim sweep` stopped by a signal (Ctrl-C, `kill`, a
closed terminal) ends by that signal and leaves no folder it made.

Before: SimGrid's own SIGINT handler ended a run with exit status 1 and no
word, a sweep called such points FAILED, and every signal left the run's
empty --out folder behind. Checked:
- SIGINT, SIGTERM and SIGHUP to a running `gcsim run`: it ends by the signal,
  the --out folders it made are gone (nested ones too), and a folder that
  was there before stays;
- SIGINT ignored when the run starts (a shell's background job): ignored
  still, the run ends normally and writes its result;
- SIGINT to a sweep: its running points are said to be stopped by SIGINT,
  not failed;
- SIGTERM to `gcsim validate` alone: its forked simulation ends with it;
  during the `gcsim run`s of its scenario runs, their scratch folder goes.

Usage: interrupted_test.py PATH/TO/gcsim
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
QUICKSTART = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")
# Seconds of simulating (9 s on a 2-core machine): the signals below
# arrive while it runs.
LONG = ["--set", "platform.nodes=40", "--set", "training.iterations=400"]

check = Checks()


def read_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:  # it ended meanwhile
        return b""


def wait_for(condition, what, seconds=60):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def started_run(out, preexec_fn=None, extra=LONG):
    """A run into `out`, returned once it has made its folder and is simulating."""
    process = subprocess.Popen([GCSIM, "run", QUICKSTART, "--out", out, *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=preexec_fn)
    wait_for(lambda: os.path.isdir(out) or process.poll() is not None, f"{out} to be made")
    time.sleep(0.5)  # well past the folder's making, into the simulation
    return process


with tempfile.TemporaryDirectory() as work:
    for number, name in [(signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM"),
                         (signal.SIGHUP, "SIGHUP")]:
        made = os.path.join(work, f"made-{name}")
        process = started_run(os.path.join(made, "a", "b"))
        process.send_signal(number)
        _, err = process.communicate(timeout=60)
        check(process.returncode == -number and not os.path.exists(made),
              f"{name} ends a run by the signal (status {process.returncode}, stderr {err!r}) "
              f"and removes the folders it made (left: {os.path.exists(made)})")

    there = os.path.join(work, "there")
    os.makedirs(there)
    process = started_run(there)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    check(process.returncode == -signal.SIGINT and os.path.isdir(there),
          f"a Ctrl-C keeps an --out folder that was there (status {process.returncode})")

    ignoring = os.path.join(work, "ignoring")
    process = started_run(ignoring, lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
                          ["--set", "platform.nodes=40", "--set", "training.iterations=150"])
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    check(process.returncode == 0 and os.path.exists(os.path.join(ignoring, "result.json")),
          f"a run that started ignoring SIGINT ignores it (status {process.returncode}, "
          f"stderr {err!r})")

    sweep_file = os.path.join(work, "slow.sweep.json")
    with open(sweep_file, "w") as handle:
        handle.write('{"name": "slow", "scenario": "%s", "grid": {"platform.nodes": [24, 32]},'
                     ' "set": {"training.iterations": 400}}' % QUICKSTART)
    sweep_out = os.path.join(work, "sweep")
    sweep = subprocess.Popen([GCSIM, "sweep", sweep_file, "--out", sweep_out, "--jobs", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    points = os.path.join(sweep_out, "points")
    wait_for(lambda: os.path.isdir(points) and len(os.listdir(points)) == 2, "the sweep's points")
    time.sleep(1.0)  # both points simulating
    sweep.send_signal(signal.SIGINT)
    said, _ = sweep.communicate(timeout=120)
    check(sweep.returncode == -signal.SIGINT and said.count("stopped by SIGINT in") == 2
          and "FAILED" not in said,
          f"SIGINT to a sweep: its points are stopped, not failed (status {sweep.returncode}): "
          f"{said!r}")

    # gcsim validate simulates in a forked child: a signal to the parent
    # alone (kill PID, a scheduler) left the child simulating on, an orphan.
    measured = os.path.join(work, "orphan-check.json")
    with open(os.path.join(ROOT, "results", "validation", "2026-12-03",
                           "collectives-p4-1gbit-1.json")) as handle:
        document = json.load(handle)
    document["cluster"]["nodes"] = 4096
    document["collectives"] = [{"collective": "allreduce", "algorithm": "ring", "ranks": 4096,
                                "bytes": 1 << 20, "seconds": 1.0, "repetitions": 1}]
    document.pop("training", None)
    with open(measured, "w") as handle:
        json.dump(document, handle)
    # No pipes: an orphan holding them would keep communicate() waiting.
    validate = subprocess.Popen([GCSIM, "validate", measured, "--quiet"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def simulating():
        return [pid for pid in os.listdir("/proc") if pid.isdigit() and
                measured.encode() in read_cmdline(pid)]

    wait_for(lambda: len(simulating()) >= 2 or validate.poll() is not None, "validate's child")
    validate.send_signal(signal.SIGTERM)
    validate.wait(timeout=60)
    time.sleep(0.5)
    left = simulating()
    for pid in left:  # not to leave it running when the check fails
        os.kill(int(pid), signal.SIGKILL)
    check(validate.returncode == -signal.SIGTERM and not left,
          f"SIGTERM to gcsim validate ends it and its child (status {validate.returncode}, "
          f"left running: {left})")

    # Training runs that name a scenario are `gcsim run`s into a scratch
    # folder under $TMPDIR: a signal ended validate where its jobs ended,
    # before the folder was removed, and left it behind.
    scratch_parent = os.path.join(work, "tmp")
    os.mkdir(scratch_parent)
    measured = os.path.join(work, "scenario-runs.json")
    with open(measured, "w") as handle:
        json.dump({"format": "gcsim-measured-run/1", "name": "scratch-check",
                   "cluster": {"topology": "star", "nodes": 40,
                               "link": {"bandwidth": "10Gbps", "latency": "10us"}},
                   "training": [{"name": "long", "scenario": QUICKSTART, "ranks": 40,
                                 "warmup_iterations": 1,
                                 "iterations": [{"iteration_s": 0.1}] * 400}]}, handle)
    validate = subprocess.Popen([GCSIM, "validate", measured, "--quiet"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, TMPDIR=scratch_parent))
    wait_for(lambda: any(os.path.isdir(os.path.join(scratch_parent, folder, "run-0"))
                         for folder in os.listdir(scratch_parent)) or validate.poll() is not None,
             "validate's scenario run")
    time.sleep(0.5)  # simulating
    validate.send_signal(signal.SIGTERM)
    _, said = validate.communicate(timeout=60)
    check(validate.returncode == -signal.SIGTERM and not os.listdir(scratch_parent) and not said,
          f"SIGTERM to gcsim validate during its scenario runs ends it and leaves no scratch "
          f"folder (status {validate.returncode}, left: {os.listdir(scratch_parent)}, {said!r})")

check.finish()
