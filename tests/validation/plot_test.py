#!/usr/bin/python3
"""scripts/plot.py --validation draws simulated against measured from the
shipped `gcsim validate --json` comparisons, and their training iterations by
phase (PNG and PDF, non-empty, the same bytes twice); skips the phase figure
for comparisons without training, saying so; and refuses a file that is not
a comparison.

Usage: plot_test.py
"""
import glob
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLOT = os.path.join(ROOT, "scripts", "plot.py")
reports = sorted(glob.glob(os.path.join(ROOT, "results", "validation", "minicluster-*-fit.json")))
if not reports:
    sys.exit("FAIL: no shipped comparisons in results/validation")

failures = []
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
    if done.returncode == 0 or "not a `gcsim validate --json` comparison" not in done.stderr:
        failures.append(f"a measured file (not a comparison) was not refused: {done.stderr}")

for failure in failures:
    print("FAIL", failure)
if not failures:
    print(f"ok  validation figures from {len(reports)} comparisons, PNG and PDF, reproducible")
sys.exit(1 if failures else 0)
