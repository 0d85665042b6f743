#!/usr/bin/python3
"""scripts/minicluster/run.py refuses a bad command-line value before it
makes a namespace: exit 2, one line naming the option, no output file.

Before, most of these surfaced as tracebacks (exit 1), and --sizes 0,
--reps 0 or a --warmup past --iterations only after the cluster was up, as
a worker's failure minutes into the run; an --sizes below 4 bytes a node
gave an allgather of 0 bytes, which gcsim validate refused after the whole
run. Needs no root: the values are checked first.

Usage: run_args_test.py
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUN = os.path.join(ROOT, "scripts", "minicluster", "run.py")

sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from checks import Checks  # noqa: E402

check = Checks()


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "run.json")
    cases = [
        (["--nodes", "1"], "--nodes"), (["--nodes", "17"], "--nodes"),
        (["--rate", "0"], "--rate"), (["--rate", "nan"], "--rate"), (["--rate", "2000"], "--rate"),
        (["--sizes", "abc"], "--sizes"), (["--sizes", "0"], "--sizes"),
        (["--sizes", "4K,-1"], "--sizes"), (["--sizes", "1e400K"], "--sizes"),
        (["--sizes", "2G"], "--sizes"), (["--reps", "0"], "--reps"),
        (["--nodes", "4", "--sizes", "8"], "--sizes"),
        (["--train", "dense,bogus"], "--train"), (["--iterations", "0"], "--iterations"),
        (["--warmup", "-1"], "--warmup"), (["--iterations", "5", "--warmup", "5"], "--warmup"),
        (["--batch", "0"], "--batch"), (["--density", "0"], "--density"),
        (["--density", "1.5"], "--density"), (["--matrix-rank", "0"], "--matrix-rank"),
        (["--model", "resnet18"], "--model"),
        (["--timeout", "0"], "--timeout"),
        (["--node-queue", "lifo"], "--node-queue"),
        (["--python", os.path.join(tmp, "no-python")], "--python"),
    ]
    for args, option in cases:
        done = subprocess.run(["/usr/bin/python3", RUN, *args, "--out", out],
                              capture_output=True, text=True, timeout=60)
        said = done.stderr.strip().splitlines()
        check(done.returncode == 2 and len(said) == 1 and said[0].startswith(f"run.py: {option}:")
              and not os.path.exists(out),
              f"{' '.join(args)}: exit 2, one line naming {option} (got {done.returncode}: {said})")
    unwritable = os.path.join(tmp, "file", "run.json")  # a folder that is a file
    with open(os.path.join(tmp, "file"), "w"):
        pass
    done = subprocess.run(["/usr/bin/python3", RUN, "--out", unwritable], capture_output=True,
                          text=True, timeout=60)
    said = done.stderr.strip().splitlines()
    check(done.returncode == 2 and len(said) == 1 and said[0].startswith("run.py: --out:"),
          f"an --out that cannot be written: exit 2 before any measuring (got {done.returncode}: "
          f"{said})")

check.finish()
