#!/usr/bin/python3
"""Bad measured-run files get exit status 2 and one clear line naming the
file and the JSON path; a good one is accepted.

Usage: bad_measured_test.py PATH/TO/gcsim
"""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from checks import refusal_problems  # noqa: E402

GOOD = {
    "format": "gcsim-measured-run/1",
    "name": "tiny",
    "cluster": {"topology": "star", "nodes": 2,
                "link": {"bandwidth": "100Mbps", "latency": "50us"}, "shared_cores": 2},
    "collectives": [
        {"collective": "allreduce", "algorithm": "ring", "ranks": 2, "bytes": 1048576,
         "seconds": 0.09, "repetitions": 3},
        {"collective": "broadcast", "ranks": 2, "bytes": 65536, "seconds": 0.006},
    ],
    "training": [
        {"name": "dense", "compressor": {"name": "dense"}, "ranks": 2,
         "workload": {"model": "m", "batch_per_worker": 8,
                      "layers": [{"name": "w", "bytes": 4000}, {"name": "b", "bytes": 40}]},
         "warmup_iterations": 1,
         "compute_alone": {"forward_s": 0.003, "backward_s": 0.005, "optimizer_s": 0.001},
         "iterations": [{"iteration_s": 0.02, "compute_s": 0.01, "optimizer_s": 0.001, "wait_s": 0.002},
                        {"iteration_s": 0.02, "compute_s": 0.01, "optimizer_s": 0.001}]},
    ],
}


def variant(edit):
    document = copy.deepcopy(GOOD)
    edit(document)
    return document


CASES = [
    ("missing format", lambda d: d.pop("format"), "/format", "not a measured run"),
    ("missing cluster", lambda d: d.pop("cluster"), "/cluster"),
    ("missing seconds", lambda d: d["collectives"][0].pop("seconds"), "/collectives/0/seconds"),
    ("negative seconds", lambda d: d["collectives"][0].update(seconds=-1.0), "/collectives/0/seconds"),
    # The repetitions' own times: not simulated, but read by the scripts.
    ("negative sample", lambda d: d["collectives"][0].update(samples_s=[0.09, -0.1, 0.09]),
     "/collectives/0/samples_s/1"),
    ("samples not one per repetition", lambda d: d["collectives"][0].update(samples_s=[0.09]),
     "/collectives/0/samples_s", "1 samples for 3 repetitions"),
    # Past 1e9 s (about 30 years), as every other time an input gives.
    ("collective past any run", lambda d: d["collectives"][0].update(seconds=1e300),
     "/collectives/0/seconds"),
    ("iteration past any run",
     lambda d: d["training"][0]["iterations"][1].update(iteration_s=2e9),
     "/training/0/iterations/1/iteration_s"),
    # Each figure within its bounds, a simulated iteration longer than any
    # run (2^49 bytes at 1 kbps): refused as `gcsim run` refuses it.
    ("simulated iteration past any run",
     lambda d: (d["cluster"]["link"].update(bandwidth="1kbps"),
                d["training"][0]["workload"]["layers"][0].update(bytes=2 ** 49)),
     "/cluster", "an iteration takes"),
    ("simulated collective past any run",
     lambda d: (d["cluster"]["link"].update(bandwidth="1kbps"),
                d["collectives"][0].update(bytes=2 ** 49)),
     "/cluster", "collective point 0 (allreduce of 562949953421312 bytes on 2 ranks) takes"),
    ("negative iteration time",
     lambda d: d["training"][0]["iterations"][1].update(iteration_s=-0.5),
     "/training/0/iterations/1/iteration_s"),
    ("negative compute time",
     lambda d: d["training"][0]["iterations"][0].update(compute_s=-0.5),
     "/training/0/iterations/0/compute_s"),
    ("unknown compressor",
     lambda d: d["training"][0].update(compressor={"name": "topkk", "density": 0.01}),
     "/training/0/compressor/name"),
    ("compressor without density",
     lambda d: d["training"][0].update(compressor={"name": "topk"}),
     "/training/0/compressor/density"),
    # DDP's hooks take gcsim's parameters of their compressor, checked as a scenario's.
    ("fp16 with a density",
     lambda d: d["training"][0].update(compressor={"name": "fp16", "density": 0.01}),
     "/training/0/compressor/density"),
    ("powersgd at rank 0",
     lambda d: d["training"][0].update(compressor={"name": "powersgd", "rank": 0}),
     "/training/0/compressor", "rank"),
    ("a layer's shape in one layer only",
     lambda d: d["training"][0]["workload"]["layers"][0].update(shape=[10, 100]),
     "/training/0/workload/layers/1/shape"),
    ("a shape that is not the layer's bytes",
     lambda d: [layer.update(shape=shape) for layer, shape
                in zip(d["training"][0]["workload"]["layers"], ([10, 100], [11]))],
     "/training/0/workload/layers/1/shape", "11 elements"),
    ("a shape with a zero",
     lambda d: [layer.update(shape=[0, 10]) for layer in d["training"][0]["workload"]["layers"]],
     "/training/0/workload/layers/0/shape/0"),
    ("unknown collective", lambda d: d["collectives"][0].update(collective="alltoall"),
     "/collectives/0/collective"),
    ("more ranks than nodes", lambda d: d["collectives"][0].update(ranks=3), "/collectives/0/ranks"),
    ("missing layers", lambda d: d["training"][0]["workload"].pop("layers"), "/training/0/workload/layers"),
    ("a layer's backward time in one layer only",
     lambda d: d["training"][0]["workload"]["layers"][0].update(backward_s=0.004),
     "/training/0/workload/layers/1/backward_s"),
    ("a negative layer backward time",
     lambda d: [layer.update(backward_s=-0.001) for layer in d["training"][0]["workload"]["layers"]],
     "/training/0/workload/layers/0/backward_s"),
    ("layer backward times of no time",
     lambda d: [layer.update(backward_s=0) for layer in d["training"][0]["workload"]["layers"]],
     "/training/0/workload/layers"),
    ("typo in a field", lambda d: d["collectives"][0].update(repetitons=3), "/collectives/0/repetitons"),
    ("empty iterations", lambda d: d["training"][0].update(iterations=[]), "/training/0/iterations"),
    ("bad bandwidth", lambda d: d["cluster"]["link"].update(bandwidth="-1Gbps"), "/cluster/link/bandwidth"),
    ("negative bytes sent", lambda d: d["training"][0].update(bytes_sent_per_worker=-8),
     "/training/0/bytes_sent_per_worker"),
    ("bytes sent past 2^53", lambda d: d["training"][0].update(bytes_sent_per_worker=2.0 ** 60),
     "/training/0/bytes_sent_per_worker"),
    ("negative compute alone",
     lambda d: d["training"][0].update(compute_alone={"forward_s": -1e-3, "backward_s": 1e-3,
                                                      "optimizer_s": 0}),
     "/training/0/compute_alone/forward_s"),
    ("compute alone without backward",
     lambda d: d["training"][0].update(compute_alone={"forward_s": 1e-3, "optimizer_s": 0}),
     "/training/0/compute_alone/backward_s"),
    # Each time within its bounds, the compute alone past any run: the
    # run's times are named, not the platform.
    ("compute alone past any run",
     lambda d: d["training"][0].update(compute_alone={"forward_s": 6e8, "backward_s": 6e8,
                                                      "optimizer_s": 0}),
     "/training/0/compute_alone"),
    ("compute alone past any run once shared",
     lambda d: [d["cluster"].update(shared_cores=1), d["training"][0].update(
         compute_alone={"forward_s": 3e8, "backward_s": 3e8, "optimizer_s": 0})],
     "/training/0/compute_alone"),
    ("in-run compute past any run",
     lambda d: [d["cluster"].pop("shared_cores"), d["training"][0].pop("compute_alone")] + [
         i.update(iteration_s=1e9, forward_s=6e8, backward_s=6e8, compute_s=1e9)
         for i in d["training"][0]["iterations"]],
     "/training/0/iterations"),
    # In-run times on shared cores hold the sharing the simulation adds.
    ("shared cores without compute alone",
     lambda d: d["training"][0].pop("compute_alone"), "/training/0/compute_alone"),
    ("compression timed in a dense run",
     lambda d: d["training"][0]["compute_alone"].update(compression_s=1e-4),
     "/training/0/compute_alone/compression_s"),
    ("negative compression alone",
     lambda d: d["training"][0].update(compressor={"name": "topk", "density": 0.01},
                                       compute_alone={"forward_s": 1e-3, "backward_s": 1e-3,
                                                      "optimizer_s": 0, "compression_s": -1e-4}),
     "/training/0/compute_alone/compression_s"),
    # Fields gcsim does not use took any value.
    ("a wall time that is text", lambda d: d.update(wall_s="x"), "/wall_s",
     'expected a number, got string "x"'),
    ("a workload model that is a number", lambda d: d["training"][0].update(
        workload={**d["training"][0].get("workload", {}), "model": 5}),
     "/training/0/workload/model", "expected a string, got number 5"),
    ("zero shared cores", lambda d: d["cluster"].update(shared_cores=0), "/cluster/shared_cores"),
    ("shared cores on a ring",
     lambda d: d["cluster"].update(topology="ring", shared_cores=2), "/cluster/shared_cores"),
    # NCCL's tree is an allreduce algorithm only.
    ("a tree allgather", lambda d: d["collectives"][0].update(collective="allgather", algorithm="tree"),
     "/collectives/0/algorithm"),
    ("a binomial-tree allreduce", lambda d: d["collectives"][0].update(algorithm="binomial_tree"),
     "/collectives/0/algorithm"),
    ("an unknown broadcast algorithm", lambda d: d["collectives"][1].update(algorithm="scatter"),
     "/collectives/1/algorithm"),
    ("a ring broadcast's zero chunk",
     lambda d: d["collectives"][1].update(algorithm="ring", chunk_bytes=0),
     "/collectives/1/chunk_bytes"),
    ("a chunk for a tree broadcast", lambda d: d["collectives"][1].update(chunk_bytes=4096),
     "/collectives/1/chunk_bytes"),
    # Types: float32 (the default) and float16, whose sums are modelled for
    # the ring allreduce only.
    ("an unknown dtype", lambda d: d["collectives"][0].update(dtype="float64"),
     "/collectives/0/dtype", "float64"),
    ("a float16 broadcast", lambda d: d["collectives"][1].update(dtype="float16"),
     "/collectives/1/dtype", "ring allreduce only"),
    ("a float16 tree allreduce",
     lambda d: d["collectives"][0].update(dtype="float16", algorithm="tree"),
     "/collectives/0/dtype", "ring allreduce only"),
    ("float16 of an odd size", lambda d: d["collectives"][0].update(dtype="float16", bytes=1001),
     "/collectives/0/bytes", "2-byte float16"),
    # A float16 sum that makes a float16 point endless names the sum, not
    # the links (it named /cluster and said to check the links).
    ("a float16 sum of 1e9 s",
     lambda d: (d["cluster"].update(float16_sum="1e9s"),
                d["collectives"].append(dict(d["collectives"][0], dtype="float16"))),
     "/cluster/float16_sum", "collective point 2 (allreduce/float16 of 1048576 bytes",
     "check the float16 sum"),
    ("density above one",
     lambda d: d["training"][0].update(compressor={"name": "topk", "density": 1.5}),
     "/training/0/compressor/density"),
    # A warm-up as long as the run leaves nothing to compare.
    ("warm-up of every iteration", lambda d: d["training"][0].update(warmup_iterations=2),
     "/training/0/warmup_iterations", "leaves no iteration"),
    ("training on part of the cluster", lambda d: d["training"][0].update(ranks=1),
     "/training/0/ranks", "expected 2 ranks"),
    ("a collective of no time", lambda d: d["collectives"][0].update(seconds=0),
     "/collectives/0/seconds", "expected a time in seconds in [1e-12, 1e9], got number 0"),
    ("an iteration of no time", lambda d: d["training"][0]["iterations"][0].update(iteration_s=0),
     "/training/0/iterations/0/iteration_s",
     "expected a time in seconds in [1e-12, 1e9], got number 0"),
    # A negative one said "[0, 1e9]", though 0 is refused too.
    ("a collective of negative time", lambda d: d["collectives"][0].update(seconds=-1),
     "/collectives/0/seconds", "expected a time in seconds in [1e-12, 1e9], got number -1"),
    # A subnormal one made every relative error infinite (printed +inf%).
    ("a collective of 1e-320 s", lambda d: d["collectives"][0].update(seconds=1e-320),
     "/collectives/0/seconds", "expected a time in seconds in [1e-12, 1e9], got number 1e-320"),
    ("an iteration's phase of 1e-320 s",
     lambda d: d["training"][0]["iterations"][0].update(communication_s=1e-320),
     "/training/0/iterations/0/communication_s",
     "expected a time in seconds, 0 or in [1e-12, 1e9], got number 1e-320"),
]

failures = []


def report(label, problems, done, tmp):
    """Counts a case's problems as a failure, else prints its message."""
    if problems:
        failures.append(f"{label}: {'; '.join(problems)}")
    else:
        print(f"ok  {label}: {done.stderr.strip().replace(tmp + '/', '')}")


with tempfile.TemporaryDirectory() as tmp:
    good = os.path.join(tmp, "good.json")
    with open(good, "w") as f:
        json.dump(GOOD, f)
    out = os.path.join(tmp, "cmp.json")
    done = subprocess.run([GCSIM, "validate", good, "--json", out], capture_output=True, text=True)
    if done.returncode != 0 or not os.path.exists(out):
        failures.append(f"good file: status {done.returncode}: {done.stderr.strip()}")
    # (label, edit, JSON path[, words the message must hold])
    for label, edit, path, *words in CASES:
        file = os.path.join(tmp, label.replace(" ", "_") + ".json")
        with open(file, "w") as f:
            json.dump(variant(edit), f)
        done = subprocess.run([GCSIM, "validate", file, "--quiet"], capture_output=True, text=True,
                              timeout=120)
        report(label, refusal_problems(done, [f"{file}: {path}:", *words]), done, tmp)
    # A benchmark's own output, given as it came, was only "malformed JSON".
    raw_log = os.path.join(tmp, "all_reduce_perf.log")
    with open(raw_log, "w") as f:
        f.write("# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5\n")
    done = subprocess.run([GCSIM, "validate", raw_log], capture_output=True, text=True)
    report("a benchmark log given as it came",
           refusal_problems(done, [raw_log + ": malformed JSON", "scripts/import_benchmarks.py"]),
           done, tmp)
    # --fit without enough ring points is bad input too.
    fit_file = os.path.join(tmp, "one_point.json")
    with open(fit_file, "w") as f:
        json.dump(variant(lambda d: d.update(collectives=d["collectives"][:1])), f)
    done = subprocess.run([GCSIM, "validate", fit_file, "--fit"], capture_output=True, text=True)
    if done.returncode != 2 or len(done.stderr.strip().splitlines()) != 1:
        failures.append(f"--fit on one point: status {done.returncode}: {done.stderr.strip()}")
    # A fit to collectives of years makes a training iteration past 1e9 s:
    # refused, and the calibrated platform --out names is not written.
    slow_fit = os.path.join(tmp, "slow_fit.json")
    with open(slow_fit, "w") as f:
        json.dump(variant(lambda d: (
            d["collectives"][0].update(seconds=3e8),
            d["collectives"].append({"collective": "allgather", "algorithm": "ring", "ranks": 2,
                                     "bytes": 4194304, "seconds": 9e8}),
            d["training"][0]["workload"]["layers"][0].update(bytes=2 ** 40))), f)
    calibrated = os.path.join(tmp, "calibrated.json")
    done = subprocess.run([GCSIM, "validate", slow_fit, "--fit", "--out", calibrated],
                          capture_output=True, text=True, timeout=120)
    report("--fit to years-long collectives",
           refusal_problems(done, [f"{slow_fit}: /collectives:", "1e9 s"], 2, calibrated), done,
           tmp)
    # Outputs onto the measured file, the device profile or each other were
    # written over; a hard link is the same file under another name.
    before = open(good).read()
    device = os.path.join(tmp, "device.json")
    shutil.copy(os.path.join(ROOT, "platforms", "devices", "cpu-amd-epyc-zen4.json"), device)
    device_before = open(device).read()
    linked = os.path.join(tmp, "linked.json")
    os.link(good, linked)
    for label, args, needle in [
            ("--out onto the measured file", ["--fit", "--out", good], "--out:"),
            ("--out onto a hard link of it", ["--fit", "--out", linked], "--out:"),
            ("--json onto --device", ["--device", device, "--json", device], "--json:"),
            ("--json onto --out", ["--fit", "--out", calibrated, "--json", calibrated],
             "--json:")]:
        done = subprocess.run([GCSIM, "validate", good] + args, capture_output=True, text=True,
                              timeout=120)
        problems = refusal_problems(done, [needle, "is also"], 2, calibrated)
        if open(good).read() != before:
            problems.append("the measured file changed")
        if open(device).read() != device_before:
            problems.append("the device profile changed")
        report(label, problems, done, tmp)

    # An empty path was taken as no option: the measured cluster, the
    # default trace and device.
    for option in ("--scenario", "--platform", "--trace", "--device"):
        done = subprocess.run([GCSIM, "validate", good, option, ""], capture_output=True,
                              text=True, timeout=120)
        report(f"empty {option}", refusal_problems(done, [f"{option}: empty"]), done, tmp)
    # The platform comes from one place; --out is the fit's calibrated platform.
    for label, args, needle in [
            ("--fit with --platform", ["--fit", "--platform", good], "--fit: choose one of"),
            ("--platform with --scenario", ["--platform", good, "--scenario", good],
             "--platform: choose one of"),
            ("--out without --fit", ["--out", calibrated], "--out: writes the calibrated")]:
        done = subprocess.run([GCSIM, "validate", good] + args, capture_output=True, text=True,
                              timeout=120)
        report(label, refusal_problems(done, [needle], 2, calibrated), done, tmp)
    # A file an option names that cannot be read was reported by its path
    # alone; the message now says which option named it. The compressed run
    # is what reads --trace and --device.
    compressed = os.path.join(tmp, "compressed.json")
    with open(compressed, "w") as f:
        json.dump(variant(lambda d: d["training"][0].update(
            compressor={"name": "topk", "density": 0.01})), f)
    missing = os.path.join(tmp, "missing.json")
    for option, value, needle in [("--platform", missing, "file not found"),
                                  ("--platform", good, "/topology: required field is missing"),
                                  ("--device", missing, "file not found"),
                                  ("--trace", tmp, "not a trace folder: it holds no "
                                                   "manifest.json")]:
        done = subprocess.run([GCSIM, "validate", compressed, option, value], capture_output=True,
                              text=True, timeout=120)
        report(f"unreadable {option}", refusal_problems(done, [f"{option}: {value}", needle]),
               done, tmp)
    # --scenario's own inputs (its workload here) were not guarded.
    workload = os.path.join(tmp, "workload.json")
    shutil.copy(os.path.join(ROOT, "workloads", "models", "fmnist-cnn.json"), workload)
    workload_before = open(workload).read()
    with open(os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")) as f:
        document = json.load(f)
    document.update(workload=workload, device=os.path.join(ROOT, document["device"]),
                    platform=os.path.join(ROOT, document["platform"]))
    scenario = os.path.join(tmp, "scenario.json")
    with open(scenario, "w") as f:
        json.dump(document, f)
    done = subprocess.run([GCSIM, "validate", good, "--scenario", scenario, "--json", workload],
                          capture_output=True, text=True, timeout=120)
    problems = refusal_problems(done, ["--json:", "is also the scenario's workload"])
    if open(workload).read() != workload_before:
        problems.append("the scenario's workload changed")
    report("--json onto --scenario's workload", problems, done, tmp)

for failure in failures:
    print("FAIL", failure)
sys.exit(1 if failures else 0)
