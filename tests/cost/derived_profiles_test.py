#!/usr/bin/python3
"""The derived GPU profiles that ship (platforms/devices/{gtx1080ti,v100,a100,
h100}.json) are what scripts/calibrate/derive_gpu_profiles.py makes from its
published figures today, value for value: a figure changed in the script
without rerunning it, or a profile edited by hand, fails here. Built in this
process; nothing is written. Then gcsim itself, on the V100 profile, must
time ResNet-18's passes at batch 256 as kljp's logs do (29.0 and 68.5 ms),
every layer priced with its latency and its kind's efficiency, and a small
CNN's passes must cost at least the layer latency a layer.

Usage: derived_profiles_test.py GCSIM
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.path.insert(0, os.path.join(ROOT, "scripts", "calibrate"))
from checks import Checks  # noqa: E402
import derive_gpu_profiles  # noqa: E402

check = Checks()
check(sorted(derive_gpu_profiles.GPUS) == ["a100", "gtx1080ti", "h100", "v100"],
      f"the script derives the four GPUs: {sorted(derive_gpu_profiles.GPUS)}")
for key, gpu in derive_gpu_profiles.GPUS.items():
    path = os.path.join(ROOT, "platforms", "devices", key + ".json")
    with open(path) as f:
        shipped = json.load(f)
    # Through JSON, as the script writes it, so that tuples and lists compare alike.
    made = json.loads(json.dumps(derive_gpu_profiles.build(key, gpu, None)))
    differing = sorted(k for k in set(made) | set(shipped) if made.get(k) != shipped.get(k))
    check(not differing, f"{os.path.relpath(path, ROOT)} is the script's"
          + (f" (differs in {differing}: rerun scripts/calibrate/derive_gpu_profiles.py)"
             if differing else ""))

GCSIM = os.path.abspath(sys.argv[1])
QUICKSTART = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")


def passes_ms(work, *sets):
    """Forward and backward time of one worker's first iteration, from the timeline."""
    timeline = os.path.join(work, "timeline.json")
    run = subprocess.run([GCSIM, "run", QUICKSTART, "--out", os.path.join(work, "out"), "--quiet",
                          "--timeline", timeline, "--set", "training.iterations=1",
                          "--set", "platform.nodes=2", *[a for s in sets for a in ("--set", s)]],
                         capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        return None, run.stderr
    with open(timeline) as f:
        events = json.load(f)["traceEvents"]
    computed = [e for e in events if e.get("ph") == "X" and e.get("cat") == "compute"]
    worker = min((e["pid"], e["tid"]) for e in computed)
    mine = [e for e in computed if (e["pid"], e["tid"]) == worker]
    return {name: sum(e["dur"] for e in mine if e["name"] == name) / 1e3 for name in ("forward", "backward")}, ""


with tempfile.TemporaryDirectory() as work:
    resnet18, error = passes_ms(work, "training.batch_per_worker=256")
    check(resnet18 is not None and abs(resnet18["forward"] - 29.0) < 29.0e-5
          and abs(resnet18["backward"] - 68.5) < 68.5e-5,
          f"the V100's ResNet-18 passes at batch 256 are kljp's 29.0 and 68.5 ms: {resnet18 or error}")
    with open(os.path.join(ROOT, "workloads", "models", "fmnist-cnn.json")) as f:
        cnn_layers = len(json.load(f)["layers"])
    latency_ms = derive_gpu_profiles.h200_layer_latency()[0] * 1e3
    cnn, error = passes_ms(work, "workload=workloads/models/fmnist-cnn.json", "training.batch_per_worker=32")
    check(cnn is not None and cnn_layers * latency_ms <= cnn["forward"] < 1.2 * cnn_layers * latency_ms,
          f"the {cnn_layers}-layer CNN's forward pass at batch 32 is its layers' latency and a little: "
          f"{cnn or error}, {latency_ms} ms a layer")
check.finish()
