#!/usr/bin/python3
"""`gcsim validate`'s summary splits the collectives of 4 MiB and more into
the ring ones (which the fit sees) and the broadcasts (which it never does):
on a committed run the two groups hold every large point once, and the
geometric-mean error of all of them is the points-weighted mean of the two
groups' in log space, as it must be if no point is lost, counted twice or
put in the wrong group. Each point's and each phase's error is simulated
over measured, minus 1, the measured compute holding the optimizer (the
simulation's compute does) and the rest of the iteration what compute,
optimizer and compression leave; a compressed run's measured rest leaves
out its compression. A multi-GPU cluster and a star's float16 sum are named
in the title and the report's platform block.

Usage: report_summary_test.py PATH/TO/gcsim
"""
import json
import math
import os
import subprocess
import sys
import tempfile

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUN = os.path.join(ROOT, "results", "validation", "node-queue", "minicluster-p4-1gbit-fair")

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "report.json")
    done = subprocess.run([GCSIM, "validate", RUN + ".json", "--platform",
                           RUN + "-calibrated-platform.json", "--json", out],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: gcsim validate: {done.stderr}")
    with open(out) as f:
        report = json.load(f)

summary = report["summary"]
failures = []
# Named by absolute paths from another folder, the inputs are recorded as
# `gcsim run` records a trace: relative to the source tree they lie in (the
# comparison said whatever was typed, so the same run read two ways).
recorded = os.path.relpath(RUN, ROOT)
if (report["measured_file"], report["platform"]["source"]) != (
        recorded + ".json", recorded + "-calibrated-platform.json"):
    failures.append(f"inputs recorded as {report['measured_file']!r} and "
                    f"{report['platform']['source']!r}, not relative to the source tree")
large = summary["collectives_4MiB_and_more"]
ring = summary["ring_collectives_4MiB_and_more"]
broadcast = summary["broadcast_4MiB_and_more"]
points = [p for p in report["collectives"] if p["bytes"] >= 4 << 20]
kinds = (sum(p["collective"] != "broadcast" for p in points),
         sum(p["collective"] == "broadcast" for p in points))
if (ring["points"], broadcast["points"]) != kinds or large["points"] != len(points):
    failures.append(f"points: ring {ring['points']}, broadcast {broadcast['points']}, "
                    f"all {large['points']}; the report's large points by kind: {kinds}")
weighted = (ring["points"] * math.log1p(ring["geomean_error"])
            + broadcast["points"] * math.log1p(broadcast["geomean_error"])) / large["points"]
if abs(weighted - math.log1p(large["geomean_error"])) > 1e-12:
    failures.append(f"the groups' errors ({ring['geomean_error']}, {broadcast['geomean_error']}) "
                    f"do not make up the whole's ({large['geomean_error']})")
for p in report["collectives"]:
    if abs(p["relative_error"] - (p["simulated_s"] / p["measured_s"] - 1)) > 1e-12:
        failures.append(f"{p['label']} of {p['bytes']} bytes: relative error "
                        f"{p['relative_error']}, simulated / measured - 1 is "
                        f"{p['simulated_s'] / p['measured_s'] - 1}")
# The phases, on a run with dense and compressed training, on its own fit.
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "training.json")
    fitted = subprocess.run([GCSIM, "validate", os.path.join(ROOT, "results", "validation",
                                                             "minicluster-p4-100mbit.json"),
                             "--fit", "--json", out, "--quiet"], capture_output=True, text=True)
    if fitted.returncode != 0:
        sys.exit(f"FAIL: gcsim validate --fit: {fitted.stderr}")
    with open(out) as f:
        trained = json.load(f)
compressed_runs = 0
for t in trained["training"]:
    m, sim, err = t["measured"], t["simulated"], t["relative_error"]
    compression = 0 if t["compressor"]["name"] == "dense" else m["compression_s"]
    compressed_runs += compression > 0
    rest = m["iteration_s"] - m["compute_s"] - m["optimizer_s"] - compression
    want = {"iteration_s": sim["iteration_s"] / m["iteration_s"] - 1,
            "compute_s": sim["compute_s"] / (m["compute_s"] + m["optimizer_s"]) - 1,
            "communication_s": sim["communication_s"] / rest - 1}
    if abs(m["rest_of_iteration_s"] - rest) > 1e-12 or any(
            abs(err[key] - value) > 1e-9 for key, value in want.items()):
        failures.append(f"training {t['name']}: measured rest {m['rest_of_iteration_s']} "
                        f"(want {rest}), errors {err} (want {want})")
if compressed_runs == 0:
    failures.append("no compressed training run with a measured compression in the report")
# This run has no tree allreduce: no error at all, not an error of 0 that a
# limit would pass.
tree = summary["tree_allreduce_4MiB_and_more"]
if tree != {"points": 0, "geomean_error": None}:
    failures.append(f"a kind without points reads {tree}")
if "tree_allreduce" in done.stdout:
    failures.append("the printed summary has a line for a kind without points")
if "broadcast_4MiB_and_more" not in done.stdout:
    failures.append("the printed summary has no broadcast line")
print(f"ring {100 * ring['geomean_error']:.1f}% ({ring['points']}), broadcast "
      f"{100 * broadcast['geomean_error']:.1f}% ({broadcast['points']}), all "
      f"{100 * large['geomean_error']:.1f}% ({large['points']})")


def platform_block(cluster, ranks, seconds):
    """`gcsim validate` of one allreduce point on `cluster`: the finished
    call and its report's platform block ({} when it failed)."""
    with tempfile.TemporaryDirectory() as tmp:
        measured, out = os.path.join(tmp, "measured.json"), os.path.join(tmp, "report.json")
        with open(measured, "w") as f:
            json.dump({"format": "gcsim-measured-run/1", "cluster": cluster,
                       "collectives": [{"collective": "allreduce", "ranks": ranks,
                                        "bytes": 1 << 22, "seconds": seconds}]}, f)
        done = subprocess.run([GCSIM, "validate", measured, "--json", out], capture_output=True,
                              text=True)
        return done, json.load(open(out))["platform"] if done.returncode == 0 else {}


# A multi-GPU cluster is named as one: its title and platform block said
# "16 nodes, 100000 Mbit/s", as a star of 16 would, which simulates otherwise.
done, block = platform_block({"topology": "multi_gpu", "nodes": 2, "gpus_per_node": 8,
                              "link": {"bandwidth": "100Gbps", "latency": "2us"},
                              "gpu_link": {"bandwidth": "240GBps", "latency": "1us"}}, 16, 0.01)
if not (block.get("topology") == "multi_gpu" and block.get("machines") == 2
        and block.get("gpus_per_node") == 8 and block.get("nodes") == 16
        and "16 workers (multi_gpu)" in done.stdout
        and "between 2 machines; inside each, 8 GPUs on 1920000.00 Mbit/s" in done.stdout):
    failures.append(f"a multi-GPU cluster's title and platform block: {done.stdout[:300]!r} "
                    f"{block} {done.stderr.strip()}")
# A star whose float16 sum the fp16 trainings paid says so, in both.
done, block = platform_block({"topology": "star", "nodes": 4, "float16_sum": "13ns",
                              "link": {"bandwidth": "1Gbps", "latency": "50us"}}, 4, 0.05)
if not (abs(block.get("float16_sum_s", 0) - 13e-9) < 1e-18
        and ", a float16 sum of 13 ns per element" in done.stdout.partition("\n")[0]):
    failures.append(f"a float16 sum in the title and platform block: {done.stdout[:200]!r} "
                    f"{block} {done.stderr.strip()}")
if failures:
    sys.exit("FAIL:\n  " + "\n  ".join(failures))
print("ok")
