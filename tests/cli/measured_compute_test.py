#!/usr/bin/python3
"""Where compute comes from. A device profile's measured layer times
(`model_times`, the H200's) are the compute of a model of that name: exact
at a measured micro-batch, linear between two, said in result.json and the
summary; a spec whose layers the profile did not measure is bad input naming
the profile. A trace with `compute_spec` takes its compute from the profile
with that spec's FLOPs, exactly as the spec itself would; a spec of another
model, or `compute_spec` without a trace, is bad input.

Usage: measured_compute_test.py PATH/TO/gcsim
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks, refusal_problems  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCENARIO = os.path.join(ROOT, "workloads", "scenarios", "dense-resnet50-96x1g.json")
H200 = os.path.join(ROOT, "platforms", "devices", "h200.json")
MODEL = "resnet50-imagenet"

check = Checks()
with open(H200) as handle:
    measured = json.load(handle)["model_times"][MODEL]


def passes(batch):
    """Forward + backward of the whole model at a measured batch."""
    at = measured["batches"].index(batch)
    return sum(layer["forward_s"][at] + layer["backward_s"][at]
               for layer in measured["layers"].values())


def run(work, batch, device=H200, out="out"):
    out = os.path.join(work, out)
    done = subprocess.run([GCSIM, "run", SCENARIO, "--out", out, "--set", f"device={device}",
                           "--set", f"training.batch_per_worker={batch}"],
                          capture_output=True, text=True, timeout=300)
    result = None
    if done.returncode == 0:
        with open(os.path.join(out, "result.json")) as handle:
            result = json.load(handle)
    return done, result


with tempfile.TemporaryDirectory() as work:
    computes = {}
    for batch in (64, 128, 96):
        done, result = run(work, batch, out=f"b{batch}")
        check(done.returncode == 0, f"batch {batch} runs: {done.stderr.strip()}")
        if result is None:
            continue
        computes[batch] = result["summary"]["compute_s"]
        check(result["model"]["compute_times"] == {"source": "device profile",
                                                   "measured_layer_times": True,
                                                   "measured_batches": measured["batches"]},
              f"result.json says the compute is the profile's measured times: "
              f"{result['model']['compute_times']}")
        check("compute times measured on this device for this model" in done.stdout,
              "the summary says so")
    if len(computes) == 3:
        # compute = passes + the optimizer step, which does not depend on the batch.
        optimizer = computes[128] - passes(128)
        check(0 < optimizer < 1e-3, f"a measured batch's compute is its passes + the optimizer: "
                                    f"{optimizer * 1e3:.3f} ms of optimizer")
        check(abs(computes[64] - passes(64) - optimizer) < 1e-9,
              "the same holds at batch 64")
        halfway = (passes(64) + passes(128)) / 2 + optimizer
        check(abs(computes[96] / halfway - 1) < 1e-9,
              f"batch 96 is halfway between 64 and 128: {computes[96]} against {halfway}")

    def profile_variant(name, change):
        """h200.json with `change` made to its model_times, written as `name`."""
        with open(H200) as handle:
            profile = json.load(handle)
        change(profile["model_times"])
        path = os.path.join(work, name)
        with open(path, "w") as handle:
            json.dump(profile, handle)
        return path

    # A spec of the same name with a layer the profile has no times for.
    other = profile_variant("h200-missing-fc.json", lambda times: times[MODEL]["layers"].pop("fc"))
    done, _ = run(work, 32, device=other, out="bad")
    problems = refusal_problems(done, [other, f"/model_times/{MODEL}", "\"fc\""],
                                result_file=os.path.join(work, "bad", "result.json"))
    check(not problems, f"a layer without measured times is exit 2 naming the profile, and "
                        f"writes no result: {problems}")

    # And one with a layer the spec does not have: another architecture.
    extra = profile_variant("h200-extra-fc2.json", lambda times: times[MODEL]["layers"].update(
        fc2=times[MODEL]["layers"]["fc"]))
    done, _ = run(work, 32, device=extra, out="extra")
    problems = refusal_problems(done, [extra, f"/model_times/{MODEL}/layers/fc2",
                                       "another architecture"])
    check(not problems, f"a measured layer the spec lacks is exit 2 naming it: {problems}")

    # A profile whose measured model is spelt otherwise: the FLOP model
    # prices the spec, and the run says which models the profile measured.
    misspelt = profile_variant("h200-misspelt.json", lambda times: times.update(
        {"resnet-50-imagenet": times.pop(MODEL)}))
    done, result = run(work, 64, device=misspelt, out="misspelt")
    listed = (result or {}).get("model", {}).get("compute_times", {})
    check(done.returncode == 0 and "measured_layer_times" not in listed
          and "resnet-50-imagenet" in listed.get("profile_measured_models", [])
          and "compute times from the FLOP model" in done.stdout
          and "resnet-50-imagenet" in done.stdout,
          f"a profile's times under another name are not used, and that is said: {listed} "
          f"{done.stdout[:400]!r}")

    # compute_spec: the shipped CNN trace, its compute from the V100 profile.
    deft = os.path.join(ROOT, "workloads", "scenarios", "deft-fmnist-16.json")
    spec = os.path.join(ROOT, "workloads", "models", "fmnist-cnn.json")

    def run_deft(out, *sets):
        args = [GCSIM, "run", deft, "--out", os.path.join(work, out), "--quiet"]
        for value in sets:
            args += ["--set", value]
        done = subprocess.run(args, capture_output=True, text=True, timeout=300)
        result = None
        if done.returncode == 0:
            with open(os.path.join(work, out, "result.json")) as handle:
                result = json.load(handle)
        return done, result

    _, captured = run_deft("captured")
    _, from_spec = run_deft("from-spec", f"compute_spec={spec}")
    _, spec_alone = run_deft("spec-alone", f"workload={spec}", "compressor={\"name\":\"dense\"}")
    if captured and from_spec and spec_alone:
        check(from_spec["model"]["compute_times"] == {"source": "device profile", "spec": spec},
              f"result.json names the spec: {from_spec['model']['compute_times']}")
        check(from_spec["summary"]["compute_s"] == spec_alone["summary"]["compute_s"],
              "the trace's compute is the spec's own on the same profile: "
              f"{from_spec['summary']['compute_s']} s against {spec_alone['summary']['compute_s']} s")
        check(from_spec["summary"]["compute_s"] < captured["summary"]["compute_s"] / 10,
              "and not the CPU capture's")
        check(from_spec["summary"]["bytes_sent_per_worker"] == captured["summary"]["bytes_sent_per_worker"],
              "the gradients, and so the bytes, are still the trace's")
    else:
        check(False, "the compute_spec runs ran")
    done, _ = run_deft("other-model", "compute_spec=workloads/models/resnet18-cifar10.json")
    check(done.returncode == 2 and "/compute_spec" in done.stderr and "41 layers, the trace 4"
          in done.stderr, f"a spec of another model is exit 2: {done.stderr.strip()!r}")
    # The ResNet-18 traces (the cache trace and its committed statistics) are
    # resnet18-cifar10.json's network: the spec is accepted, and the only
    # complaint left is that a statistics trace has no tensors to compress.
    stats = os.path.join(ROOT, "workloads", "traces", "fmnist-resnet18-stats")
    done, _ = run_deft("resnet18", f"workload={stats}",
                       "compute_spec=workloads/models/resnet18-cifar10.json")
    check(done.returncode == 2 and "/compute_spec" not in done.stderr
          and "/has_tensors" in done.stderr,
          f"resnet18-cifar10.json is the ResNet-18 trace's spec: {done.stderr.strip()!r}")
    done = subprocess.run([GCSIM, "run", SCENARIO, "--out", os.path.join(work, "no-trace"),
                           "--set", f"compute_spec={spec}"], capture_output=True, text=True,
                          timeout=60)
    check(done.returncode == 2 and "/compute_spec: only with a trace workload" in done.stderr,
          f"compute_spec without a trace is exit 2: {done.stderr.strip()!r}")

check.finish()
