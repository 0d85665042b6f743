#!/usr/bin/python3
"""The derived GPU profiles that ship (platforms/devices/{gtx1080ti,v100,a100,
h100}.json) are what scripts/calibrate/derive_gpu_profiles.py makes from its
published figures today, value for value: a figure changed in the script
without rerunning it, or a profile edited by hand, fails here. Built in this
process; nothing is written.

Usage: derived_profiles_test.py
"""
import json
import os
import sys

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
check.finish()
