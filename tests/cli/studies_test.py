#!/usr/bin/python3
"""The small versions of the studies: each study sweep with the first two
values of every grid dimension and two iterations (the first a warm-up) runs end to end, gives
one CSV row per point with the metrics the study is about, and plots. And the
committed studies' figures were drawn from their committed sweep.csv (a rerun
without a replot once left one study's figures showing the data before it).

Usage: studies_test.py PATH/TO/gcsim
"""
import csv
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

from PIL import Image  # python3-matplotlib's dependency

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCENARIOS = os.path.join(ROOT, "workloads", "scenarios")

check = Checks()


for folder in sorted(glob.glob(os.path.join(ROOT, "results", "studies", "study-*"))):
    with open(os.path.join(folder, "sweep.csv"), "rb") as handle:
        source = "sweep.csv sha256 " + hashlib.sha256(handle.read()).hexdigest()
    figures = sorted(glob.glob(os.path.join(folder, "figures", "*.p[dn][fg]")))
    stale = []
    for figure in figures:
        if figure.endswith(".png"):
            with Image.open(figure) as image:
                drawn_from = image.text.get("Source")
        else:  # a PDF's Info dictionary is not compressed
            with open(figure, "rb") as handle:
                drawn_from = source if f"({source})".encode() in handle.read() else None
        if drawn_from != source:
            stale.append(os.path.basename(figure))
    check(figures and not stale,
          f"{os.path.basename(folder)}: its {len(figures)} figures were drawn from its sweep.csv"
          + (f"; not {stale}: /usr/bin/python3 scripts/plot.py {os.path.relpath(folder, ROOT)}"
             if stale else ""))


studies = sorted(glob.glob(os.path.join(SCENARIOS, "study-*.sweep.json")))
check(len(studies) == 10, f"ten study sweeps ship: {[os.path.basename(s) for s in studies]}")
with tempfile.TemporaryDirectory() as work:
    for path in studies:
        with open(path) as handle:
            sweep = json.load(handle)
        sweep["scenario"] = os.path.join(SCENARIOS, sweep["scenario"])
        sweep["grid"] = {key: values[:2] for key, values in sweep["grid"].items()}
        # Two iterations, the first a warm-up (IWP's dense one in the IWP
        # studies); a base that warms up longer keeps its warm-up and
        # measures one iteration after it.
        with open(sweep["scenario"]) as handle:
            warmup = max(1, json.load(handle)["training"].get("warmup_iterations", 1))
        sweep.setdefault("set", {}).update({"training.iterations": warmup + 1,
                                            "training.warmup_iterations": warmup})
        small = os.path.join(work, os.path.basename(path))
        with open(small, "w") as handle:
            json.dump(sweep, handle)
        out = os.path.join(work, sweep["name"])
        result = subprocess.run([GCSIM, "sweep", small, "--out", out, "--jobs", "2"],
                                capture_output=True, text=True, timeout=900)
        check(result.returncode == 0, f"{sweep['name']}: the small version runs ({result.stderr.strip()[-300:]})")
        if result.returncode != 0:
            continue
        with open(os.path.join(out, "sweep.csv")) as handle:
            rows = list(csv.DictReader(handle))
        expected = 1
        for values in sweep["grid"].values():
            expected *= len(values)
        check(len(rows) == expected, f"{sweep['name']}: one row per point ({len(rows)} of {expected})")
        for column in ("throughput_samples_per_s", "iteration_time_s", "bytes_sent_per_worker"):
            check(all(float(row[column]) > 0 for row in rows), f"{sweep['name']}: {column} in every row")
        sparse = [row for row in rows if row["compressor_name"] != "dense"]
        check(all(0 < float(row["density_after_aggregation"]) < 0.5 for row in sparse),
              f"{sweep['name']}: compressed points report their density after aggregation, "
              f"sparse ({[row['density_after_aggregation'] for row in sparse]})")
        figures = os.path.join(out, "figures")
        plot = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "plot.py"), out,
                               "--out", figures], capture_output=True, text=True, timeout=300)
        check(plot.returncode == 0 and os.path.getsize(os.path.join(figures, "throughput.png")) > 1000,
              f"{sweep['name']}: the figures are drawn ({plot.stderr.strip()[-200:]})")

check.finish()
