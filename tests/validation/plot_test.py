#!/usr/bin/python3
"""scripts/plot.py --validation draws simulated against measured from the
shipped `gcsim validate --json` comparisons, and their training iterations by
phase (PNG and PDF, non-empty, the same bytes twice); skips the phase figure
for comparisons without training, saying so; and refuses a file that is not
a comparison, or a bad one (missing, empty, malformed, non-UTF-8, wrong
fields), with exit 2, one line and no figures folder, checking every input
before it draws anything; an output folder it cannot make is exit 1, one line.

Usage: plot_test.py
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from checks import refusal_problems  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLOT = os.path.join(ROOT, "scripts", "plot.py")
reports = sorted(glob.glob(os.path.join(ROOT, "results", "validation", "minicluster-*-fit.json")))
if not reports:
    sys.exit("FAIL: no shipped comparisons in results/validation")

failures = []


def refusal(done, what, needles=(), status=2, absent=()):
    """Appends to failures what is wrong with a refusal (refusal_problems), or
    an `absent` path made."""
    problems = refusal_problems(done, needles, status)
    problems += [f"{path} was made" for path in absent if os.path.exists(path)]
    if problems:
        failures.append(f"{what}: {'; '.join(problems)}")


with tempfile.TemporaryDirectory() as tmp:
    outputs = []
    for attempt in ("a", "b"):
        out = os.path.join(tmp, attempt)
        done = subprocess.run(["/usr/bin/python3", PLOT, "--validation", *reports, "--out", out,
                               "--stem", "fig"], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"FAIL: plot.py --validation: status {done.returncode}: {done.stderr}")
        files = {}
        for extension in ("png", "pdf", "phases.png", "phases.pdf"):
            path = os.path.join(out, f"fig.{extension}" if "." not in extension
                                else f"fig-{extension}")
            if not os.path.exists(path) or os.path.getsize(path) < 1000:
                failures.append(f"{path} missing or empty")
                continue
            with open(path, "rb") as f:
                files[extension] = f.read()
        outputs.append(files)
    if outputs[0] != outputs[1]:
        failures.append("two runs on the same comparisons give different files")
    # Collectives only: the scatter figure, and a line saying why no phases.
    collectives_only = os.path.join(ROOT, "results", "validation", "node-queue",
                                    "minicluster-p4-1gbit-fair-fit.json")
    out = os.path.join(tmp, "collectives-only")
    done = subprocess.run(["/usr/bin/python3", PLOT, "--validation", collectives_only, "--out", out],
                          capture_output=True, text=True)
    if (done.returncode != 0 or "skipped validation-phases: no training runs" not in done.stdout
            or not os.path.exists(os.path.join(out, "validation.png"))
            or os.path.exists(os.path.join(out, "validation-phases.png"))):
        failures.append(f"collectives only: expected the scatter figure and no phases "
                        f"(status {done.returncode}: {done.stdout} {done.stderr})")
    measured = os.path.join(ROOT, "results", "validation", "minicluster-p4-100mbit.json")
    done = subprocess.run(["/usr/bin/python3", PLOT, "--validation", measured, "--out", tmp],
                          capture_output=True, text=True)
    refusal(done, "a measured file (not a comparison)",
            ["not a `gcsim validate --json` comparison"])

    # Bad comparisons: exit 2, one line naming the file and the field, no folder.
    with open(reports[0]) as f:
        good = json.load(f)
    no_name = json.loads(json.dumps(good))
    for run in no_name["training"]:
        run.pop("name", None)
    cases = [("missing.json", None, ["missing.json"]),
             ("empty.json", b"", ["empty.json: empty file"]),
             ("malformed.json", b'{"collectives": [', ["malformed.json", "not JSON"]),
             ("latin1.json", b'{"name": "\xe9"}', ["latin1.json", "UTF-8"]),
             ("list.json", b"[]", ["list.json"]),
             ("collectives5.json", json.dumps(dict(good, collectives=5)).encode(),
              ["/collectives"]),
             ("no-name.json", json.dumps(no_name).encode(), ["no-name.json", "/training/0/name"])]
    for name, content, needles in cases:
        path = os.path.join(tmp, "bad", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if content is not None:
            with open(path, "wb") as f:
                f.write(content)
        out = os.path.join(tmp, "bad-figures")
        # The good comparison first: nothing may be drawn before the bad one is read.
        done = subprocess.run(["/usr/bin/python3", PLOT, "--validation", reports[0], path,
                               "--out", out], capture_output=True, text=True)
        refusal(done, f"--validation {name}", needles, absent=[out])
    # Output folders that cannot be made: exit 1, one line.
    for out, what in ((reports[0], "--out naming a file"),
                      (os.path.join(reports[0], "figures"), "--out under a file")):
        done = subprocess.run(["/usr/bin/python3", PLOT, "--validation", reports[0], "--out", out],
                              capture_output=True, text=True)
        refusal(done, what, ["cannot create folder"], status=1)

for failure in failures:
    print("FAIL", failure)
if not failures:
    print(f"ok  validation figures from {len(reports)} comparisons, PNG and PDF, reproducible")
sys.exit(1 if failures else 0)
