#!/usr/bin/python3
"""Every shipped scenario, sweep and platform is input gcsim accepts: each
sweep of workloads/scenarios/, each scenario there as a one-point sweep, and
each platform of platforms/ under the quick start, pass `gcsim sweep
--dry-run` (which reads every point's scenario, platform, workload and
device profile without simulating). Four of them were named only by the
READMEs, so nothing would have noticed a change that broke them. A broken
copy is refused, so the dry run does check.

Usage: shipped_inputs_test.py PATH/TO/gcsim
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
QUICKSTART = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")

check = Checks()


def dry_run(work, sweep):
    """`gcsim sweep --dry-run` of `sweep`, a sweep file or a sweep's JSON."""
    if not isinstance(sweep, str):
        path = os.path.join(work, "one.sweep.json")
        with open(path, "w") as handle:
            json.dump(sweep, handle)
        sweep = path
    return subprocess.run([GCSIM, "sweep", sweep, "--dry-run", "--out", os.path.join(work, "out")],
                          capture_output=True, text=True, timeout=120)


with tempfile.TemporaryDirectory() as work:
    scenarios = sorted(glob.glob(os.path.join(ROOT, "workloads", "scenarios", "*.json")))
    platforms = sorted(glob.glob(os.path.join(ROOT, "platforms", "*.json")))
    check(len(scenarios) >= 20 and len(platforms) >= 9,
          f"the shipped inputs are found ({len(scenarios)} scenarios and sweeps, "
          f"{len(platforms)} platforms)")
    for path in scenarios:
        with open(path) as handle:
            is_sweep = "grid" in json.load(handle)
        done = dry_run(work, path if is_sweep else {"scenario": path, "grid": {"seed": [1]}})
        check(done.returncode == 0 and "to run" in done.stdout,
              f"{os.path.relpath(path, ROOT)} ({'sweep' if is_sweep else 'scenario'}): "
              f"exit {done.returncode} {done.stderr.strip()[:300]}")
    for path in platforms:
        done = dry_run(work, {"scenario": QUICKSTART, "grid": {"platform": [path]}})
        check(done.returncode == 0 and "to run" in done.stdout,
              f"{os.path.relpath(path, ROOT)} under the quick start: exit {done.returncode} "
              f"{done.stderr.strip()[:300]}")
    # The dry run reads what it lists: a copy with a bad field is refused.
    with open(QUICKSTART) as handle:
        broken = json.load(handle)
    broken["workload"] = os.path.join(ROOT, broken["workload"])
    broken["device"] = os.path.join(ROOT, broken["device"])
    if isinstance(broken["platform"], str):
        broken["platform"] = os.path.join(ROOT, broken["platform"])
    broken["training"]["iterations"] = -1
    copy = os.path.join(work, "broken.json")
    with open(copy, "w") as handle:
        json.dump(broken, handle)
    done = dry_run(work, {"scenario": copy, "grid": {"seed": [1]}})
    check(done.returncode == 2 and "/training/iterations" in done.stderr,
          f"a copy with iterations -1 is refused by the dry run: exit {done.returncode} "
          f"{done.stderr.strip()[:300]}")

check.finish()
