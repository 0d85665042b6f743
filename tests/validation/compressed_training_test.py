#!/usr/bin/python3
"""The simulated side of compressed training in `gcsim validate`.

From the shipped measured run results/validation/minicluster-p4-100mbit.json
(its training runs only, a few iterations each) it checks that topk, cltk and
deft are simulated through the real compressors on the fmnist-cnn trace and
that their simulated times respond to what they should:
  - the ranks share the machine's 2 cores (`shared_cores`), so the four
    ranks' simulated compute is twice their measured `compute_alone`, and
    without `shared_cores` it is the measured in-run forward + backward +
    optimizer;
  - every compressed run has kernels (compression_s > 0) and sends bytes;
  - a lower density sends fewer bytes and communicates for less time;
  - a slower link makes communication longer, and compute stays the same;
  - top-k's bytes are what its wire format says: k (value, index) pairs of
    8 bytes, allgathered over a ring: 8 k (P - 1) per worker;
  - a measured `compute_alone.compression_s` replaces the device profile's
    price of the kernels: top-k's simulated compression (every rank selects
    at once on the 2 shared cores) is one to two times it and doubles with
    it, and the iteration grows; with a processor per rank the in-run
    compression mean does, and each compressor's simulated compression is
    exactly the measured one;
DDP's hooks, as worker.py's fp16 and powersgd runs write them (the layers
with their shapes): fp16 sends half of dense's bytes; PowerSGD at rank 1,
after its start_iteration, sends what the hook allreduces (the biases
whole, rows + cols a matrix: 4596 of the CNN's 119,976 bytes) and more at
rank 2. And that a compressed run whose layers, or layer shapes, are not the
trace's is bad input (exit status 2, one line naming the file and
/training/i/workload/layers, or .../layers/l/shape).

Usage: compressed_training_test.py PATH/TO/gcsim
"""
import copy
import json
import math
import os
import subprocess
import sys
import tempfile

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHIPPED = os.path.join(ROOT, "results", "validation", "minicluster-p4-100mbit.json")

sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.path.insert(0, os.path.join(ROOT, "scripts", "minicluster"))
from checks import Checks  # noqa: E402
from worker import models  # noqa: E402

check = Checks()


def small_run():
    with open(SHIPPED) as f:
        run = json.load(f)
    run["name"] = "small"
    run["collectives"] = []
    for t in run["training"]:
        t["iterations"] = t["iterations"][:8]
        t["warmup_iterations"] = 2
    return run


def validate(tmp, run, label):
    path = os.path.join(tmp, label + ".json")
    out = os.path.join(tmp, label + "-report.json")
    with open(path, "w") as f:
        json.dump(run, f)
    done = subprocess.run([GCSIM, "validate", path, "--json", out, "--quiet"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL {label}: status {done.returncode}: {done.stderr.strip()}")
    with open(out) as f:
        report = json.load(f)
    return {t["name"]: t for t in report["training"]}, report


def with_density(run, density):
    run = copy.deepcopy(run)
    for t in run["training"]:
        if t["compressor"]["name"] != "dense":
            t["compressor"]["density"] = density
    return run


with tempfile.TemporaryDirectory() as tmp:
    base = small_run()
    reference, report = validate(tmp, base, "reference")
    check(set(reference) == {"dense", "topk", "cltk", "deft"},
          f"all four runs simulated: {sorted(reference)}")
    check(report["summary"]["training_compressed_iteration"]["points"] == 3,
          "the summary counts three compressed iterations")
    check(base["cluster"].get("shared_cores") == 2 and base["cluster"]["nodes"] == 4,
          "the shipped run is 4 ranks on 2 shared cores")
    alone = {t["name"]: t["compute_alone"] for t in base["training"]}
    for name, t in reference.items():
        m, s = t["measured"], t["simulated"]
        one_core = alone[name]["forward_s"] + alone[name]["backward_s"] + alone[name]["optimizer_s"]
        check(abs(s["compute_s"] - 2 * one_core) <= 1e-6 * one_core,
              f"{name}: simulated compute {s['compute_s']:.6f} s is twice the one-core "
              f"{one_core:.6f} s (4 ranks, 2 cores)")
        check(abs(s["iteration_s"] - s["compute_s"] - s["compression_s"] - s["communication_s"])
              <= 1e-9 * s["iteration_s"], f"{name}: the simulated phases add up to the iteration")
        if name == "dense":
            continue
        check(s["compression_s"] > 0, f"{name}: the compressor's kernels take time "
                                      f"({s['compression_s'] * 1e6:.1f} us)")
        check(s["bytes_sent_per_worker"] > 0, f"{name}: sends {s['bytes_sent_per_worker']:.0f} B")
        check("relative_error" in t and "iteration_s" in t["relative_error"],
              f"{name}: has relative errors")
    d = sum(layer["bytes"] for layer in base["training"][1]["workload"]["layers"]) // 4
    k = int(0.01 * d)  # compressors/: k = floor(density d)
    topk_bytes = reference["topk"]["simulated"]["bytes_sent_per_worker"]
    check(topk_bytes == 8 * k * 3, f"topk sends 8 k (P - 1) = {8 * k * 3} B per worker: {topk_bytes:.0f}")

    def with_compression_alone(seconds):
        run = copy.deepcopy(base)
        for t in run["training"]:
            if t["compressor"]["name"] != "dense":
                t["compute_alone"]["compression_s"] = seconds
        return run

    timed, _ = validate(tmp, with_compression_alone(4e-4), "compression-alone")
    timed2, _ = validate(tmp, with_compression_alone(8e-4), "compression-alone-2")
    priced = reference["topk"]["simulated"]["compression_s"]
    once, twice = timed["topk"]["simulated"], timed2["topk"]["simulated"]
    check(4e-4 * (1 - 1e-6) <= once["compression_s"] <= 8e-4 * (1 + 1e-6)
          and abs(once["compression_s"] - priced) > 1e-5,
          f"topk: 0.4 ms of measured selection alone simulated as "
          f"{once['compression_s'] * 1e3:.3f} ms on shared cores (priced: {priced * 1e3:.3f} ms)")
    check(abs(twice["compression_s"] / once["compression_s"] - 2) < 0.01,
          f"topk: twice the measured selection, twice the simulated: "
          f"{twice['compression_s'] / once['compression_s']:.4f}")
    for name in ("topk", "cltk", "deft"):
        check(timed2[name]["simulated"]["iteration_s"] > timed[name]["simulated"]["iteration_s"]
              > reference[name]["simulated"]["iteration_s"],
              f"{name}: a costlier measured selection makes the iteration longer")
    check(timed["dense"]["simulated"] == reference["dense"]["simulated"],
          "dense: no compressor, nothing changes")
    check(reference["topk"]["inputs"] == {"compute": "compute_alone, on the platform's shared cores",
                                          "compression_kernels": "priced by the device profile"}
          and timed["topk"]["inputs"]["compression_kernels"] == "scaled to compute_alone.compression_s"
          and "compression_kernels" not in timed["dense"]["inputs"],
          f"each run's report says what its simulation took: {reference['topk']['inputs']}, "
          f"{timed['topk']['inputs']}")

    own_cores = copy.deepcopy(base)
    own_cores["cluster"].pop("shared_cores")
    unshared, _ = validate(tmp, own_cores, "own-cores")
    check(unshared["topk"]["inputs"] == {"compute": "the in-run forward, backward and optimizer means",
                                         "compression_kernels": "scaled to the in-run compression_s mean"},
          f"a core per rank: the report names the in-run means as the inputs: {unshared['topk']['inputs']}")
    for name in ("topk", "cltk", "deft"):
        m, s = unshared[name]["measured"], unshared[name]["simulated"]
        check(abs(s["compression_s"] - m["compression_s"]) <= 1e-9 * m["compression_s"],
              f"{name}, a core per rank: simulated compression {s['compression_s'] * 1e6:.2f} us is "
              f"the measured in-run {m['compression_s'] * 1e6:.2f} us")
    for name, t in unshared.items():
        m, s = t["measured"], t["simulated"]
        compute = m["compute_s"] + m["optimizer_s"]
        check(abs(s["compute_s"] - compute) <= 1e-9 * compute,
              f"{name}, a core per rank: simulated compute {s['compute_s']:.6f} s is the "
              f"measured {compute:.6f} s")

    sparse, _ = validate(tmp, with_density(base, 0.001), "sparse")
    denser, _ = validate(tmp, with_density(base, 0.1), "denser")
    for name in ("topk", "cltk", "deft"):
        low, mid, high = (r[name]["simulated"] for r in (sparse, reference, denser))
        check(low["bytes_sent_per_worker"] < mid["bytes_sent_per_worker"]
              < high["bytes_sent_per_worker"],
              f"{name}: bytes grow with density: {low['bytes_sent_per_worker']:.0f} < "
              f"{mid['bytes_sent_per_worker']:.0f} < {high['bytes_sent_per_worker']:.0f}")
        check(low["communication_s"] < mid["communication_s"] < high["communication_s"],
              f"{name}: communication grows with density: {low['communication_s'] * 1e3:.3f} < "
              f"{mid['communication_s'] * 1e3:.3f} < {high['communication_s'] * 1e3:.3f} ms")

    slow_run = copy.deepcopy(base)
    slow_run["cluster"]["link"]["bandwidth"] = "10Mbps"
    slow, _ = validate(tmp, slow_run, "slow")
    for name in ("dense", "topk", "cltk", "deft"):
        fast_s, slow_s = reference[name]["simulated"], slow[name]["simulated"]
        check(slow_s["communication_s"] > fast_s["communication_s"]
              and abs(slow_s["compute_s"] - fast_s["compute_s"]) <= 1e-9 * fast_s["compute_s"],
              f"{name}: 10 Mbit/s communicates longer ({slow_s['communication_s'] * 1e3:.2f} ms "
              f"vs {fast_s['communication_s'] * 1e3:.2f} ms), same compute")

    # DDP's hooks: the dense run's times under fp16 and powersgd, the layers
    # with the shapes worker.py writes.
    shapes = [list(p.shape) for p in models.SmallCNN().parameters()]
    hooks = copy.deepcopy(base)
    dense_run = next(t for t in hooks["training"] if t["name"] == "dense")
    for layer, shape in zip(dense_run["workload"]["layers"], shapes):
        layer["shape"] = shape
    hooks["training"] = []
    for name, compressor in (("dense", {"name": "dense"}), ("fp16", {"name": "fp16"}),
                             ("powersgd", {"name": "powersgd", "rank": 1, "start_iteration": 2}),
                             ("powersgd-r2", {"name": "powersgd", "rank": 2,
                                              "start_iteration": 2})):
        hooks["training"].append(dict(copy.deepcopy(dense_run), name=name, compressor=compressor))
    hooked, _ = validate(tmp, hooks, "hooks")
    sent = {name: t["simulated"]["bytes_sent_per_worker"] for name, t in hooked.items()}
    check(sent["fp16"] == sent["dense"] / 2,
          f"fp16 sends half of dense's bytes: {sent['fp16']:.0f} of {sent['dense']:.0f}")
    low_rank = sum(4 * ((s[0] + math.prod(s[1:])) if len(s) > 1 else s[0]) for s in shapes)
    dense_bytes = sum(4 * math.prod(s) for s in shapes)
    check(low_rank == 4596
          and abs(sent["powersgd"] / sent["dense"] - low_rank / dense_bytes) < 1e-9,
          f"powersgd at rank 1 sends {low_rank} of {dense_bytes} bytes a step, as the hook: "
          f"{sent['powersgd']:.0f} of dense's {sent['dense']:.0f} B")
    check(sent["powersgd"] < sent["powersgd-r2"] < sent["dense"],
          f"powersgd at rank 2 sends more than at rank 1, less than dense: "
          f"{sent['powersgd-r2']:.0f}")
    check(all(hooked[name]["simulated"]["compression_s"] > 0 for name in ("fp16", "powersgd")),
          "fp16 and powersgd have kernels")
    transposed = copy.deepcopy(hooks)
    transposed["training"][2]["workload"]["layers"][6]["shape"] = [32, 10]
    path = os.path.join(tmp, "wrong_shapes.json")
    with open(path, "w") as f:
        json.dump(transposed, f)
    done = subprocess.run([GCSIM, "validate", path, "--quiet"], capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    check(done.returncode == 2 and len(lines) == 1
          and "/training/2/workload/layers/6/shape: [32,10] is not the shape of" in lines[0],
          f"layer shapes unlike the trace's: status {done.returncode}, {lines}")

    wrong = copy.deepcopy(base)
    wrong["training"][2]["workload"]["layers"] = [{"name": "w", "bytes": 4000}]
    path = os.path.join(tmp, "wrong_layers.json")
    with open(path, "w") as f:
        json.dump(wrong, f)
    done = subprocess.run([GCSIM, "validate", path, "--quiet"], capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    check(done.returncode == 2 and len(lines) == 1 and path in lines[0]
          and "/training/2/workload/layers" in lines[0],
          f"layers unlike the trace's: status {done.returncode}, {lines}")

check.finish()
