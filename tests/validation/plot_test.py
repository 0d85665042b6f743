#!/usr/bin/python3
"""scripts/plot.py --validation draws simulated against measured from the
shipped `gcsim validate --json` comparisons, and their training iterations by
phase (PNG and PDF, non-empty, the same bytes twice): measured on x and
simulated on y, the y = x line through the panel, and each side's phases
stacked to its whole iteration in ms; skips the phase figure
for comparisons without training, saying so; and refuses a file that is not
a comparison, or a bad one (missing, empty, malformed, non-UTF-8, wrong
fields, a --stem too long for a file name), with exit 2, one line and no
figures folder, checking every input before it draws anything; an output
folder it cannot make is exit 1, one line.

A sweep's compression ratio, where its results lack one, is the dense
row's bytes over the compressed row's.

Usage: plot_test.py
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from checks import refusal_problems  # noqa: E402
import plot  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402

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
    # Names with a "$" (an unbalanced one was a mathtext traceback).
    with open(reports[0]) as f:
        dollars = json.load(f)
    dollars["name"] = "p4 $10^{-3$ lr"
    for run in dollars.get("training", []):
        run["name"] = "a $ b"
    dollars_file = os.path.join(tmp, "dollars.json")
    with open(dollars_file, "w") as f:
        json.dump(dollars, f)
    out = os.path.join(tmp, "dollars")
    done = subprocess.run(["/usr/bin/python3", PLOT, "--validation", dollars_file, "--out", out],
                          capture_output=True, text=True)
    if done.returncode != 0 or not os.path.exists(os.path.join(out, "validation.png")):
        failures.append(f"names with a $: status {done.returncode}: {done.stderr.strip()[-300:]}")
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
    negative = json.loads(json.dumps(good))
    negative["collectives"][0]["measured_s"] = -1.0
    cases = [("missing.json", None, ["missing.json"]),
             ("empty.json", b"", ["empty.json: empty file"]),
             ("malformed.json", b'{"collectives": [', ["malformed.json", "not JSON"]),
             ("latin1.json", b'{"name": "\xe9"}', ["latin1.json", "UTF-8"]),
             ("list.json", b"[]", ["list.json"]),
             ("collectives5.json", json.dumps(dict(good, collectives=5)).encode(),
              ["/collectives"]),
             ("no-name.json", json.dumps(no_name).encode(), ["no-name.json", "/training/0/name"]),
             ("negative.json", json.dumps(negative).encode(),
              ["negative.json", "/collectives/0/measured_s", "out of range"]),
             # The caption reads the fit's float16 count (a traceback before).
             ("fit5.json", json.dumps(dict(good, fit=5)).encode(),
              ["fit5.json", "/fit: expected an object"]),
             ("shown.json", json.dumps(dict(good, fit={"float16_points_shown": "3"})).encode(),
              ["shown.json", "/fit/float16_points_shown: expected a count"])]
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
    # A folder where a figure goes, or a comparison named like one: refused
    # before any figure is written (validation.pdf and .png were left).
    blocked = os.path.join(tmp, "blocked")
    os.makedirs(os.path.join(blocked, "validation-phases.pdf"))
    done = subprocess.run(["/usr/bin/python3", PLOT, "--validation", reports[0], "--out", blocked],
                          capture_output=True, text=True)
    refusal(done, "a folder where a figure goes", ["validation-phases.pdf is a folder"],
            absent=[os.path.join(blocked, "validation.pdf"), os.path.join(blocked, "validation.png")])
    named_png = os.path.join(tmp, "comparison.png")
    with open(reports[0], "rb") as source, open(named_png, "wb") as copy:
        copy.write(source.read())
    done = subprocess.run(["/usr/bin/python3", PLOT, "--validation", named_png, "--out", tmp,
                           "--stem", "comparison"], capture_output=True, text=True)
    refusal(done, "a comparison where a figure goes", ["is also an input"])
    # A stem too long for a file name: "cannot write" once drawn, exit 1,
    # and the folder made for the figures left behind, empty.
    out = os.path.join(tmp, "long-stem")
    done = subprocess.run(["/usr/bin/python3", PLOT, "--validation", reports[0], "--out", out,
                           "--stem", "x" * 300], capture_output=True, text=True)
    refusal(done, "--stem of 300 bytes", ["--stem: 300 bytes: too long for a file name"],
            absent=[out])

# What the figures show, drawn in this process: one comparison with a
# collective (measured 1 s, simulated 2 s) and a training run (30 ms
# measured, 40 ms simulated, each split into phases as validate compares
# them: the measured compute with its optimizer, its communication the rest
# of the iteration, not the collectives' own call time).
report = {"name": "r", "error_measure": "x", "platform": {"source": "the fit"},
          "collectives": [{"collective": "allreduce", "measured_s": 1.0, "simulated_s": 2.0}],
          "training": [{"name": "topk", "compressor": {"name": "topk"},
                        "measured": {"iteration_s": 0.030, "compute_s": 0.010,
                                     "compression_s": 0.002, "communication_s": 0.008,
                                     "optimizer_s": 0.004, "rest_of_iteration_s": 0.014},
                        "simulated": {"iteration_s": 0.040, "compute_s": 0.012,
                                      "compression_s": 0.001, "communication_s": 0.020}}]}
points = plot.validation_points(report)
if [p[1:3] for p in points] != [(1.0, 2.0), (0.030, 0.040)]:
    failures.append(f"validation points are not (measured, simulated): {[p[1:3] for p in points]}")
drawn = []
real_save = plot.save
plot.save = lambda figure, out, stem, written: drawn.append(figure)
try:
    plot.setup_matplotlib()
    plot.validation_figure([report], "unused", "v", plot.Written())
    plot.validation_phases_figure([report], "unused", "p", plot.Written())
finally:
    plot.save = real_save
scatter_axis = drawn[0].axes[0]
diagonal = [line for line in scatter_axis.get_lines() if line.get_label() == "y = x"]
low, high = scatter_axis.get_xlim()
if not (len(diagonal) == 1 and list(diagonal[0].get_xdata()) == list(diagonal[0].get_ydata())
        == [low, high]):
    failures.append("the validation figure has no y = x line across its panel")
offsets = sorted(tuple(o) for c in scatter_axis.collections if isinstance(c, PathCollection)
                 for o in c.get_offsets())
if offsets != [(0.030, 0.040), (1.0, 2.0)]:
    failures.append(f"the scatter's points are not at (measured, simulated): {offsets}")
stacks = {}
for bar in drawn[1].axes[0].patches:
    if bar.get_width() > 0:
        x = round(bar.get_x() + bar.get_width() / 2, 6)
        stacks[x] = stacks.get(x, 0.0) + bar.get_height()
if sorted(round(v, 9) for v in stacks.values()) != [30.0, 40.0]:
    failures.append(f"the phase bars do not stack to 30 and 40 ms: {stacks}")
# The scatter panel: measured on x and simulated on y, both log, and the
# band within 10% of y = x (a band of 20%, linear axes or swapped axis labels
# drew and passed).
if (scatter_axis.get_xscale(), scatter_axis.get_yscale()) != ("log", "log"):
    failures.append(f"the validation axes are not log-log: {scatter_axis.get_xscale()}, "
                    f"{scatter_axis.get_yscale()}")
if (scatter_axis.get_xlabel(), scatter_axis.get_ylabel()) != ("measured (s)", "simulated (s)"):
    failures.append(f"the validation axes are not measured (x) and simulated (y): "
                    f"{scatter_axis.get_xlabel()!r}, {scatter_axis.get_ylabel()!r}")
band = [c for c in scatter_axis.collections if c.get_label() == "within 10%"]
ratios = sorted(y / x for c in band for path in c.get_paths() for x, y in path.vertices)
if not (len(band) == 1 and abs(ratios[0] * 1.1 - 1) < 1e-9 and abs(ratios[-1] / 1.1 - 1) < 1e-9):
    failures.append(f"the band is not y = x/1.1 to 1.1x: simulated/measured {ratios[:1]} to "
                    f"{ratios[-1:]}")
# Each phase at its own height, measured on the left (x = -0.5), simulated on
# the right: the stacks' totals alone passed with compute and communication
# swapped, or the two sides swapped.
expected = {(-0.5, "compute"): 14.0, (-0.5, "compression"): 2.0, (-0.5, "communication"): 14.0,
            (-0.5, "the rest"): 0.0, (0.5, "compute"): 12.0, (0.5, "compression"): 1.0,
            (0.5, "communication"): 20.0, (0.5, "the rest"): 7.0}
phases = {(round(bar.get_x() + bar.get_width() / 2, 6), container.get_label()):
          round(bar.get_height(), 9)
          for container in drawn[1].axes[0].containers for bar in container.patches
          if bar.get_width() > 0}
if phases != expected:
    failures.append(f"the phase bars are not each phase's ms, measured left: {phases}")
rows = [{"_facet": "", "_variant": "dense", "workers": 4, "bytes_sent_per_worker": 1000.0},
        {"_facet": "", "_variant": "topk", "workers": 4, "bytes_sent_per_worker": 10.0}]
plot.add_compression_ratio(rows)
if rows[1].get("compression_ratio") != 100.0:
    failures.append(f"compression ratio of 10 bytes against dense's 1000: {rows[1].get('compression_ratio')}")

for failure in failures:
    print("FAIL", failure)
if not failures:
    print(f"ok  validation figures from {len(reports)} comparisons, PNG and PDF, reproducible")
sys.exit(1 if failures else 0)
