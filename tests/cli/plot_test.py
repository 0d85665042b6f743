#!/usr/bin/python3
"""Checks of scripts/plot.py on generated sweep tables: every figure is written
as a non-empty PDF and PNG when its columns exist, figures whose columns are
absent are skipped with a message, result.json files work as input, and the
colours of compressors are fixed.

Usage: plot_test.py   (runs scripts/plot.py with Debian's /usr/bin/python3)
"""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLOT = os.path.join(ROOT, "scripts", "plot.py")
PYTHON = "/usr/bin/python3"
COMPRESSORS = ["dense", "topk", "gtopk", "dgc", "randomk", "cltk", "sketched_sgd", "gs_sgd",
               "deft", "iwp"]
WORKERS = [2, 8, 64]

check = Checks()


def synthetic_rows(full):
    """Rows shaped like sweep.csv; `full` adds the compression-aware columns."""
    rows = []
    index = 0
    for bandwidth in ["1Gbps", "10Gbps"]:
        for compressor in COMPRESSORS if full else ["dense"]:
            for workers in WORKERS:
                dense = compressor == "dense"
                density = 1.0 if dense else 0.01 * (1 + math.log2(workers) / 4)
                gradient = 44.7e6
                sent = 2 * (workers - 1) / workers * gradient * (1 if dense else density * 2)
                link = 1.25e8 if bandwidth == "1Gbps" else 1.25e9
                compute = 0.05
                kernel_topk = 0.0 if dense else 0.004
                kernel_pack = 0.0 if dense else 0.001
                communication = sent / link * 0.6
                iteration = compute + kernel_topk + kernel_pack + communication
                spec = {"name": compressor} if dense else {"name": compressor, "density": 0.01}
                row = {
                    "point": f"p{index:03d}_bandwidth-{bandwidth}_compressor-{compressor}_nodes-{workers}",
                    "platform.link.bandwidth": bandwidth,
                    "compressor": json.dumps(spec, separators=(",", ":")),
                    "platform.nodes": workers,
                    "command": f"build/gcsim run x.json --set platform.nodes={workers}",
                    "compressor_name": compressor,
                    "workers": workers,
                    "iteration_time_s": iteration,
                    "throughput_samples_per_s": workers * 128 / iteration,
                    "compute_s": compute,
                    "compression_s": kernel_topk + kernel_pack,
                    "communication_s": communication,
                    "bytes_sent_per_worker": sent,
                }
                if full:
                    row.update({
                        "compression_kernels_s.topk_select": kernel_topk,
                        "compression_kernels_s.sparse_pack": kernel_pack,
                        "density_after_aggregation": density,
                        "fidelity.cosine": 1.0 if dense else 0.7 + 0.02 * math.log2(workers),
                        "fidelity.rel_l2": 0.0 if dense else 0.5 - 0.02 * math.log2(workers),
                        "speedup_vs_dense": 1.0 if dense else 1.5,
                    })
                rows.append(row)
                index += 1
    return rows


def write_csv(path, rows):
    columns = list(rows[0])
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        writer.writerows(rows)


def plot(*args):
    return subprocess.run([PYTHON, PLOT, *args], capture_output=True, text=True, timeout=120)


def non_empty(path, magic):
    if not os.path.isfile(path) or os.path.getsize(path) < 1000:
        return False
    with open(path, "rb") as handle:
        return handle.read(len(magic)) == magic


with tempfile.TemporaryDirectory() as work:
    full = os.path.join(work, "full")
    os.makedirs(full)
    write_csv(os.path.join(full, "sweep.csv"), synthetic_rows(full=True))
    out = os.path.join(work, "figures-full")
    result = plot(full, "--out", out)
    check(result.returncode == 0, f"plot.py on a full sweep exits 0 ({result.stderr.strip()[-300:]})")
    stems = ["throughput", "density", "fidelity", "fidelity_rel_l2", "speedup",
             "time_breakdown_bandwidth-1Gbps", "time_breakdown_bandwidth-10Gbps"]
    for stem in stems:
        check(non_empty(os.path.join(out, stem + ".png"), b"\x89PNG"), f"{stem}.png is a PNG")
        check(non_empty(os.path.join(out, stem + ".pdf"), b"%PDF"), f"{stem}.pdf is a PDF")
    check("skipped" not in result.stdout, "nothing is skipped when every column exists")

    dense_only = os.path.join(work, "dense.csv")
    write_csv(dense_only, synthetic_rows(full=False))
    out = os.path.join(work, "figures-dense")
    result = plot(dense_only, "--out", out)
    check(result.returncode == 0, "plot.py on a dense-only table (given as a CSV path) exits 0")
    # The same table gives the same PDF (no creation date inside).
    again = os.path.join(work, "figures-again")
    plot(dense_only, "--out", again)
    with open(os.path.join(out, "throughput.pdf"), "rb") as a, \
            open(os.path.join(again, "throughput.pdf"), "rb") as b:
        check(a.read() == b.read(), "the same table gives a byte-identical PDF")
    check("skipped density" in result.stdout and "skipped fidelity" in result.stdout,
          "figures without their columns are skipped with a message")
    check(non_empty(os.path.join(out, "throughput.png"), b"\x89PNG"),
          "throughput is drawn from dense-only results")
    check(not os.path.exists(os.path.join(out, "density.png")), "no empty density figure")

    # result.json files as input: parameters are the scenario fields that differ.
    results = []
    for workers in [2, 4, 8]:
        folder = os.path.join(work, "points", f"n{workers}")
        os.makedirs(folder)
        summary = {"workers": workers, "iteration_time_s": 0.1 + 0.01 * workers,
                   "compute_s": 0.1, "compression_s": 0.0, "communication_s": 0.01 * workers,
                   "throughput_samples_per_s": workers * 128 / (0.1 + 0.01 * workers)}
        with open(os.path.join(folder, "result.json"), "w") as handle:
            json.dump({"scenario": {"name": "q", "platform": {"nodes": workers},
                                    "compressor": {"name": "dense"}}, "summary": summary}, handle)
        results.append(os.path.join(folder, "result.json"))
    out = os.path.join(work, "figures-results")
    result = plot(*results, "--out", out)
    check(result.returncode == 0 and non_empty(os.path.join(out, "throughput.png"), b"\x89PNG"),
          "result.json files are accepted as input")
    check(non_empty(os.path.join(out, "time_breakdown.png"), b"\x89PNG"),
          "the time breakdown has no facet suffix without facets")

    # Whole platform objects as grid values set the worker count: they are
    # the x axis, not one panel each.
    rows = synthetic_rows(full=False)[:len(WORKERS)]
    for row in rows:
        row["platform.nodes"] = json.dumps({"name": f"cluster-{row['workers']}",
                                            "nodes": row["workers"]})
    platforms = os.path.join(work, "platforms.csv")
    write_csv(platforms, [{("platform" if k == "platform.nodes" else k): v
                           for k, v in row.items()} for row in rows])
    out = os.path.join(work, "figures-platforms")
    result = plot(platforms, "--out", out)
    check(result.returncode == 0 and os.path.isfile(os.path.join(out, "time_breakdown.png")),
          "a parameter that sets the worker count makes no panels or extra files")

    missing = plot(os.path.join(work, "nowhere"), "--out", out)
    check(missing.returncode != 0 and "plot.py" in missing.stderr,
          "a folder with no results is refused with a message")

# Colours are part of the figures' meaning: one per compressor, fixed.
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import plot as plot_module  # noqa: E402


colours = [plot_module.style_of(name)[0] for name in COMPRESSORS]
check(len(set(colours)) == len(COMPRESSORS), "each of the ten compressors has its own colour")
check(plot_module.style_of("topk") == ("#E69F00", "s"), "topk keeps Okabe-Ito orange")

check.finish()
